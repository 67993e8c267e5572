"""The agents' read model: roster entries, per-dimension figures and runs-ledger rows.

One model for every reader: the REST API (``/v1/agents``), the agent pages and the CLI
render what these functions return. Every figure is over the runs a viewer may see (an
owner id; None sees all), and every rate carries its n and a Wilson 95% interval; health
is the banded scale of :mod:`arbiter.service.agent_health`. The roster lists the worst
health first.

Two sources feed it. Stored trajectories (``POST /v1/trajectories``, OTLP ingest) are
counted in the database (:func:`agent_roster`, :func:`agent_detail`,
:func:`agent_ledger`). Runs of case files (``arbiter agent run``) are read as
:class:`AgentRecord` lists (:mod:`arbiter.service.agent_records`) and give the same
shapes through :func:`summary_of`, :func:`figures_of` and :func:`ledger_row`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import Field

from arbiter.contract import (
    Band,
    FlowRun,
    RunKind,
    Score,
    StoredTrajectory,
    StrictModel,
    Trajectory,
    TrajectoryStatus,
)
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.agent_health import (
    HEALTHY_AT,
    REVIEW_AT,
    TREND_MIN_RUNS,
    TREND_STEP,
    TREND_WINDOW,
    ChipState,
    Health,
    PassRate,
    Trend,
    chip_state,
    health_of,
    pass_rate,
    run_health,
    state_of,
    trend_of,
    worst_first_key,
)
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store
from arbiter.store.trajectory_repository import (
    AgentTotals,
    ScoreTally,
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
    "AgentRecord",
    "AgentSummary",
    "DimensionBar",
    "DimensionFigure",
    "Health",
    "LedgerRow",
    "PassRate",
    "RosterCard",
    "ScoreChip",
    "Trend",
    "agent_detail",
    "agent_ledger",
    "agent_roster",
    "dimension_bars",
    "figures_of",
    "health_of",
    "ledger_row",
    "record_health",
    "summary_of",
    "worst_first",
]

SPARK_RUNS = 30
"""Latest runs a roster entry's sparkline shows."""
_OUTCOMES = 2 * TREND_WINDOW
"""Latest verdicts an entry reads: the two windows of its trend."""
_BANDS: tuple[Band, ...] = ("healthy", "review", "danger")


@dataclass(frozen=True)
class AgentRecord:
    """One scored run of an agent: a stored trajectory, or a run of a case file."""

    id: str
    """What ``/trajectories/{id}`` opens: a stored run's id (``tr-...``), or an offline
    run's (``run:{run_id}:{repetition}:{case}``)."""
    agent: str
    """The agent's (or flow's) name."""
    kind: RunKind
    """A trajectory agent or a flow."""
    run: Trajectory | FlowRun | None
    """What it did; None for a stored record that kept no run."""
    scores: tuple[Score, ...]
    """What each scorer said of it, in the run's scorer order."""
    passed: bool | None
    """Its verdict; None when nothing decided it."""
    at: datetime
    """When it was stored (or its case-file run finished), timezone-aware."""
    status: TrajectoryStatus = "unknown"
    """How the run ended."""
    agent_class: str | None = None
    """The agent's class, when known."""
    source: str = ""
    """How it arrived: a stored run's source format, or ``run {run_id}``."""
    case_id: str | None = None
    """The case (or the trajectory's own id) it is a run of, when known."""
    cost_usd: float | None = None
    """Its cost, when known."""
    duration_ms: float | None = None
    """Its wall-clock duration, when known."""
    total_tokens: int | None = None
    """Its tokens, when reported."""
    trace_id: str | None = None
    """The trace it came from, if any."""
    convicted_by: tuple[str, ...] | None = None
    """The scorers that convicted it, as stored; None: the ones that failed it."""
    band: Band | None = None
    """Its band as stored (a stored trajectory's); unset: read off its scores."""
    live: bool = False
    """A stored trajectory, not a run of a case file."""

    @classmethod
    def of_stored(cls, stored: StoredTrajectory) -> AgentRecord:
        """A stored trajectory as a record."""
        run: Trajectory | FlowRun | None = stored.trajectory or stored.flow
        at = stored.created_at
        return cls(
            id=stored.id,
            agent=stored.agent,
            kind=stored.kind,
            run=run,
            scores=tuple(stored.scores),
            passed=stored.passed,
            at=at if at.tzinfo is not None else at.replace(tzinfo=UTC),
            status=stored.status,
            agent_class=stored.agent_class,
            source=stored.source_format,
            case_id=run.id if run is not None else None,
            cost_usd=stored.cost_usd,
            duration_ms=stored.duration_ms,
            total_tokens=stored.total_tokens,
            trace_id=stored.trace_id,
            convicted_by=tuple(stored.convicted_by),
            band=stored.band,
            live=True,
        )


