"""The fleet as one read model: every agent's trust posture by trust-critical dimension,
and how pass rate and cost moved over the last days.

:func:`fleet_posture` reads each agent's evidence window once (the runs the trust status
is judged on) and gives, beside the status of :func:`arbiter.service.trust.trust_statuses`,
the pass rate of each trust-critical dimension with its 95% Wilson interval, the band that
rate falls in (the roster's rule: healthy at 80%, review at 50%) and a short series of the
same rate over the window, oldest first. :func:`fleet_timeline` buckets the newest stored
runs by calendar day (UTC) per agent: runs, decided, passed and the mean cost of a run.
Both only read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.trust import RunEvidence, TrustStatus
from arbiter.service.agent_health import Health, health_of
from arbiter.service.trust import statuses_of, trust_policy
from arbiter.stats import wilson_interval
from arbiter.store.trajectory_repository import recent_timeline
from arbiter.store.trust_repository import trust_evidence

if TYPE_CHECKING:
    from arbiter.service.trust import SignatureChecker
    from arbiter.store import Store
    from arbiter.trust import TrustPolicy

__all__ = [
    "AgentTimeline",
    "DayPoint",
    "DimensionCell",
    "FleetPosture",
    "FleetRow",
    "FleetTimeline",
    "fleet_posture",
    "fleet_timeline",
]

SERIES_POINTS = 10
"""How many points a dimension's series over the window has at most."""

_STATE_ORDER = {"at_risk": 0, "watch": 1, "provisional": 2, "proven": 3, "trusted": 4}
"""Worst first: what needs a person comes to the top of the matrix."""


class DimensionCell(BaseModel):
    """One trust-critical dimension of one agent over its evidence window."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The scorer (``scope_adherence``, ...)."""
    passed: int = 0
    """Runs whose verdict on it was a pass."""
    n: int = 0
    """Runs with a verdict on it (abstentions left out)."""
    rate: float | None = None
    """``passed / n``; None when no run had a verdict on it."""
    interval: tuple[float, float] | None = None
    """95% Wilson interval of the rate; None with the rate."""
    health: Health = "inactive"
    """The band of the rate; ``inactive``: no verdict."""
    series: list[float | None] = Field(default_factory=list)
    """The rate over consecutive slices of the window, oldest first (None: no verdict)."""


class FleetRow(BaseModel):
    """One agent's row of the posture matrix."""

    model_config = ConfigDict(extra="forbid")

    status: TrustStatus
    dimensions: list[DimensionCell]
    """In the order of :attr:`FleetPosture.dimensions`."""


class FleetPosture(BaseModel):
    """The posture matrix: agents (worst state first) by trust-critical dimension."""

    model_config = ConfigDict(extra="forbid")

    dimensions: list[str]
    """The policy's trust-critical dimensions, the matrix's columns."""
    rows: list[FleetRow]


