"""The scored agent runs the agent pages show, read from the store.

Today they come from the offline agent runs (``arbiter agent run``): a stored run whose
system is an agent executor holds one trajectory (or flow run) per (case, repetition),
with its scores and verdict. Such a record's id is ``run:{run_id}:{repetition}:{case}``.

A record's agent is the trajectory's own agent name, else the run's name, else the case
file's name, so a roster of runs that never named their agent still groups them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Literal

from arbiter.contract import FlowRun, PairResult, RunInfo, Trajectory
from arbiter.errors import StoreError
from arbiter.server.agents_view import AgentRecord
from arbiter.store import Store

__all__ = [
    "MAX_AGENT_RUNS",
    "RecordRef",
    "agent_records",
    "is_agent_run",
    "parse_record_id",
    "record",
    "record_id",
]

MAX_AGENT_RUNS = 200
"""Newest stored agent runs the roster reads."""

_PREFIX = "run"


@dataclass(frozen=True)
class RecordRef:
    """Where a record lives: a stored run's (case, repetition)."""

    run_id: str
    repetition: int
    case_id: str


def record_id(run_id: str, repetition: int, case_id: str) -> str:
    """The id of an offline run's record: ``run:{run_id}:{repetition}:{case}``."""
    return f"{_PREFIX}:{run_id}:{repetition}:{case_id}"


def parse_record_id(value: str) -> RecordRef | None:
    """The reference a record id names; None when it is not one of ours.

    Examples:
        >>> parse_record_id("run:20260101-000000-abcdef:2:case:with:colons")
        RecordRef(run_id='20260101-000000-abcdef', repetition=2, case_id='case:with:colons')
        >>> parse_record_id("nonsense") is None
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


def _record(info: RunInfo, result: PairResult) -> AgentRecord | None:
    output = result.output
    run: Trajectory | FlowRun | None = None
    if output is not None:
        run = output.trajectory if output.trajectory is not None else output.flow
    if run is None:
        return None
    kind: Literal["agent", "flow"] = "flow" if isinstance(run, FlowRun) else "agent"
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


def agent_records(store: Store, *, limit: int = MAX_AGENT_RUNS) -> list[AgentRecord]:
    """Every scored trajectory of the newest ``limit`` stored agent runs."""
    records: list[AgentRecord] = []
    for info in store.list_runs(limit=limit):
        if not is_agent_run(info):
            continue
        for result in store.results(info.id):
            found = _record(info, result)
            if found is not None:
                records.append(found)
    return records


def record(store: Store, value: str) -> AgentRecord | None:
    """The record ``value`` names; None when there is none."""
    ref = parse_record_id(value)
    if ref is None:
        return None
    try:
        info = store.get_run(ref.run_id)
    except StoreError:
        return None
    for result in store.results(info.id):
        if result.example_id == ref.case_id and result.repetition == ref.repetition:
            return _record(info, result)
    return None
