"""The agents roster, one agent's figures and its runs ledger, from the stored runs.

Every figure is over the runs a viewer may see (an owner id; None sees all), and every
rate carries its n and a Wilson 95% interval. Health is the one banded scale of rolled-up
figures: ``healthy`` at a pass rate of :data:`HEALTHY_AT` and above, ``review`` at
:data:`REVIEW_AT` and above, ``danger`` below, ``inactive`` when no run was evaluated
(the roster then says "not evaluated" and shows no number). The roster lists the worst
health first.

The trend compares the pass rate of an agent's latest :data:`TREND_WINDOW` evaluated
runs with the window before it: ``up`` or ``down`` when they differ by
:data:`TREND_STEP` or more, ``flat`` otherwise, and no direction while either window
holds fewer than :data:`TREND_MIN_RUNS` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import Band, RunKind, StoredTrajectory, TrajectoryStatus
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import scorer_registry
from arbiter.stats import wilson_interval
from arbiter.store import Store
from arbiter.store.trajectory_repository import (
    AgentTotals,
    agent_totals,
    list_trajectories,
    recent_outcomes,
    score_tallies,
)

__all__ = [
    "HEALTHY_AT",
    "REVIEW_AT",
    "SPARK_RUNS",
    "TREND_MIN_RUNS",
    "TREND_STEP",
    "TREND_WINDOW",
    "AgentDetail",
    "AgentSummary",
    "DimensionFigure",
    "Health",
    "LedgerRow",
    "PassRate",
    "ScoreChip",
    "Trend",
    "agent_detail",
    "agent_ledger",
    "agent_roster",
    "health_of",
    "ledger_row",
]

HEALTHY_AT = 0.80
"""Pass rate at or above which an agent is healthy."""
REVIEW_AT = 0.50
"""Pass rate at or above which an agent is in review (below: danger)."""
SPARK_RUNS = 30
"""Latest runs a roster entry's sparkline shows."""
TREND_WINDOW = 30
"""Evaluated runs in each of the two windows the trend compares."""
TREND_STEP = 0.10
"""Change of pass rate that makes a trend ``up`` or ``down``."""
TREND_MIN_RUNS = 5
"""Fewest evaluated runs a window needs for the trend to have a direction."""

Health = Literal["healthy", "review", "danger", "inactive"]
"""Rolled-up health: the three bands, or ``inactive`` when nothing was evaluated."""

_WORST_FIRST: dict[str, int] = {"danger": 0, "review": 1, "healthy": 2, "inactive": 3}
_BANDS: tuple[Band, ...] = ("healthy", "review", "danger")


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PassRate(_Shape):
    """A share of evaluated runs that passed, with its Wilson 95% interval."""

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


class Trend(_Shape):
    """The latest window of evaluated runs against the one before it."""

    recent: PassRate | None
    """Pass rate of the latest window; None with no evaluated run."""
    previous: PassRate | None
    """Pass rate of the window before; None when there is none."""
    delta: float | None
    """``recent - previous``; None when either is missing."""
    direction: Literal["up", "down", "flat"] | None
    """Whether the pass rate rose or fell by ``TREND_STEP`` or more; None while a window
    holds fewer than ``TREND_MIN_RUNS`` runs."""


class AgentSummary(_Shape):
    """One roster entry: an agent (or a flow) and how its runs fared."""

    name: str
    """The agent's (or flow's) name."""
    kind: RunKind
    """A trajectory agent or a flow."""
    health: Health
    """The banded pass rate; ``inactive`` when no run was evaluated."""
    pass_rate: PassRate | None
    """Share of evaluated runs that passed; None when none was evaluated."""
    runs: int
    """Runs stored (the volume)."""
    evaluated: int
    """Runs some scorer decided."""
    first_seen: datetime
    """When its first run was stored."""
    last_seen: datetime
    """When its latest run was stored."""
    recent: list[bool | None] = Field(default_factory=list)
    """Verdicts of its latest runs, oldest first (None: not evaluated), for a sparkline."""
    trend: Trend
    """The latest window against the one before."""