def _slices(items: Sequence[RunEvidence], count: int) -> list[Sequence[RunEvidence]]:
    """``items`` cut into ``count`` consecutive slices of near-equal size."""
    size = len(items)
    return [items[size * i // count : size * (i + 1) // count] for i in range(count)]


def _rate(items: Sequence[RunEvidence], name: str) -> tuple[int, int]:
    passed = decided = 0
    for item in items:
        for dimension, verdict in item.dimensions:
            if dimension == name and verdict is not None:
                decided += 1
                passed += verdict
    return passed, decided


def _cell(items: Sequence[RunEvidence], name: str) -> DimensionCell:
    passed, decided = _rate(items, name)
    series: list[float | None] = []
    for part in _slices(items, min(SERIES_POINTS, len(items))):
        good, n = _rate(part, name)
        series.append(good / n if n else None)
    if not decided:
        return DimensionCell(name=name, series=series)
    rate = passed / decided
    return DimensionCell(
        name=name,
        passed=passed,
        n=decided,
        rate=rate,
        interval=wilson_interval(passed, decided),
        health=health_of(rate),
        series=series,
    )


def fleet_posture(
    store: Store,
    *,
    viewer: str | None = None,
    policy: TrustPolicy | None = None,
    now: datetime | None = None,
    checker: SignatureChecker | None = None,
) -> FleetPosture:
    """Every agent ``viewer`` may see: its trust status and its trust-critical dimensions.

    Args:
        store: The store.
        viewer: Only this owner's agents; None: every owner's.
        policy: The trust policy (default: the one in force).
        now: When the statuses are judged (default: now).
        checker: Checks a run's signature; None: integrity unknown.
    """
    policy = policy or trust_policy()
    names = list(policy.trust_critical)
    # One read of the evidence windows serves the statuses and the dimensions.
    evidence = trust_evidence(store, names=names, viewer=viewer, window=policy.window_runs)
    statuses = statuses_of(
        store, evidence, policy=policy, now=now or datetime.now(UTC), checker=checker
    )
    rows = []
    for status in statuses:
        items = sorted(
            evidence.get((status.owner, status.agent), []), key=lambda e: (e.at, e.run_id)
        )
        rows.append(FleetRow(status=status, dimensions=[_cell(items, name) for name in names]))
    rows.sort(key=lambda r: (_STATE_ORDER[r.status.state], r.status.agent, r.status.owner or ""))
    return FleetPosture(dimensions=names, rows=rows)


class DayPoint(BaseModel):
    """One agent's runs stored on one day."""

    model_config = ConfigDict(extra="forbid")

    runs: int = 0
    decided: int = 0
    """Runs with a verdict."""
    passed: int = 0
    cost: float | None = None
    """Mean cost of a run in USD, over the runs that carry one; None: none does."""

    @property
    def rate(self) -> float | None:
        """The pass rate of the decided runs; None when none was decided."""
        return self.passed / self.decided if self.decided else None


class AgentTimeline(BaseModel):
    """One agent's days, in the order of :attr:`FleetTimeline.days`."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    runs: int
    """Runs read in the shown days."""
    points: list[DayPoint]


class FleetTimeline(BaseModel):
    """Pass rate and cost per agent and day, over the days ending with the newest run."""

    model_config = ConfigDict(extra="forbid")

    days: list[date] = Field(default_factory=list)
    agents: list[AgentTimeline] = Field(default_factory=list)
    """Most runs first."""
    hidden: int = 0
    """Agents left out past ``max_agents``."""
    cut: bool = False
    """The read stopped at its limit: older days may lack runs."""


def fleet_timeline(
    store: Store,
    *,
    viewer: str | None = None,
    days: int = 14,
    max_agents: int = 12,
    limit: int = 20_000,
) -> FleetTimeline:
    """Each agent's pass rate and mean run cost per day (UTC), over the ``days`` days
    that end with the newest stored run; at most ``limit`` runs are read."""
    found = recent_timeline(store, viewer=viewer, limit=limit)
    if not found:
        return FleetTimeline()
    last = max(at for _, at, _, _ in found).date()
    shown = [last - timedelta(days=days - 1 - i) for i in range(days)]
    index = {day: i for i, day in enumerate(shown)}
    tallies: dict[str, list[list[float]]] = {}
    for agent, at, passed, cost in found:
        slot = index.get(at.date())
        if slot is None:
            continue
        # runs, decided, passed, cost sum, runs with a cost
        cells = tallies.setdefault(agent, [[0.0] * 5 for _ in shown])
        cell = cells[slot]
        cell[0] += 1
        if passed is not None:
            cell[1] += 1
            cell[2] += passed
        if cost is not None:
            cell[3] += cost
            cell[4] += 1
    lines = [
        AgentTimeline(
            agent=agent,
            runs=int(sum(c[0] for c in cells)),
            points=[
                DayPoint(
                    runs=int(c[0]),
                    decided=int(c[1]),
                    passed=int(c[2]),
                    cost=c[3] / c[4] if c[4] else None,
                )
                for c in cells
            ],
        )
        for agent, cells in tallies.items()
    ]
    lines.sort(key=lambda line: (-line.runs, line.agent))
    return FleetTimeline(
        days=shown,
        agents=lines[:max_agents],
        hidden=max(len(lines) - max_agents, 0),
        cut=len(found) == limit,
    )
