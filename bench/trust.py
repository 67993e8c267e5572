"""Speed of the trust loop: fleet status, the breaker on ingest, a policy backtest.

Run: ``python bench/trust.py [--quick]``. A benchmark, never a test: it prints, it does
not assert. Each part seeds a SQLite store in a temporary directory with raw rows (the
tables ``POST /v1/trajectories`` writes), then times the service call.

1. Status: ``trust_statuses`` of 1,000 agents over 1,000,000 stored scored runs (each
   with one trust-critical score). Target <= 2 s. The rows are seeded raw, as a store
   made before the trust summaries holds them, so their one-time build from the rows
   (what such a store pays on first use) is timed and printed apart; then the status
   from the summaries, beside the status from the rows (``from_rows=True``, the way it
   was computed before: the same-process baseline) and at a tenth of the size.
2. Breaker: ``evaluate_breaker`` after one more stored run of an agent with 500 runs,
   1,000 times (the store write not timed): p50 / p99 in ms, wall clock and CPU time,
   beside the first way of deciding (the same-process baseline). Target p99 <= 1 ms
   added to ``POST /v1/trajectories``;
   printed beside that route's own p50 / p99 in-process.
3. Backtest: ``run_backtest`` of a stricter policy and band line over 100,000 stored
   runs. Target <= 10 s.

``--quick`` divides every size by 10.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Table, select

from arbiter.config import Settings
from arbiter.service.backtest import parse_thresholds, run_backtest
from arbiter.service.trust import evaluate_breaker, trust_statuses
from arbiter.store import Store
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.store.trust_repository import load_breaker, trust_evidence
from arbiter.store.trust_summary import ensure_summaries
from arbiter.trust import TrustPolicy, assess

START = datetime(2026, 5, 1, tzinfo=UTC)
RUNS: Table = TrajectoryRow.__table__  # type: ignore[assignment]
SCORES: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]


def seed(store: Store, agents: int, runs: int) -> None:
    """``runs`` runs spread over ``agents`` agents, each with a cost and a scope score."""
    batch_runs: list[dict[str, object]] = []
    batch_scores: list[dict[str, object]] = []
    with store.engine.begin() as connection:
        for seq in range(1, runs + 1):
            agent = f"agent-{seq % agents:04d}"
            passed = (seq * 7919) % 10 != 0
            batch_runs.append(
                {
                    "seq": seq,
                    "id": f"tr-{seq:024d}",
                    "schema_version": 1,
                    "created_at": START + timedelta(seconds=seq),
                    "kind": "trajectory",
                    "agent": agent,
                    "agent_class": None,
                    "source_format": "trajectory",
                    "trace_id": None,
                    "trajectory_hash": "sha256:0",
                    "status": "completed",
                    "passed": passed,
                    "band": "healthy" if passed else "danger",
                    "cost_usd": 0.01 if passed else 0.5,
                    "duration_ms": None,
                    "record": {},
                }
            )
            batch_scores.append(
                {
                    "trajectory_seq": seq,
                    "agent": agent,
                    "name": "cost",
                    "passed": passed,
                    "band": "healthy" if passed else "danger",
                    "errored": False,
                    "value": 0.01 if passed else 0.5,
                }
            )
            batch_scores.append(
                {
                    "trajectory_seq": seq,
                    "agent": agent,
                    "name": "scope_adherence",
                    "passed": passed,
                    "band": None,
                    "errored": False,
                    "value": 1.0,
                }
            )
            if len(batch_runs) >= 20_000:
                connection.execute(RUNS.insert(), batch_runs)
                connection.execute(SCORES.insert(), batch_scores)
                batch_runs, batch_scores = [], []
        if batch_runs:
            connection.execute(RUNS.insert(), batch_runs)
            connection.execute(SCORES.insert(), batch_scores)
    # One stored cost score carries the metric key the backtest reads.
    with store.engine.begin() as connection:
        connection.execute(
            RUNS.update()
            .where(RUNS.c.seq == runs)
            .values(
                record={"scores": [{"name": "cost", "metadata": {"threshold_key": "max_cost_usd"}}]}
            )
        )


CPU: list[float] = []
"""The process CPU time of each ``timed`` call, in seconds (the wall clock of a shared
machine counts the other processes' load too)."""


def timed(call: object) -> tuple[float, object]:
    started, started_cpu = time.perf_counter(), time.process_time()
    result = call()  # type: ignore[operator]
    CPU.append(time.process_time() - started_cpu)
    return time.perf_counter() - started, result


def bench_status(folder: Path, agents: int, runs: int) -> None:
    for size in (runs // 10, runs):
        store = Store(f"sqlite:///{folder / f'status-{size}.db'}")
        seed(store, agents, size)
        now = START + timedelta(seconds=size + 1)
        bare, _ = timed(
            lambda s=store: (
                s.engine.connect()
                .execute(
                    select(RUNS.c.seq, RUNS.c.id, RUNS.c.agent, RUNS.c.created_at, RUNS.c.passed)
                )
                .all()
            )
        )
        built, _ = timed(lambda s=store: ensure_summaries(s))
        print(
            f"  one-time build of the summaries from {size:,} rows: {built:.2f} s "
            f"(CPU {CPU[-1]:.2f} s)"
        )
        rows, _ = timed(
            lambda s=store, t=now: trust_statuses(s, policy=TrustPolicy(), now=t, from_rows=True)
        )
        rows_cpu = CPU[-1]
        best = []
        for _ in range(2):
            seconds, statuses = timed(
                lambda s=store, t=now: trust_statuses(s, policy=TrustPolicy(), now=t)
            )
            best.append((CPU[-1], seconds))
        cpu, seconds = min(best)
        print(
            f"status: {agents_seen(statuses):,} agents over {size:,} runs: {seconds:.2f} s "
            f"(CPU {cpu:.2f} s, best of 2) "
            f"({seconds / bare:.1f}x a bare read of the runs, {bare:.2f} s); "
            f"from the rows: {rows:.2f} s (CPU {rows_cpu:.2f} s), {rows_cpu / cpu:.1f}x the CPU"
        )
        store.close()


def agents_seen(statuses: object) -> int:
    """How many statuses a call gave."""
    return len(statuses) if isinstance(statuses, list) else 0


def bench_breaker(folder: Path, history: int, calls: int) -> None:
    store = Store(f"sqlite:///{folder / 'breaker.db'}")
    seed(store, 1, history)
    from arbiter.contract import StoredTrajectory

    record = StoredTrajectory(
        id=f"tr-{history:024d}",
        created_at=START,
        kind="trajectory",
        agent="agent-0000",
        source_format="trajectory",
        trajectory_hash="sha256:0",
        status="completed",
        passed=True,
        band="healthy",
    )
    settings = Settings(_env_file=None, trust_webhook_urls="")
    policy = TrustPolicy(breaker_mode="freeze")

    cpu: list[float] = []

    async def go() -> list[float]:
        times = []
        for index in range(calls):
            # One more run stored (not timed), as an ingest does before the breaker runs.
            fresh = record.model_copy(
                update={"id": f"tr-new-{index:020d}", "passed": index % 10 != 0}
            )
            save_trajectories(store, [fresh])
            started, started_cpu = time.perf_counter(), time.thread_time()
            await evaluate_breaker(store, [fresh], owner=None, policy=policy, settings=settings)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
        return times

    times = sorted(asyncio.run(go()))
    cpu.sort()
    reference = []
    for _ in range(calls):
        started_cpu = time.thread_time()
        _reference_decision(store, "agent-0000", policy)
        reference.append((time.thread_time() - started_cpu) * 1000)
    reference.sort()
    p50, p99 = statistics.median(times), times[int(len(times) * 0.99) - 1]
    print(
        f"breaker: {calls:,} decisions on an agent of {history:,} runs: "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms wall clock; "
        f"CPU time of the thread p50 {statistics.median(cpu):.2f} ms, "
        f"p99 {cpu[int(len(cpu) * 0.99) - 1]:.2f} ms (what a shared machine's load leaves out)"
    )
    ratio = statistics.median(reference) / statistics.median(cpu)
    print(
        f"  baseline, the full read and status (trust_evidence + assess), CPU time: "
        f"p50 {statistics.median(reference):.2f} ms, "
        f"p99 {reference[int(len(reference) * 0.99) - 1]:.2f} ms; "
        f"the breaker's decision is {ratio:.1f}x faster at p50"
    )
    route = _route_latency(folder, calls // 5)
    print(
        "  POST /v1/trajectories in-process (breaker included): "
        f"p50 {route[0]:.2f} ms, p99 {route[1]:.2f} ms"
    )
    store.close()


def _reference_decision(store: Store, agent: str, policy: TrustPolicy) -> str:
    """The decision's state the way it was first computed: every evidence field read
    through ``trust_evidence`` and a full ``assess`` (the same-process baseline)."""
    evidence = trust_evidence(
        store,
        names=policy.trust_critical,
        agent=agent,
        owner=None,
        window=policy.window_runs,
        count_abstained=False,
    )
    now = datetime.now(UTC)
    state = assess(agent, evidence.get((None, agent), []), policy, now=now).state
    load_breaker(store, None, agent)
    return state


def _route_latency(folder: Path, calls: int) -> tuple[float, float]:
    from fastapi.testclient import TestClient

    from arbiter.server.app import create_app

    store = Store(f"sqlite:///{folder / 'route.db'}")
    app = create_app(Settings(home=folder / "home"), store=store)
    body = {
        "trajectory": {
            "agent": {"name": "bench"},
            "status": "completed",
            "steps": [{"kind": "llm_call", "model": "m", "cost_usd": 0.01}],
        }
    }
    times = []
    with TestClient(app) as client:
        for _ in range(calls):
            started = time.perf_counter()
            client.post("/v1/trajectories", json=body)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    store.close()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def bench_backtest(folder: Path, runs: int) -> None:
    store = Store(f"sqlite:///{folder / 'backtest.db'}")
    seed(store, 100, runs)
    strict = TrustPolicy(
        at_risk_floor=0.9, healthy_floor=0.95, trusted_floor=0.99, breaker_mode="freeze"
    )
    lines = parse_thresholds({"max_cost_usd": {"healthy": 0.005, "danger": 0.3}})
    now = START + timedelta(seconds=runs + 1)
    seconds, report = timed(
        lambda: run_backtest(store, strict, current=TrustPolicy(), thresholds=lines, now=now)
    )
    print(
        f"backtest: {report.runs:,} runs, {report.agents} agents: {seconds:.2f} s "  # type: ignore[attr-defined]
        f"(CPU {CPU[-1]:.2f} s) "
        f"({report.runs_changing_band:,} runs change band, "  # type: ignore[attr-defined]
        f"{report.agents_changing_state} agents change state, {report.trips_proposed} trips)"  # type: ignore[attr-defined]
    )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="every size divided by 10")
    parser.add_argument("--only", choices=["status", "breaker", "backtest"])
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.only in (None, "status"):
            bench_status(folder, 1_000, 1_000_000 // scale)
        if args.only in (None, "breaker"):
            bench_breaker(folder, 500, 1_000 // scale)
        if args.only in (None, "backtest"):
            bench_backtest(folder, 100_000 // scale)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
