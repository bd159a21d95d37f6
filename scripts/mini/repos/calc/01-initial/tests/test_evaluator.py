import pytest

from calc import evaluate


def test_addition():
    assert evaluate("1 + 2") == 3


def test_precedence():
    assert evaluate("1 + 2 * 3") == 7


def test_parentheses():
    assert evaluate("(1 + 2) * 3") == 9


def test_unary_minus():
    assert evaluate("-4 + 10") == 6


def test_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / 0")
