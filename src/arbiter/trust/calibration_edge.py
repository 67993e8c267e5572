"""When a judge's calibration against people falls below the kappa floor: the edge rule.

Each (judge, dimension) has a standing: ``gating`` while its Cohen's kappa against the
human labels (annotations and votes) is at or above the floor over enough pairs, and
``advisory`` below it. A drop is the edge from gating to advisory: it is reported once,
when it happens, and not again on later checks that still find the judge below the
floor; the judge has to climb back to gating before another drop can be reported.

A reading over fewer pairs than the minimum changes nothing (kappa over a handful of
pairs is noise, so it can neither promote nor demote). An undefined kappa (every label
the same on one side) over enough pairs counts as below the floor, as it leaves the
judge uncalibrated. A judge seen for the first time below the floor was never gating:
it becomes advisory without a drop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["CalibrationDrop", "CalibrationReading", "Standing", "calibration_edges"]

Standing = Literal["gating", "advisory"]
"""A judge's standing on one dimension: its rulings may gate, or only advise."""

JudgeKey = tuple[str, str]
"""(judge, dimension)."""


@dataclass(frozen=True)
class CalibrationReading:
    """One judge's calibration on one dimension, as a check measured it."""

    judge: str
    dimension: str
    kappa: float
    """Cohen's kappa against the people; nan when undefined."""
    n_pairs: int
    """Pairs with a label on both sides."""


@dataclass(frozen=True)
class CalibrationDrop:
    """A judge that was gating on a dimension and is now below the floor."""

    judge: str
    dimension: str
    kappa: float
    n_pairs: int
    floor: float


def calibration_edges(
    standing: Mapping[JudgeKey, Standing],
    readings: Iterable[CalibrationReading],
    *,
    floor: float,
    min_pairs: int,
) -> tuple[dict[JudgeKey, Standing], list[CalibrationDrop]]:
    """The standings after a check, and the drops it found.

    Args:
        standing: Each judge's standing as the last check left it.
        readings: What this check measured (a judge not read keeps its standing).
        floor: Kappa a judge needs to be gating.
        min_pairs: Pairs below which a reading changes nothing.

    Returns:
        The new standings (every judge of ``standing`` and of the measurable readings),
        and the drops, in the order of ``readings``.

    Examples:
        >>> gating = {("g", "grounded"): "gating"}
        >>> low = [CalibrationReading("g", "grounded", 0.2, 40)]
        >>> after, drops = calibration_edges(gating, low, floor=0.6, min_pairs=10)
        >>> after[("g", "grounded")], len(drops)
        ('advisory', 1)
        >>> calibration_edges(after, low, floor=0.6, min_pairs=10)[1]
        []
    """
    after: dict[JudgeKey, Standing] = dict(standing)
    drops: list[CalibrationDrop] = []
    for reading in readings:
        if reading.n_pairs < min_pairs:
            continue
        key = (reading.judge, reading.dimension)
        above = not math.isnan(reading.kappa) and reading.kappa >= floor
        now: Standing = "gating" if above else "advisory"
        if now == "advisory" and after.get(key) == "gating":
            drops.append(
                CalibrationDrop(
                    reading.judge, reading.dimension, reading.kappa, reading.n_pairs, floor
                )
            )
        after[key] = now
    return after, drops
