"""The OTLP ingest's buffer lives in the store: every ingest over one store (every server
process) pairs any trace, with the bounds enforced in SQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from sqlalchemy import inspect, text

from arbiter.contract import StoredTrajectory
from arbiter.service.trace_ingest import TraceIngest
from arbiter.service.trajectories import AgentRunScoring, agent_run_scoring
from arbiter.store import Store
from arbiter.store.otlp_buffer_repository import TraceArrivals, keep_if_current, take_arrivals
from arbiter.store.trajectory_repository import list_trajectories
from tests.conftest import POSTGRES_URL
from tests.helpers import otlp_json as otlp

A, B = (f"{n:032x}" for n in (0xA1, 0xB2))
JSON = "application/json"


class Clock:
    """Seconds that move only when a test says."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def scoring() -> AgentRunScoring:
    return agent_run_scoring()


def _body(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


async def _spans(
    ingest: TraceIngest, trace: str, *spans: Any, owner: str = "k1"
) -> list[StoredTrajectory]:
    found = spans or tuple(otlp.agent_spans(trace))
    return (await ingest.export(_body(otlp.traces(*found)), JSON, owner=owner)).stored


async def _logs(ingest: TraceIngest, trace: str, *records: Any) -> list[StoredTrajectory]:
    found = records or tuple(otlp.tool_call_logs(trace))
    report = await ingest.export(_body(otlp.logs(*found)), JSON, kind="logs", owner="k1")
    return report.stored


def _tools(run: StoredTrajectory) -> list[str]:
    assert run.trajectory is not None
    return [call.name for call in run.trajectory.tool_calls]


def _stored(store: Store) -> list[StoredTrajectory]:
    records, _ = list_trajectories(store, offset=0, limit=100)
    return records


@pytest.mark.parametrize("logs_first", [False, True])
async def test_spans_taken_by_one_ingest_pair_with_logs_taken_by_another(
    store: Store, scoring: AgentRunScoring, logs_first: bool
) -> None:
    clock = Clock()
    first, second = (TraceIngest(store, scoring, clock=clock) for _ in range(2))
    if logs_first:
        assert await _logs(second, A) == []
        [run] = await _spans(first, A)
    else:
        [alone] = await _spans(first, A)
        assert _tools(alone) == []
        [run] = await _logs(second, A)
        assert run.id == alone.id
    assert _tools(run) == ["get_order"]
    [kept] = _stored(store)
    assert kept.id == run.id
    assert _tools(kept) == ["get_order"]
    assert first.buffered == second.buffered == 1


async def test_a_trace_read_back_from_the_store_imports_as_the_same_run(
    store: Store, scoring: AgentRunScoring
) -> None:
    # The same trace, whole to one ingest, and in two batches (the second read back from
    # the store) to two others: one run, the same hash, the same score set.
    spans = otlp.agent_spans(A)
    spans[1]["attributes"] += otlp.attributes(
        {"nested": {"list": [1, 2.5, True, "ü\u0000"], "n": -(2**62)}, "empty": []}
    )
    spans[1]["events"] = [
        {"timeUnixNano": str(otlp.T0 + 5), "name": "note", "attributes": otlp.attributes({"x": 1})}
    ]
    [whole] = await _spans(TraceIngest(store, scoring), A, *spans, owner="k1")
    first, second = TraceIngest(store, scoring), TraceIngest(store, scoring)
    await _spans(first, A, spans[1], spans[2], owner="k2")
    [split] = await _spans(second, A, spans[0], owner="k2")
    assert split.id != whole.id  # another key's run of the same trace
    assert split.trajectory_hash == whole.trajectory_hash
    assert split.trajectory == whole.trajectory
    assert [(s.name, s.passed) for s in split.scores] == [(s.name, s.passed) for s in whole.scores]


async def test_the_age_bound_holds_across_ingests(store: Store, scoring: AgentRunScoring) -> None:
    clock = Clock()
    first = TraceIngest(store, scoring, max_age_s=60, clock=clock)
    second = TraceIngest(store, scoring, max_age_s=60, clock=clock)
    await _logs(first, A)
    await _logs(first, B)
    clock.now += 30
    [within] = await _spans(second, B)
    assert _tools(within) == ["get_order"]  # 30 s old: still buffered
    clock.now += 31
    [run] = await _spans(second, A)
    assert _tools(run) == []  # 61 s old: the log records expired before the spans came
    assert second.buffered == 2


async def test_the_count_bound_drops_the_least_recently_touched_trace(
    store: Store, scoring: AgentRunScoring
) -> None:
    clock = Clock()
    first = TraceIngest(store, scoring, max_traces=1, clock=clock)
    second = TraceIngest(store, scoring, max_traces=1, clock=clock)
    await _logs(first, A)
    clock.now += 1
    await _spans(second, B)
    assert first.buffered == 1
    clock.now += 1
    [run] = await _spans(first, A)
    assert _tools(run) == []


def _arrivals(spans: dict[str, str], logs: dict[str, str]) -> dict[str, TraceArrivals]:
    return {A: TraceArrivals(spans=spans, logs=logs)}


def _take(store: Store, arrivals: dict[str, TraceArrivals], **bounds: Any) -> Any:
    limits = {"now": 0.0, "max_age_s": 60.0, "max_traces": 10, "max_items": 2} | bounds
    return take_arrivals(store, arrivals, owner=None, **limits)[A]


def test_a_trace_keeps_at_most_max_items_spans_and_as_many_log_records(store: Store) -> None:
    _take(store, _arrivals({"s1": "1", "s2": "2", "s3": "3"}, {"l1": "a"}))
    # A span sent again replaces its payload in its place, even in a full trace; a log
    # record sent again is ignored; what is past the bound is dropped.
    trace = _take(store, _arrivals({"s3": "3", "s1": "1b"}, {"l1": "a2", "l2": "b", "l3": "c"}))
    assert trace.spans == [("s1", None), ("s2", "2")]
    assert trace.logs == [("l1", "a"), ("l2", None)]
    assert trace.token[1] == 2
    again = _take(store, _arrivals({}, {"l9": "z"}))
    assert again.spans == [("s1", "1b"), ("s2", "2")]
    assert again.logs == [("l1", "a"), ("l2", "b")]


def test_runs_of_a_trace_touched_since_their_import_are_left_to_the_later_request(
    store: Store,
) -> None:
    earlier = _take(store, _arrivals({"s1": "1"}, {}))
    later = _take(store, _arrivals({"s2": "2"}, {}))
    saved: list[list[str]] = []
    keep_if_current(store, {A: (earlier.token, ["r1"])}, lambda c, _: saved.append(c), owner=None)
    assert saved == []
    calls: list[tuple[list[str], set[str]]] = []
    keep_if_current(
        store, {A: (later.token, ["r2"])}, lambda c, s: calls.append((c, s)), owner=None
    )
    assert calls == [([A], set())]
    # The next import that gives other runs replaces those it gave before.
    last = _take(store, _arrivals({"s3": "3"}, {}))
    keep_if_current(store, {A: (last.token, ["r3"])}, lambda c, s: calls.append((c, s)), owner=None)
    assert calls[-1] == ([A], {"r2"})


def test_a_store_opened_without_the_buffer_tables_gains_them(store: Store) -> None:
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE otlp_pending_items"))
        connection.execute(text("DROP TABLE otlp_pending_traces"))
    assert "otlp_pending_traces" not in inspect(store.engine).get_table_names()
    reopened = Store(store.url)
    try:
        names = inspect(reopened.engine).get_table_names()
        assert {"otlp_pending_traces", "otlp_pending_items"} <= set(names)
    finally:
        reopened.close()


@pytest.mark.skipif(
    not POSTGRES_URL, reason="no PostgreSQL server: set ARBITER_TEST_POSTGRES_URL (.ci/run does)"
)
@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_ingests_racing_on_one_trace_store_the_run_of_all_its_items(
    store: Store, scoring: AgentRunScoring
) -> None:
    # Several ingests (as server processes are) take batches of the same traces at the
    # same moment, each on its own connection: the run last stored of each trace is the
    # import of all its spans and log records, never an older one landing after it.
    traces = [f"{0xF00 + n:032x}" for n in range(6)]
    batches: list[tuple[str, Any]] = []
    for trace in traces:
        spans, records = otlp.agent_spans(trace), otlp.tool_call_logs(trace)
        batches += [("traces", otlp.traces(span)) for span in spans]
        batches += [("logs", otlp.logs(record)) for record in records]
    lanes = [batches[i::4] for i in range(4)]
    barrier = threading.Barrier(len(lanes))
    failures: list[BaseException] = []

    def lane(work: list[tuple[str, Any]]) -> None:
        ingest = TraceIngest(store, scoring)
        barrier.wait()
        try:
            for kind, document in work:
                asyncio.run(ingest.export(_body(document), JSON, kind=kind, owner="k1"))  # type: ignore[arg-type]
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=lane, args=(work,)) for work in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stored = _stored(store)
    assert sorted(run.trace_id or "" for run in stored) == traces
    for run in stored:
        assert _tools(run) == ["get_order"]
        assert run.trajectory is not None
        assert run.trajectory.final_answer == "Order 77 has shipped."


def test_a_trace_touched_after_the_age_bound_starts_again_empty(store: Store) -> None:
    _take(store, {A: TraceArrivals(spans={"s1": "1"}, logs={"l1": "a"}, reject="malformed")})
    within = _take(store, _arrivals({"s2": "2"}, {}), now=59.0)
    assert within.rejected_before == "malformed"
    later = _take(store, _arrivals({"s3": "3"}, {}), now=120.5)
    assert later.rejected_before is None
    assert later.spans == [("s3", None)]
    assert later.logs == []
