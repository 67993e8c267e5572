"""Health, the one banded scale of agents' figures, and the pieces every agent figure uses.

A rolled-up figure (a pass rate over runs, over one dimension's checks) is banded
``healthy`` at :data:`HEALTHY_AT` and above, ``review`` at :data:`REVIEW_AT` and above,
``danger`` below, and ``inactive`` when nothing was decided (shown as "not evaluated",
never as a number). One score is a chip: ``pass``, ``review`` (passed, in the review
band), ``fail``, ``abstain`` or ``error`` (:func:`chip_state`); one run's band follows
from its verdict and chips (:func:`run_health`).

The trend compares the pass rate of the latest :data:`TREND_WINDOW` evaluated runs with
the window before it: ``up`` or ``down`` when they differ by :data:`TREND_STEP` or more,
``flat`` otherwise, and no direction while either window holds fewer than
:data:`TREND_MIN_RUNS` runs.

Pure functions: the REST API, the pages and the CLI read agents through
:mod:`arbiter.service.agent_roster`, which builds on these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from arbiter.contract import Score
from arbiter.stats import wilson_interval

__all__ = [
    "CHIP_STATES",
    "HEALTHY_AT",
    "REVIEW_AT",
    "TREND_MIN_RUNS",
    "TREND_STEP",
    "TREND_WINDOW",
    "ChipState",
    "Health",
    "PassRate",
    "Trend",
    "chip_state",
    "health_of",
    "pass_rate",
    "run_health",
    "state_of",
    "trend_of",
    "worst_first_key",
]

HEALTHY_AT = 0.80
"""Pass rate at or above which an agent is healthy."""
REVIEW_AT = 0.50
"""Pass rate at or above which an agent is in review (below: danger)."""
TREND_WINDOW = 30
"""Evaluated runs in each of the two windows the trend compares."""
TREND_STEP = 0.10
"""Change of pass rate that makes a trend ``up`` or ``down``."""
TREND_MIN_RUNS = 5
"""Fewest evaluated runs a window needs for the trend to have a direction."""

Health = Literal["healthy", "review", "danger", "inactive"]
"""Rolled-up health: the three bands, or ``inactive`` when nothing was evaluated."""
ChipState = Literal["pass", "review", "fail", "abstain", "error"]
"""One score as a chip: passed, passed but in review, failed, abstained, raised."""
CHIP_STATES: tuple[ChipState, ...] = ("pass", "review", "fail", "abstain", "error")
"""Every chip state, in the order a tally lists them."""

_WORST_FIRST: dict[str, int] = {"danger": 0, "review": 1, "healthy": 2, "inactive": 3}


class PassRate(BaseModel):
    """A share of evaluated runs (or checks) that passed, with its Wilson 95% interval."""

    model_config = ConfigDict(extra="forbid")

    estimate: float
    """Passed over evaluated."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    n: int
    """Evaluated runs it is over."""
    passed: int
    """Runs that passed."""


class Trend(BaseModel):
    """The latest window of evaluated runs against the one before it."""

    model_config = ConfigDict(extra="forbid")

    recent: PassRate | None
    """Pass rate of the latest window; None with no evaluated run."""
    previous: PassRate | None
    """Pass rate of the window before; None when there is none."""
    delta: float | None
    """``recent - previous``; None when either is missing."""
    direction: Literal["up", "down", "flat"] | None
    """Whether the pass rate rose or fell by ``TREND_STEP`` or more; None while a window
    holds fewer than ``TREND_MIN_RUNS`` runs."""


def health_of(rate: float | None) -> Health:
    """The health of a pass rate: healthy / review / danger, or inactive for None.

    Examples:
        >>> health_of(0.8), health_of(0.5), health_of(0.49), health_of(None)
        ('healthy', 'review', 'danger', 'inactive')
    """
    if rate is None:
        return "inactive"
    return "healthy" if rate >= HEALTHY_AT else "review" if rate >= REVIEW_AT else "danger"


def pass_rate(passed: int, decided: int) -> PassRate | None:
    """``passed`` of ``decided`` with its Wilson interval; None when nothing was decided."""
    if decided == 0:
        return None
    low, high = wilson_interval(passed, decided)
    return PassRate(estimate=passed / decided, low=low, high=high, n=decided, passed=passed)


def trend_of(outcomes: Sequence[bool | None]) -> Trend:
    """The trend of verdicts given newest first (None: not evaluated, left out)."""
    decided = [o for o in outcomes if o is not None]
    latest, before = decided[:TREND_WINDOW], decided[TREND_WINDOW : 2 * TREND_WINDOW]
    recent, previous = pass_rate(sum(latest), len(latest)), pass_rate(sum(before), len(before))
    delta = None if recent is None or previous is None else recent.estimate - previous.estimate
    direction: Literal["up", "down", "flat"] | None = None
    if delta is not None and min(len(latest), len(before)) >= TREND_MIN_RUNS:
        direction = "up" if delta >= TREND_STEP else "down" if delta <= -TREND_STEP else "flat"
    return Trend(recent=recent, previous=previous, delta=delta, direction=direction)


def chip_state(score: Score) -> ChipState:
    """A score as a verdict chip: its pass / fail, refined by its band."""
    return state_of(score.passed, score.band, errored=score.error is not None)


def state_of(passed: bool | None, band: str | None, *, errored: bool = False) -> ChipState:
    """The chip of a verdict (``passed``), its band, and whether its scorer raised."""
    if errored:
        return "error"
    if passed is None:
        return "abstain"
    if not passed:
        return "fail"
    return "review" if band == "review" else "pass"


def run_health(passed: bool | None, scores: Iterable[Score]) -> Health:
    """One run's band read off its verdict: danger when it failed, review when it passed
    with a score in review, healthy when it passed clean, inactive when undecided."""
    if passed is None:
        return "inactive"
    if not passed:
        return "danger"
    return "review" if any(chip_state(s) == "review" for s in scores) else "healthy"


def worst_first_key(health: Health, rate: float | None, name: str) -> tuple[int, float, str]:
    """The sort key that lists the worst health first, then the lowest rate, then by name
    (an undecided rate sorts last within its band)."""
    return (_WORST_FIRST[health], rate if rate is not None else 2.0, name)
