"""A share with its counts and 95% Wilson interval: what the online batch summary and the
grounding gate's benchmark report for each rate (flagged, escalated, trigger recall, ...).

Over zero items the share is unknown: ``rate`` is None, never 0, and the interval is the
whole of [0, 1] (nothing is known), as :func:`~arbiter.stats.wilson_interval` says.
"""

from __future__ import annotations

from pydantic import BaseModel

from arbiter.stats import wilson_interval

__all__ = ["Rate"]


class Rate(BaseModel):
    """A share of ``n`` items with its 95% Wilson interval."""

    count: int
    """Items counted."""
    n: int
    """Items it is a share of."""
    rate: float | None
    """count / n; None when n is 0."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""

    @classmethod
    def of(cls, count: int, n: int) -> Rate:
        """The rate ``count / n`` with its interval.

        Raises:
            InvalidParameter: ``count`` is negative or above ``n``.
        """
        low, high = wilson_interval(count, n)
        return cls(count=count, n=n, rate=count / n if n else None, low=low, high=high)
