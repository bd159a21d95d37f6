import pytest

from calc.tokenizer import TokenError, tokenize


def test_integers_and_operators():
    assert tokenize("12 + 3*(4)") == [12, "+", 3, "*", "(", 4, ")"]


def test_whitespace_is_ignored():
    assert tokenize("  7\t-\n2 ") == [7, "-", 2]


def test_bad_character():
    with pytest.raises(TokenError):
        tokenize("2 $ 3")


def test_decimal_literal():
    assert tokenize("3.5*2") == [3.5, "*", 2]


def test_leading_dot_decimal():
    assert tokenize(".5 + 1") == [0.5, "+", 1]


def test_two_dots_is_an_error():
    with pytest.raises(TokenError):
        tokenize("1.2.3")
