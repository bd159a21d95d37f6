import pytest

from strutils import wrap


def test_short_text_is_one_line():
    assert wrap("hello world", 40) == ["hello world"]


def test_breaks_between_words():
    assert wrap("aaa bbb ccc", 8) == ["aaa bbb", "ccc"]


def test_long_word_gets_own_line():
    assert wrap("a abcdefghij b", 5) == ["a", "abcdefghij", "b"]


def test_empty_text():
    assert wrap("", 10) == []


def test_bad_width():
    with pytest.raises(ValueError):
        wrap("x", 0)


def test_line_of_exact_width():
    assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]


def test_every_line_fills_width():
    assert wrap("ab cd ef gh", 5) == ["ab cd", "ef gh"]
