import pytest

from intervals import Interval


def test_length():
    assert Interval(2, 5).length == 3


def test_contains_is_half_open():
    iv = Interval(1, 3)
    assert iv.contains(1)
    assert not iv.contains(3)


def test_rejects_reversed_bounds():
    with pytest.raises(ValueError):
        Interval(5, 1)


def test_overlapping_intervals():
    assert Interval(1, 4).overlaps(Interval(3, 6))


def test_disjoint_intervals():
    assert not Interval(1, 2).overlaps(Interval(5, 6))


def test_intersection():
    assert Interval(1, 4).intersection(Interval(3, 6)) == Interval(3, 4)


def test_touching_intervals_do_not_overlap():
    assert not Interval(1, 3).overlaps(Interval(3, 5))
    assert not Interval(3, 5).overlaps(Interval(1, 3))


def test_touching_intervals_have_no_intersection():
    assert Interval(1, 3).intersection(Interval(3, 5)) is None
