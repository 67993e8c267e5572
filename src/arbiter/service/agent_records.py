"""The scored agent runs the agent pages show, read from the store as :class:`AgentRecord`.

Two sources, told apart on the pages:

- **live**: the stored trajectories (``POST /v1/trajectories``, OTLP ingest, the demo's
  samples), whose figures the database counts
  (:func:`~arbiter.service.agent_roster.agent_roster`, ``agent_detail``); a record's id
  is the stored run's (``tr-...``);
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

from arbiter.contract import FlowRun, PairResult, RunInfo, RunKind, StoredTrajectory, Trajectory
from arbiter.errors import StoreError
from arbiter.service.agent_roster import (
    AgentRecord,
    AgentSummary,
    RosterCard,
    summary_of,
    worst_first,
)
from arbiter.store import Store

__all__ = [
    "MAX_AGENT_RUNS",
    "MAX_OFFLINE_RESULTS",
    "RecordRef",
    "agent_records",
    "failing_checks",
    "is_agent_run",
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
    duration: float | None
    try:
        duration = run.duration
    except TypeError:  # zoned and zoneless times mixed: no honest duration
        duration = None
    flow = isinstance(run, FlowRun)
    at = info.finished_at or info.created_at
    return AgentRecord(
        id=record_id(info.id, result.repetition, result.example_id),
        agent=_agent_name(run, info),
        kind="flow" if flow else "trajectory",
        run=run,
        scores=tuple(result.scores),
        passed=result.passed,
        at=at if at.tzinfo is not None else at.replace(tzinfo=UTC),
        status=run.status,
        agent_class=run.agent.agent_class,
        source=f"run {info.id}",
        case_id=result.example_id,
        cost_usd=run.cost_usd if isinstance(run, FlowRun) else run.totals().cost_usd,
        duration_ms=duration,
        total_tokens=None if isinstance(run, FlowRun) else run.totals().total_tokens,
        trace_id=run.source.trace_id if run.source is not None else None,
    )


def stored_record(stored: StoredTrajectory) -> AgentRecord | None:
    """A stored trajectory as a page record; None when it holds no run."""
    found = AgentRecord.of_stored(stored)
    return found if found.run is not None else None


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
    from arbiter.store.browse_repository import ResultFilter, RunFilter
    from arbiter.store.result_pages import page_results

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


def failing_checks(store: Store, agent: str, kind: str, *, viewer: str | None = None) -> list[str]:
    """The (at most three) scorers that failed an agent's stored runs most often."""
    from arbiter.store.trajectory_repository import score_tallies

    failures: dict[str, int] = {}
    for tally in score_tallies(store, agent, kind=kind, viewer=viewer):
        if tally.passed is False and not tally.errored:
            failures[tally.name] = failures.get(tally.name, 0) + tally.count
    return sorted(failures, key=lambda n: (-failures[n], n))[:3]


def live_card(
    summary: AgentSummary, *, offline_runs: int = 0, failing: list[str] | None = None
) -> RosterCard:
    """A roster entry of the stored trajectories (``/v1/agents``) as a page's card."""
    fields = summary.model_dump(include=set(AgentSummary.model_fields))
    return RosterCard(**fields, failing=failing or [], live=True, offline_runs=offline_runs)


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
    groups: dict[tuple[str, RunKind], list[AgentRecord]] = {}
    for r in offline:
        groups.setdefault((r.agent, r.kind), []).append(r)
    live = [
        live_card(
            s,
            offline_runs=len(groups.get((s.name, s.kind), ())),
            failing=failing_checks(store, s.name, s.kind, viewer=viewer),
        )
        for s in agent_roster(store, viewer=viewer)
    ]
    known = {(c.name, c.kind) for c in live}
    others = [summary_of(runs) for key, runs in groups.items() if key not in known]
    return worst_first([*live, *others]), offline


def previous_run(
    store: Store, current: AgentRecord, *, viewer: str | None = None
) -> AgentRecord | None:
    """The run to compare ``current`` with: the same agent's run stored just before it
    (live), or another run of the same case, else the agent's run before it (offline)."""
    if current.live:
        from arbiter.store.trajectory_repository import list_trajectories

        found, _ = list_trajectories(
            store, agent=current.agent, kind=current.kind, viewer=viewer, limit=200
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
