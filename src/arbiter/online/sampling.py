"""Which clean items the expensive layers (the judges) see: a seeded draw per item id.

Deterministic scoring is free and runs on every item; what costs tokens runs on every
item a cheaper layer condemned (anomalous, or flagged by a free layer: a heuristic, an
ungrounded claim, a failed trajectory scorer) and on a ``rate`` share of the clean
rest. Rate 0 is the honest policy "judges only when something is wrong".

The draw for a clean item is a hash of the seed and the item's id, not the next number
of a random generator: the same item, seed and rate give the same decision whatever the
order items arrive in, the concurrency, or a re-run of the batch; and raising the rate
only adds items (every item sampled at 0.05 is sampled at 0.10).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

__all__ = ["SAMPLED", "Trigger", "draw", "sampled", "trigger"]

SAMPLED = "sampled"
"""The escalation reason of a clean item the draw picked."""

Trigger = Literal["anomalous", "flagged", "sampled"]
"""Why an item reached the expensive layers."""

_SCALE = float(2**64)


def draw(item_id: str, seed: int) -> float:
    """The item's draw in [0, 1): the first 8 bytes of ``sha256(seed, id)``.

    Examples:
        >>> draw("turn-7", 0) == draw("turn-7", 0), draw("turn-7", 0) == draw("turn-7", 1)
        (True, False)
    """
    digest = hashlib.sha256(f"{seed}\x00{item_id}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def sampled(item_id: str, rate: float, seed: int) -> bool:
    """Whether a clean item falls in the ``rate`` share under ``seed``.

    Examples:
        >>> sampled("turn-7", 0.0, 0), sampled("turn-7", 1.0, 0)
        (False, True)
    """
    return rate > 0.0 and draw(item_id, seed) < rate


def trigger(reasons: Sequence[str]) -> Trigger | None:
    """Why an escalated item was escalated, from its reasons; None when it was not.

    ``anomalous`` when a condition of the config matched, else ``flagged`` when a free
    layer flagged it, else ``sampled``.

    Examples:
        >>> trigger(["scorers: failed loop_detection"]), trigger(["sampled"]), trigger([])
        ('flagged', 'sampled', None)
    """
    if not reasons:
        return None
    if any(reason.startswith("anomalous:") for reason in reasons):
        return "anomalous"
    if any(reason != SAMPLED for reason in reasons):
        return "flagged"
    return "sampled"