class DimensionFigure(_Shape):
    """One scorer's verdicts over an agent's runs."""

    scorer: str
    """The scorer's name."""
    dimension: str | None
    """The dimension it measures, when the registry knows the scorer."""
    moment: str | None
    """When in a run it measures, when known."""
    passed: int
    """Runs it passed."""
    failed: int
    """Runs it failed."""
    abstained: int
    """Runs it abstained on."""
    errored: int
    """Runs on which it raised."""
    bands: dict[Band, int]
    """Runs per band, for banded scorers."""
    pass_rate: PassRate | None
    """Share of the runs it decided that it passed."""
    health: Health
    """That pass rate, banded."""


class AgentDetail(AgentSummary):
    """One agent: its roster entry and its per-dimension figures."""

    dimensions: list[DimensionFigure]
    """Per scorer that decided at least one run, in name order."""


class ScoreChip(_Shape):
    """One verdict of a run, as a band strip shows it."""

    name: str
    """The scorer."""
    passed: bool | None
    """Pass, fail, or None (abstained or raised)."""
    band: Band | None
    """The band, for banded scorers."""
    error: bool = False
    """Whether the scorer raised."""


class LedgerRow(_Shape):
    """One run of an agent's ledger."""

    id: str
    """The stored run's id (``GET /v1/trajectories/{id}``)."""
    created_at: datetime
    """When it was stored."""
    status: TrajectoryStatus
    """How the run ended."""
    passed: bool | None
    """Its verdict; None: not evaluated."""
    band: Band | None
    """Its band."""
    convicted_by: list[str]
    """The scorers that convicted it."""
    source_format: str
    """How it arrived."""
    trace_id: str | None
    """The trace it came from, if any."""
    cost_usd: float | None
    """Its cost, when reported."""
    duration_ms: float | None
    """Its wall-clock duration, when timed."""
    total_tokens: int | None
    """Its tokens, when reported."""
    chips: list[ScoreChip]
    """Its decided verdicts, in scorer order (abstentions left out)."""


def health_of(rate: float | None) -> Health:
    """The health of a pass rate: healthy / review / danger, or inactive for None."""
    if rate is None:
        return "inactive"
    return "healthy" if rate >= HEALTHY_AT else "review" if rate >= REVIEW_AT else "danger"


def _rate(passed: int, decided: int) -> PassRate | None:
    if decided == 0:
        return None
    low, high = wilson_interval(passed, decided)
    return PassRate(estimate=passed / decided, low=low, high=high, n=decided, passed=passed)


def _trend(outcomes: Sequence[bool | None]) -> Trend:
    decided = [o for o in outcomes if o is not None]
    latest, before = decided[:TREND_WINDOW], decided[TREND_WINDOW : 2 * TREND_WINDOW]
    recent, previous = _rate(sum(latest), len(latest)), _rate(sum(before), len(before))
    delta = None if recent is None or previous is None else recent.estimate - previous.estimate
    direction: Literal["up", "down", "flat"] | None = None
    if delta is not None and min(len(latest), len(before)) >= TREND_MIN_RUNS:
        direction = "up" if delta >= TREND_STEP else "down" if delta <= -TREND_STEP else "flat"
    return Trend(recent=recent, previous=previous, delta=delta, direction=direction)


def _summary(
    store: Store, totals: Sequence[AgentTotals], kind: str | None, viewer: str | None
) -> AgentSummary:
    first = totals[0]
    runs = sum(t.runs for t in totals)
    passed, failed = sum(t.passed for t in totals), sum(t.failed for t in totals)
    rate = _rate(passed, passed + failed)
    outcomes = [
        o for o, _ in recent_outcomes(store, first.agent, kind=kind, viewer=viewer, limit=60)
    ]
    return AgentSummary(
        name=first.agent,
        kind="flow" if all(t.kind == "flow" for t in totals) else "trajectory",
        health=health_of(rate.estimate if rate is not None else None),
        pass_rate=rate,
        runs=runs,
        evaluated=passed + failed,
        first_seen=min(t.first_at for t in totals),
        last_seen=max(t.last_at for t in totals),
        recent=list(reversed(outcomes[:SPARK_RUNS])),
        trend=_trend(outcomes),
    )


