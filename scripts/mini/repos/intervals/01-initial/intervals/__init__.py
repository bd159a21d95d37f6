"""Half-open numeric intervals."""

from .interval import Interval, merge

__all__ = ["Interval", "merge"]
