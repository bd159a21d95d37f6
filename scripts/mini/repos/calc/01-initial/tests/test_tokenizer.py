import pytest

from calc.tokenizer import TokenError, tokenize


def test_integers_and_operators():
    assert tokenize("12 + 3*(4)") == [12, "+", 3, "*", "(", 4, ")"]


def test_whitespace_is_ignored():
    assert tokenize("  7\t-\n2 ") == [7, "-", 2]


def test_bad_character():
    with pytest.raises(TokenError):
        tokenize("2 $ 3")