def agent_roster(store: Store, *, viewer: str | None = None) -> list[AgentSummary]:
    """One entry per agent and per flow, the worst health first (then the lowest pass
    rate, then the name)."""
    entries = [_summary(store, [t], t.kind, viewer) for t in agent_totals(store, viewer=viewer)]

    def order(entry: AgentSummary) -> tuple[int, float, str, str]:
        rate = entry.pass_rate.estimate if entry.pass_rate is not None else 1.0
        return (_WORST_FIRST[entry.health], rate, entry.name, entry.kind)

    return sorted(entries, key=order)


def agent_detail(
    store: Store,
    name: str,
    *,
    kind: RunKind | None = None,
    viewer: str | None = None,
    registry: ScorerRegistry | None = None,
) -> AgentDetail | None:
    """One agent's figures and per-dimension bars; None when it has no visible run.

    Args:
        store: The store.
        name: The agent's name.
        kind: Only its runs of this kind; None: all of them.
        viewer: Whose runs may be seen; None: all.
        registry: Where each scorer's dimension and moment are looked up.
    """
    totals = [
        t
        for t in agent_totals(store, viewer=viewer)
        if t.agent == name and (kind is None or t.kind == kind)
    ]
    if not totals:
        return None
    summary = _summary(store, totals, kind, viewer)
    dimensions = _dimensions(store, name, kind, viewer, registry or scorer_registry())
    return AgentDetail(**summary.model_dump(), dimensions=dimensions)


def _dimensions(
    store: Store, name: str, kind: str | None, viewer: str | None, registry: ScorerRegistry
) -> list[DimensionFigure]:
    counts: dict[str, dict[str, int]] = {}
    bands: dict[str, dict[Band, int]] = {}
    for tally in score_tallies(store, name, kind=kind, viewer=viewer):
        row = counts.setdefault(tally.name, dict.fromkeys(("p", "f", "a", "e"), 0))
        outcome = (
            "e" if tally.errored else "a" if tally.passed is None else "p" if tally.passed else "f"
        )
        row[outcome] += tally.count
        if tally.band in _BANDS:
            per_band = bands.setdefault(tally.name, dict.fromkeys(_BANDS, 0))
            per_band[tally.band] += tally.count
    figures = []
    for scorer, row in counts.items():
        if row["p"] + row["f"] == 0:
            continue  # never decided a run: nothing to draw
        factory = registry.factory_of(scorer) if scorer in registry else None
        rate = _rate(row["p"], row["p"] + row["f"])
        figures.append(
            DimensionFigure(
                scorer=scorer,
                dimension=factory.dimension if factory is not None else None,
                moment=factory.moment if factory is not None else None,
                passed=row["p"],
                failed=row["f"],
                abstained=row["a"],
                errored=row["e"],
                bands=bands.get(scorer, dict.fromkeys(_BANDS, 0)),
                pass_rate=rate,
                health=health_of(rate.estimate if rate is not None else None),
            )
        )
    return figures


def ledger_row(record: StoredTrajectory) -> LedgerRow:
    """One stored run as a ledger row: its verdict and a chip per decided score."""
    return LedgerRow(
        id=record.id,
        created_at=record.created_at,
        status=record.status,
        passed=record.passed,
        band=record.band,
        convicted_by=record.convicted_by,
        source_format=record.source_format,
        trace_id=record.trace_id,
        cost_usd=record.cost_usd,
        duration_ms=record.duration_ms,
        total_tokens=record.total_tokens,
        chips=[
            ScoreChip(name=s.name, passed=s.passed, band=s.band, error=s.error is not None)
            for s in record.scores
            if s.passed is not None or s.error is not None
        ],
    )


def agent_ledger(
    store: Store,
    name: str,
    *,
    kind: RunKind | None = None,
    band: str | None = None,
    viewer: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[LedgerRow], int]:
    """An agent's runs, newest first, one page of them and how many there are in all.

    Args:
        store: The store.
        name: The agent's name.
        kind: Only its runs of this kind.
        band: Only runs in this band (``healthy``, ``review``, ``danger``, or ``none``).
        viewer: Whose runs may be seen; None: all.
        offset: Runs to skip.
        limit: Most runs on the page.
    """
    records, total = list_trajectories(
        store, agent=name, kind=kind, band=band, viewer=viewer, offset=offset, limit=limit
    )
    return [ledger_row(record) for record in records], total
