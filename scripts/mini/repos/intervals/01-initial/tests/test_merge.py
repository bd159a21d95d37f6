from intervals import Interval, merge


def test_merge_sorted_overlapping():
    got = merge([Interval(1, 3), Interval(2, 5), Interval(7, 8)])
    assert got == [Interval(1, 5), Interval(7, 8)]


def test_merge_touching():
    assert merge([Interval(1, 3), Interval(3, 4)]) == [Interval(1, 4)]


def test_merge_empty():
    assert merge([]) == []
