import pytest

from iniconf import parse


def test_true_and_false():
    cfg = parse("[f]\na = true\nb = false")
    assert cfg.getbool("f", "a") is True
    assert cfg.getbool("f", "b") is False


def test_missing_bool_default():
    assert parse("[f]").getbool("f", "x", default=True) is True


def test_yes_and_no():
    cfg = parse("[f]\na = yes\nb = no")
    assert cfg.getbool("f", "a") is True
    assert cfg.getbool("f", "b") is False


def test_on_off_and_digits():
    cfg = parse("[f]\na = on\nb = off\nc = 1\nd = 0")
    assert [cfg.getbool("f", k) for k in "abcd"] == [True, False, True, False]


def test_case_insensitive():
    assert parse("[f]\na = TRUE\nb = No").getbool("f", "a") is True
    assert parse("[f]\na = TRUE\nb = No").getbool("f", "b") is False


def test_not_a_boolean():
    with pytest.raises(ValueError):
        parse("[f]\na = maybe").getbool("f", "a")
