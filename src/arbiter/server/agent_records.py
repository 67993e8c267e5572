"""The scored agent runs the agent pages show, read from the store.

Two sources, told apart on the pages:

- **live**: the stored trajectories (``POST /v1/trajectories``, OTLP ingest, the demo's
  samples), read through the same service functions as ``/v1/agents``
  (:func:`~arbiter.service.agent_roster.agent_roster`, ``agent_detail``) and the
  trajectory repository; a record's id is the stored run's (``tr-...``);
- **offline**: runs of case files (``arbiter agent run``): a stored run whose system is
  an agent executor holds one trajectory (or flow run) per (case, repetition), with its
  scores and verdict; a record's id is ``run:{run_id}:{repetition}:{case}``.

A roster card shows an agent's live figures when it has stored trajectories, else its
offline ones. An offline record's agent is the trajectory's own agent name, else the
run's name, else the case file's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Literal

from arbiter.contract import FlowRun, PairResult, RunInfo, StoredTrajectory, Trajectory
from arbiter.errors import StoreError
from arbiter.server.agents_view import (
    AgentRecord,
    DimensionBar,
    RosterCard,
    health_of,
    roster,
    sort_bars,
    worst_first,
)
from arbiter.stats import wilson_interval
from arbiter.store import Store

if TYPE_CHECKING:
    from arbiter.service.agent_roster import AgentDetail, AgentSummary, DimensionFigure

__all__ = [
    "MAX_AGENT_RUNS",
    "MAX_OFFLINE_RESULTS",
    "RecordRef",
    "agent_records",
    "failing_checks",
    "is_agent_run",
    "live_bars",
    "live_card",
    "parse_record_id",
    "previous_run",
    "record",
    "record_id",
    "roster_cards",
    "stored_record",
]

MAX_AGENT_RUNS = 200
"""Newest stored offline agent runs the pages read."""
MAX_OFFLINE_RESULTS = 5_000
"""Most offline results (trajectories) the pages read, newest runs first."""

_PREFIX = "run"
Kind = Literal["agent", "flow"]


@dataclass(frozen=True)
class RecordRef:
    """Where an offline record lives: a stored run's (case, repetition)."""

    run_id: str
    repetition: int
    case_id: str


def record_id(run_id: str, repetition: int, case_id: str) -> str:
    """The id of an offline run's record: ``run:{run_id}:{repetition}:{case}``."""
    return f"{_PREFIX}:{run_id}:{repetition}:{case_id}"


def parse_record_id(value: str) -> RecordRef | None:
    """The reference an offline record id names; None when it is not one.

    Examples:
        >>> parse_record_id("run:20260101-000000-abcdef:2:case:with:colons")
        RecordRef(run_id='20260101-000000-abcdef', repetition=2, case_id='case:with:colons')
        >>> parse_record_id("tr-0123") is None
        True
    """
    prefix, _, rest = value.partition(":")
    run_id, _, rest = rest.partition(":")
    repetition, _, case_id = rest.partition(":")
    if prefix != _PREFIX or not run_id or not case_id or not repetition.isdigit():
        return None
    return RecordRef(run_id, int(repetition), case_id)


def is_agent_run(info: RunInfo) -> bool:
    """Whether a stored run ran an agent executor (its outputs are trajectories)."""
    kind = info.system.get("kind")
    return isinstance(kind, str) and kind.startswith("agent-")


def _agent_name(run: Trajectory | FlowRun, info: RunInfo) -> str:
    if run.agent.name:
        return run.agent.name
    if info.name:
        return info.name
    return info.dataset_name or str(info.system.get("target") or "agent")


