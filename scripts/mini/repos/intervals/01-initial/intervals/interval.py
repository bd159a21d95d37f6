"""The half-open interval `[start, end)` and operations on lists of them."""


class Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        if end < start:
            raise ValueError(f"end {end} is before start {start}")
        self.start = start
        self.end = end

    def __repr__(self):
        return f"Interval({self.start!r}, {self.end!r})"

    def __eq__(self, other):
        return (
            isinstance(other, Interval)
            and self.start == other.start
            and self.end == other.end
        )

    def __hash__(self):
        return hash((self.start, self.end))

    @property
    def length(self):
        return self.end - self.start

    def contains(self, x):
        return self.start <= x < self.end

    def overlaps(self, other):
        """True when the two intervals share at least one point."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other):
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))


def merge(intervals):
    """Merge overlapping or touching intervals into a minimal list, sorted by start."""
    result = []
    for iv in intervals:
        if result and iv.start <= result[-1].end:
            result[-1] = Interval(result[-1].start, iv.end)
        else:
            result.append(Interval(iv.start, iv.end))
    return result