def record_health(record: AgentRecord) -> Health:
    """One run's band: the stored one of a stored trajectory, else read off its verdict
    and scores (:func:`~arbiter.service.agent_health.run_health`)."""
    if record.live:
        return record.band or "inactive"
    return run_health(record.passed, record.scores)


class AgentSummary(StrictModel):
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


class RosterCard(AgentSummary):
    """A roster entry as the pages show it: the entry, what fails it, where it comes from."""

    agent_class: str | None = None
    """The agent's class, when its runs agree on one."""
    failing: list[str] = Field(default_factory=list)
    """The (at most three) scorers that failed its runs most often, most often first."""
    live: bool = False
    """Figures of stored trajectories; False: of runs of case files."""
    offline_runs: int = 0
    """Runs of case files of the same agent, when the figures are the stored ones."""


def _entry(
    name: str,
    kind: RunKind,
    totals: tuple[int, int, int],
    seen: tuple[datetime, datetime],
    outcomes: Sequence[bool | None],
) -> AgentSummary:
    """An entry from (runs, passed, failed), (first, last) and verdicts newest first."""
    runs, passed, failed = totals
    rate = pass_rate(passed, passed + failed)
    return AgentSummary(
        name=name,
        kind=kind,
        health=health_of(rate.estimate if rate is not None else None),
        pass_rate=rate,
        runs=runs,
        evaluated=passed + failed,
        first_seen=seen[0],
        last_seen=seen[1],
        recent=list(reversed(outcomes[:SPARK_RUNS])),
        trend=trend_of(outcomes),
    )


def _summary(
    store: Store, totals: Sequence[AgentTotals], kind: str | None, viewer: str | None
) -> AgentSummary:
    first = totals[0]
    outcomes = [
        o for o, _ in recent_outcomes(store, first.agent, kind=kind, viewer=viewer, limit=_OUTCOMES)
    ]
    return _entry(
        first.agent,
        "flow" if all(t.kind == "flow" for t in totals) else "trajectory",
        (sum(t.runs for t in totals), sum(t.passed for t in totals), sum(t.failed for t in totals)),
        (min(t.first_at for t in totals), max(t.last_at for t in totals)),
        outcomes,
    )


def _most_failed(failures: dict[str, int]) -> list[str]:
    return sorted(failures, key=lambda n: (-failures[n], n))[:3]


def summary_of(records: Sequence[AgentRecord]) -> RosterCard:
    """The roster entry of one agent's records (of one kind), as the stored ones'."""
    newest = sorted(records, key=lambda r: r.at, reverse=True)
    outcomes = [r.passed for r in newest]
    passed = sum(1 for o in outcomes if o is True)
    failed = sum(1 for o in outcomes if o is False)
    failures: dict[str, int] = {}
    for record in newest:
        for score in record.scores:
            if chip_state(score) == "fail":
                failures[score.name] = failures.get(score.name, 0) + 1
    classes = {r.agent_class for r in newest if r.agent_class}
    entry = _entry(
        newest[0].agent,
        newest[0].kind,
        (len(newest), passed, failed),
        (newest[-1].at, newest[0].at),
        outcomes[:_OUTCOMES],
    )
    return RosterCard(
        **entry.model_dump(),
        agent_class=classes.pop() if len(classes) == 1 else None,
        failing=_most_failed(failures),
        live=any(r.live for r in newest),
    )


def worst_first(entries: Iterable[RosterCard]) -> list[RosterCard]:
    """Entries by health (danger, review, healthy, inactive), then pass rate, then name."""

    def key(entry: RosterCard) -> tuple[int, float, str, str]:
        rate = entry.pass_rate.estimate if entry.pass_rate is not None else None
        return (*worst_first_key(entry.health, rate, entry.name), entry.kind)

    return sorted(entries, key=key)


def agent_roster(store: Store, *, viewer: str | None = None) -> list[AgentSummary]:
    """One entry per agent and per flow of the stored trajectories, the worst health
    first (then the lowest pass rate, then the name)."""
    entries = [_summary(store, [t], t.kind, viewer) for t in agent_totals(store, viewer=viewer)]

    def key(entry: AgentSummary) -> tuple[int, float, str, str]:
        rate = entry.pass_rate.estimate if entry.pass_rate is not None else None
        return (*worst_first_key(entry.health, rate, entry.name), entry.kind)

    return sorted(entries, key=key)


class DimensionFigure(StrictModel):
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
    tallies = score_tallies(store, name, kind=kind, viewer=viewer)
    dimensions = _figures(tallies, registry or scorer_registry())
    return AgentDetail(**summary.model_dump(), dimensions=dimensions)


def figures_of(
    records: Iterable[AgentRecord], registry: ScorerRegistry | None = None
) -> list[DimensionFigure]:
    """Per scorer, its verdicts over ``records``, as :func:`agent_detail` gives them."""
    counts: dict[tuple[str, bool | None, str | None, bool], int] = {}
    for record in records:
        for s in record.scores:
            key = (s.name, s.passed, s.band, s.error is not None)
            counts[key] = counts.get(key, 0) + 1
    tallies = [
        ScoreTally(name=name, passed=passed, band=band, errored=errored, count=count)
        for (name, passed, band, errored), count in sorted(counts.items(), key=lambda i: i[0][0])
    ]
    return _figures(tallies, registry or scorer_registry())