def _offline(info: RunInfo, result: PairResult) -> AgentRecord | None:
    output = result.output
    run: Trajectory | FlowRun | None = None
    if output is not None:
        run = output.trajectory if output.trajectory is not None else output.flow
    if run is None:
        return None
    kind: Kind = "flow" if isinstance(run, FlowRun) else "agent"
    duration: float | None
    try:
        duration = run.duration
    except TypeError:  # zoned and zoneless times mixed: no honest duration
        duration = None
    cost = run.cost_usd if isinstance(run, FlowRun) else run.totals().cost_usd
    at = info.finished_at or info.created_at
    return AgentRecord(
        id=record_id(info.id, result.repetition, result.example_id),
        agent=_agent_name(run, info),
        kind=kind,
        run=run,
        scores=tuple(result.scores),
        passed=result.passed,
        at=at if at.tzinfo is not None else at.replace(tzinfo=UTC),
        agent_class=run.agent.agent_class,
        source=f"run {info.id}",
        case_id=result.example_id,
        cost_usd=cost,
        duration_ms=duration,
    )


def stored_record(stored: StoredTrajectory) -> AgentRecord | None:
    """A stored trajectory as a page record; None when it holds no run."""
    run: Trajectory | FlowRun | None = stored.trajectory or stored.flow
    if run is None:
        return None
    at = stored.created_at
    return AgentRecord(
        id=stored.id,
        agent=stored.agent,
        kind="flow" if stored.kind == "flow" else "agent",
        run=run,
        scores=tuple(stored.scores),
        passed=stored.passed,
        at=at if at.tzinfo is not None else at.replace(tzinfo=UTC),
        agent_class=stored.agent_class,
        source=stored.source_format,
        case_id=run.id,
        cost_usd=stored.cost_usd,
        duration_ms=stored.duration_ms,
        health=stored.band or "inactive",
        live=True,
    )


def agent_records(
    store: Store,
    *,
    viewer: str | None = None,
    limit: int = MAX_AGENT_RUNS,
    max_results: int = MAX_OFFLINE_RESULTS,
) -> list[AgentRecord]:
    """The scored trajectories of the newest ``limit`` offline agent runs ``viewer`` may
    see (None: all), at most ``max_results`` of them (newest runs first), so a page stays
    fast on a large store."""
    from arbiter.service.browse import list_runs
    from arbiter.store.browse_repository import ResultFilter, RunFilter, page_results

    records: list[AgentRecord] = []
    for info in list_runs(store, RunFilter(viewer=viewer), limit=limit).items:
        room = max_results - len(records)
        if room <= 0:
            break
        if not is_agent_run(info):
            continue
        results, _ = page_results(store, info.id, ResultFilter(), offset=0, limit=room)
        records += [r for r in (_offline(info, result) for result in results) if r is not None]
    return records


def _kind(kind: str) -> Kind:
    return "flow" if kind == "flow" else "agent"


def live_bars(detail: AgentDetail) -> list[DimensionBar]:
    """An agent's per-scorer figures (``/v1/agents/{name}``) as bars, one per dimension."""
    groups: dict[str, list[DimensionFigure]] = {}
    for figure in detail.dimensions:
        groups.setdefault(figure.dimension or figure.scorer, []).append(figure)
    bars = []
    for dimension, figures in groups.items():
        passed = sum(f.passed for f in figures)
        decided = passed + sum(f.failed for f in figures)
        low, high = wilson_interval(passed, decided) if decided else (None, None)
        bars.append(
            DimensionBar(
                dimension=dimension,
                scorers=tuple(sorted(f.scorer for f in figures)),
                decided=decided,
                passed=passed,
                abstained=sum(f.abstained + f.errored for f in figures),
                reviewed=sum(f.bands.get("review", 0) for f in figures),
                health=health_of(passed, decided),
                rate=passed / decided if decided else None,
                low=low,
                high=high,
            )
        )
    return sort_bars(bars)


def failing_checks(
    store: Store, agent: str, kind: str, *, viewer: str | None = None
) -> tuple[str, ...]:
    """The (at most three) scorers that failed an agent's stored runs most often."""
    from arbiter.store.trajectory_repository import score_tallies

    failures: dict[str, int] = {}
    for tally in score_tallies(store, agent, kind=kind, viewer=viewer):
        if tally.passed is False and not tally.errored:
            failures[tally.name] = failures.get(tally.name, 0) + tally.count
    return tuple(sorted(failures, key=lambda n: (-failures[n], n))[:3])


