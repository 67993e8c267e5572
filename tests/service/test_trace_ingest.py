"""The OTLP ingest buffer: spans and log records paired per trace, bounded in count and age."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.contract import StoredTrajectory
from arbiter.service.trace_ingest import TraceIngest
from arbiter.service.trajectories import AgentRunScoring, agent_run_scoring
from arbiter.store import Store
from tests.helpers import otlp_json as otlp

A, B, C = (f"{n:032x}" for n in (0xA1, 0xB2, 0xC3))
JSON = "application/json"


class Clock:
    """Seconds that move only when a test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def scoring() -> AgentRunScoring:
    return agent_run_scoring()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path / 'ingest.db'}")
    yield opened
    opened.close()


def _body(document: dict[str, object]) -> bytes:
    return json.dumps(document).encode()


async def _traces(ingest: TraceIngest, trace: str) -> list[StoredTrajectory]:
    report = await ingest.export(_body(otlp.traces(*otlp.agent_spans(trace))), JSON)
    return report.stored


async def _logs(ingest: TraceIngest, trace: str) -> None:
    report = await ingest.export(_body(otlp.logs(*otlp.tool_call_logs(trace))), JSON, kind="logs")
    assert report.stored == []  # nothing to store until the spans come


def _tools(run: StoredTrajectory) -> list[str]:
    assert run.trajectory is not None
    return [call.name for call in run.trajectory.tool_calls]


async def test_log_records_wait_for_their_spans(store: Store, scoring: AgentRunScoring) -> None:
    ingest = TraceIngest(store, scoring, clock=Clock())
    await _logs(ingest, A)
    assert ingest.buffered == 1
    [run] = await _traces(ingest, A)
    assert _tools(run) == ["get_order"]


async def test_log_records_older_than_the_age_bound_are_dropped(
    store: Store, scoring: AgentRunScoring
) -> None:
    clock = Clock()
    ingest = TraceIngest(store, scoring, max_age_s=60, clock=clock)
    await _logs(ingest, A)
    clock.now = 61.0
    [run] = await _traces(ingest, A)
    assert _tools(run) == []
    assert ingest.buffered == 1  # the trace's own entry, fresh


async def test_the_least_recently_touched_trace_leaves_a_full_buffer(
    store: Store, scoring: AgentRunScoring
) -> None:
    ingest = TraceIngest(store, scoring, max_traces=2, clock=Clock())
    await _logs(ingest, A)
    await _traces(ingest, B)
    await _traces(ingest, C)
    assert ingest.buffered == 2
    [run] = await _traces(ingest, A)
    assert _tools(run) == []


async def test_a_trace_gaining_log_records_is_stored_again_under_the_same_id(
    store: Store, scoring: AgentRunScoring
) -> None:
    ingest = TraceIngest(store, scoring, clock=Clock())
    [first] = await _traces(ingest, A)
    report = await ingest.export(_body(otlp.logs(*otlp.tool_call_logs(A))), JSON, kind="logs")
    [second] = report.stored
    assert second.id == first.id
    assert _tools(second) == ["get_order"]
    # The same log records again (an exporter's retry) change nothing.
    again = await ingest.export(_body(otlp.logs(*otlp.tool_call_logs(A))), JSON, kind="logs")
    assert [run.trajectory_hash for run in again.stored] == [second.trajectory_hash]