def _figures(tallies: Iterable[ScoreTally], registry: ScorerRegistry) -> list[DimensionFigure]:
    counts: dict[str, dict[str, int]] = {}
    bands: dict[str, dict[Band, int]] = {}
    for tally in tallies:
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
        rate = pass_rate(row["p"], row["p"] + row["f"])
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


class DimensionBar(StrictModel):
    """One dimension's checks over an agent's runs: the scorers measuring it, summed."""

    dimension: str
    """The dimension (a scorer's own name when the registry knows none)."""
    scorers: list[str]
    """The scorers measuring it, by name."""
    passed: int
    """Checks that passed (in review included)."""
    failed: int
    """Checks that failed."""
    abstained: int
    """Checks that abstained or raised (left out of the rate)."""
    reviewed: int
    """Checks in the review band."""
    pass_rate: PassRate | None
    """Passed over decided, with its interval; None when nothing was decided."""
    health: Health
    """That pass rate, banded."""


def dimension_bars(
    figures: Iterable[DimensionFigure], dimension_of: Callable[[str], str | None] | None = None
) -> list[DimensionBar]:
    """The per-scorer figures summed per dimension, the worst first.

    Args:
        figures: One agent's figures (:func:`agent_detail`, :func:`figures_of`).
        dimension_of: The dimension of a scorer the registry does not know; None: the
            scorer's own name.
    """
    groups: dict[str, list[DimensionFigure]] = {}
    for figure in figures:
        dimension = figure.dimension or (dimension_of and dimension_of(figure.scorer))
        groups.setdefault(dimension or figure.scorer, []).append(figure)
    bars = []
    for dimension, members in groups.items():
        passed = sum(f.passed for f in members)
        failed = sum(f.failed for f in members)
        rate = pass_rate(passed, passed + failed)
        bars.append(
            DimensionBar(
                dimension=dimension,
                scorers=sorted(f.scorer for f in members),
                passed=passed,
                failed=failed,
                abstained=sum(f.abstained + f.errored for f in members),
                reviewed=sum(f.bands.get("review", 0) for f in members),
                pass_rate=rate,
                health=health_of(rate.estimate if rate is not None else None),
            )
        )

    def key(bar: DimensionBar) -> tuple[int, float, str]:
        rate = bar.pass_rate.estimate if bar.pass_rate is not None else None
        return worst_first_key(bar.health, rate, bar.dimension)

    return sorted(bars, key=key)


class ScoreChip(StrictModel):
    """One verdict of a run, as a band strip shows it."""

    name: str
    """The scorer."""
    passed: bool | None
    """Pass, fail, or None (abstained or raised)."""
    band: Band | None
    """The band, for banded scorers."""
    error: bool = False
    """Whether the scorer raised."""

    @property
    def state(self) -> ChipState:
        """The chip's state: pass, review, fail, abstain or error."""
        return state_of(self.passed, self.band, errored=self.error)


class LedgerRow(StrictModel):
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
    case_id: str | None = None
    """The case it is a run of (a stored trajectory's own id), when known."""
    abstained: list[str] = Field(default_factory=list)
    """The scorers that abstained on it (nothing of theirs to grade), in scorer order."""

    @property
    def health(self) -> Health:
        """Its band, ``inactive`` when it has none."""
        return self.band or "inactive"

    @property
    def strip(self) -> list[tuple[str, ChipState]]:
        """Every check as (scorer, chip state), the decided ones then the abstentions:
        what its band strip draws."""
        return [(c.name, c.state) for c in self.chips] + [(n, "abstain") for n in self.abstained]


def ledger_row(record: AgentRecord | StoredTrajectory) -> LedgerRow:
    """One run as a ledger row: its verdict and a chip per decided score."""
    if isinstance(record, StoredTrajectory):
        record = AgentRecord.of_stored(record)
    health = record_health(record)
    convicted = record.convicted_by
    if convicted is None:
        convicted = tuple(s.name for s in record.scores if chip_state(s) == "fail")
    return LedgerRow(
        id=record.id,
        created_at=record.at,
        status=record.status,
        passed=record.passed,
        band=None if health == "inactive" else health,
        convicted_by=list(convicted),
        source_format=record.source,
        trace_id=record.trace_id,
        cost_usd=record.cost_usd,
        duration_ms=record.duration_ms,
        total_tokens=record.total_tokens,
        chips=[
            ScoreChip(name=s.name, passed=s.passed, band=s.band, error=s.error is not None)
            for s in record.scores
            if s.passed is not None or s.error is not None
        ],
        case_id=record.case_id,
        abstained=[s.name for s in record.scores if chip_state(s) == "abstain"],
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