def live_card(
    summary: AgentSummary, *, offline_runs: int = 0, failing: tuple[str, ...] = ()
) -> RosterCard:
    """The roster entry of ``/v1/agents`` as a card."""
    rate = summary.pass_rate
    trend = summary.trend.delta if summary.trend.direction is not None else None
    return RosterCard(
        name=summary.name,
        kind=_kind(summary.kind),
        agent_class=None,
        runs=summary.runs,
        decided=summary.evaluated,
        passed=rate.passed if rate is not None else 0,
        health=summary.health,
        pass_rate=rate.estimate if rate is not None else None,
        low=rate.low if rate is not None else None,
        high=rate.high if rate is not None else None,
        spark=tuple(o for o in summary.recent if o is not None),
        trend=trend,
        last_seen=summary.last_seen,
        failing=failing,
        live=True,
        offline_runs=offline_runs,
    )


def roster_cards(
    store: Store, *, viewer: str | None = None
) -> tuple[list[RosterCard], list[AgentRecord]]:
    """Every agent's card ``viewer`` may see (None: all), worst health first, and the
    offline records read for them.

    An agent with stored trajectories gets its live card (the REST roster's figures);
    one known only from offline runs gets a card of those.
    """
    from arbiter.service.agent_roster import agent_roster

    offline = agent_records(store, viewer=viewer)
    counts: dict[tuple[str, str], int] = {}
    for r in offline:
        counts[(r.agent, r.kind)] = counts.get((r.agent, r.kind), 0) + 1
    live = [
        live_card(
            s,
            offline_runs=counts.get((s.name, _kind(s.kind)), 0),
            failing=failing_checks(store, s.name, s.kind, viewer=viewer),
        )
        for s in agent_roster(store, viewer=viewer)
    ]
    known = {(c.name, c.kind) for c in live}
    others = roster(r for r in offline if (r.agent, r.kind) not in known)
    return worst_first([*live, *others]), offline


def previous_run(
    store: Store, current: AgentRecord, *, viewer: str | None = None
) -> AgentRecord | None:
    """The run to compare ``current`` with: the same agent's run stored just before it
    (live), or another run of the same case, else the agent's run before it (offline)."""
    if current.live:
        from arbiter.store.trajectory_repository import list_trajectories

        kind = "flow" if current.kind == "flow" else "trajectory"
        found, _ = list_trajectories(
            store, agent=current.agent, kind=kind, viewer=viewer, limit=200
        )
        ids = [s.id for s in found]
        if current.id in ids and ids.index(current.id) + 1 < len(ids):
            return stored_record(found[ids.index(current.id) + 1])
        return None
    mine = [
        r
        for r in agent_records(store, viewer=viewer)
        if r.agent == current.agent and r.kind == current.kind and r.id != current.id
    ]
    same_case = [r for r in mine if r.case_id == current.case_id]
    if same_case:
        return same_case[0]
    older = [r for r in mine if r.at <= current.at]
    return older[-1] if older else None


def record(store: Store, value: str, *, viewer: str | None = None) -> AgentRecord | None:
    """The record ``value`` names (a stored trajectory's id, or an offline record's), if
    ``viewer`` may see it (None: all)."""
    ref = parse_record_id(value)
    if ref is None:
        from arbiter.store.trajectory_repository import get_trajectory

        stored = get_trajectory(store, value, viewer=viewer)
        return stored_record(stored) if stored is not None else None
    from arbiter.service.browse import find_run

    try:
        info = find_run(store, ref.run_id, viewer=viewer)
    except StoreError:
        return None
    if info.id != ref.run_id:  # a prefix found it: ids are exact here
        return None
    for result in store.results(info.id):
        if result.example_id == ref.case_id and result.repetition == ref.repetition:
            return _offline(info, result)
    return None
