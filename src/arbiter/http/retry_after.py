"""The HTTP ``Retry-After`` header, read the same way by every client of ours."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["parse_retry_after"]


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait according to a Retry-After header, never negative.

    Args:
        value: The header (delta-seconds or an HTTP-date), None when absent.
        now: The current time; defaults to the clock.

    Returns:
        The delay in seconds, or None when the header is absent or unparsable.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        pass
    else:  # an infinite or NaN delay would stall a retry loop forever
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
