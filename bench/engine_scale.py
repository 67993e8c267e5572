"""The engines side by side: local vs Ray, CPU-bound and I/O-bound work, and a big run.

Run: ``python bench/engine_scale.py [--quick] [--big N]`` (needs the ray extra).

(a) CPU-bound: 20,000 agent runs (``trajectory_speed.py``'s OTLP traces: 20 spans each)
    scored by every deterministic trajectory scorer, as ``arbiter agent score --engine``
    scores them (:class:`~arbiter.service.agent_work.AgentScoreWork`): on the local
    engine, then on a local Ray cluster of one worker, then of two. Targets: Ray with one
    worker at most 1.25x local's wall time (the engine's overhead), Ray with two at least
    1.6x faster than local.
(b) I/O-bound: 20,000 examples through an HTTP system that answers after 50 ms
    (``harness_throughput.py``'s service, in a child process), ``--concurrency 200``
    shared by the cluster's two workers (one limit, a Ray actor), results written to a
    SQLite store by the driver. Target: wall time at most 1.3x the ideal
    (``n x 0.05 / 200`` = 5 s). The local engine's run of the same, first, shows what
    this machine allows.
(c) Big: ``--big N`` examples (default 1,000,000) through an instant Python system on
    Ray (two workers), stored in SQLite: completes?, the driver's peak RSS, examples/s.

Each Ray figure includes the batches' trips to the workers and back; none includes
starting the cluster (printed apart). Wall times, on a machine other agents share: the
ratios are of runs made one after the other in this process. A benchmark, never a test:
it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CPU_N = 20_000
IO_N = 20_000
IO_CONCURRENCY = 200
BIG_N = 1_000_000
OVERHEAD_TARGET = 1.25
SPEEDUP_TARGET = 1.6
IO_TARGET = 1.3


def instant(inputs: dict[str, Any]) -> str:
    """The big run's system: answers at once."""
    return str(inputs.get("q", ""))


def _ray_engine(cpus: int) -> Any:
    from arbiter.engines.ray import RayEngine

    started = time.perf_counter()
    engine = RayEngine("local", num_cpus=cpus, node_ip="127.0.0.2")
    engine.open()
    print(f"  (a local cluster of {cpus} CPU(s) started in {time.perf_counter() - started:.1f} s)")
    return engine


def _timed(run: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = asyncio.run(run())
    return time.perf_counter() - started, result


class BeforeWork:
    """The agent work as it was before it shipped less (kept to compare, ``--before``):
    each run sent whole (the pydantic trajectory and the importer's scores, pickled by
    Ray), each run's case and scores sent back as objects."""

    def __init__(self, scorers: Any, *, specs: Any) -> None:
        self.scorers, self.specs = scorers, list(specs)

    @property
    def concurrency(self) -> int:
        return 1

    @property
    def limit_key(self) -> str | None:
        return None

    def key(self, item: Any) -> str:
        from arbiter.service.agent_work import run_key

        return run_key(item[1])

    def portable(self) -> BeforeWork:
        return BeforeWork(None, specs=self.specs)

    def limited(self, concurrency: int) -> BeforeWork:
        return self

    async def run(self, items: Any, emit: Any) -> None:
        from arbiter.service.agents import score_runs
        from arbiter.service.scoring import scorer_registry

        scorers = self.scorers or scorer_registry().build_all(self.specs)
        for index, run in items:
            (scored,) = await score_runs([run], scorers)
            await emit((index, scored.example, scored.scores))


async def score_before(engine: Any, runs: Any, scorers: Any) -> Any:
    """``score_agent_runs_on`` as it was: :class:`BeforeWork`, then the same report."""
    from arbiter.service.agents import ScoredRun, summarize

    found: list[Any] = [None] * len(runs)

    async def keep(item: Any) -> None:
        index, example, scores = item
        run = runs[index]
        found[index] = ScoredRun(run=run, example=example, imported=list(run.scores), scores=scores)

    work = BeforeWork(scorers, specs=[s.spec for s in scorers])
    await engine.run(work, enumerate(runs), keep)
    return summarize(found, scorers)


def _cluster_cpu() -> dict[int, tuple[bool, float]]:
    """CPU seconds so far of every process this one started (a local cluster's), and
    whether each is a Ray worker (the rest: Ray's own daemons)."""
    import psutil  # type: ignore[import-untyped]

    seconds = {}
    for process in psutil.Process().children(recursive=True):
        try:
            times, name = process.cpu_times(), process.name()
        except psutil.Error:  # gone meanwhile
            continue
        seconds[process.pid] = (name.startswith("ray::"), times.user + times.system)
    return seconds


def _cpu_since(before: dict[int, tuple[bool, float]]) -> tuple[float, float]:
    """CPU seconds the Ray workers, and the other processes this one started, used since
    ``before``."""
    workers = rest = 0.0
    for pid, (worker, now) in _cluster_cpu().items():
        used = now - before.get(pid, (worker, 0.0))[1]
        if worker:
            workers += used
        else:
            rest += used
    return workers, rest


def cpu_bound(n: int, *, before: bool = False, repeat: int = 1) -> dict[str, Any]:
    """(a): the same scoring on local, Ray x1, Ray x2 (each the best of ``repeat``);
    with ``before``, the work as it was beside it, on the same clusters, alternately."""
    from trajectory_speed import build_scorers, write_traces

    from arbiter.engines.local import LocalEngine
    from arbiter.service.agent_work import score_agent_runs_on
    from arbiter.trajectories.loader import load_runs

    folder = Path(tempfile.mkdtemp(prefix="engine-scale-"))
    path = folder / "traces.jsonl"
    write_traces(path, n)
    runs = load_runs([path])
    scorers, _ = build_scorers()
    # The runs read, set aside from the collector: the local command streams its runs
    # and never holds them, so the collector's passes over them are not its cost.
    gc.collect()
    gc.freeze()

    def now(engine: Any) -> Callable[[], Awaitable[Any]]:
        return lambda: score_agent_runs_on(engine, runs, scorers)

    def then(engine: Any) -> Callable[[], Awaitable[Any]]:
        return lambda: score_before(engine, runs, scorers)

    def best(run: Callable[[], Awaitable[Any]], name: str) -> tuple[float, str]:
        times, report = [], None
        for _ in range(repeat):
            driver, cluster = time.process_time(), _cluster_cpu()
            seconds, report = _timed(run)
            times.append(seconds)
            cpu = (time.process_time() - driver, *_cpu_since(cluster))
            if seconds == min(times):
                figures[f"{name}_cpu"] = cpu
        assert report is not None
        assert report.n_trajectories == len(runs)
        document = report.to_json()
        return min(times), json.dumps(document, sort_keys=True)

    figures: dict[str, Any] = {"n": len(runs), "scorers": len(scorers), "before": before}
    figures["local_s"], expected = best(now(LocalEngine()), "local")
    same = True
    for cpus in (1, 2):
        engine = _ray_engine(cpus)
        try:
            if before:
                figures[f"ray{cpus}_before_s"], report = best(then(engine), f"ray{cpus}_before")
                same = same and report == expected
            figures[f"ray{cpus}_s"], report = best(now(engine), f"ray{cpus}")
            same = same and report == expected
        finally:
            engine.close()
    figures["same_report"] = same
    figures["overhead"] = figures["ray1_s"] / figures["local_s"]
    figures["speedup"] = figures["local_s"] / figures["ray2_s"]
    return figures


def io_bound(n: int, engine: Any) -> dict[str, Any]:
    """(b): the HTTP system through the runner on Ray, concurrency shared by the cluster."""
    from harness_throughput import LATENCY_S, serve_in_subprocess

    from arbiter.contract import Dataset, Example
    from arbiter.harness.runner import run_eval_async
    from arbiter.scoring.labels import label
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import system_description
    from arbiter.store import Store
    from arbiter.systems.factory import build_system

    dataset = Dataset(
        name="io",
        examples=[Example(id=f"io-{i}", input={"text": f"t{i}"}, expected="low") for i in range(n)],
    )
    folder = Path(tempfile.mkdtemp(prefix="engine-scale-"))
    store = Store(f"sqlite:///{folder / 'io.db'}")
    with serve_in_subprocess() as server:
        description = system_description("http", server.url, label_path="label")
        scorer = label()
        parts = run_parts(description, {}, [scorer.spec], use_cache=False)
        seconds, report = _timed(
            lambda: run_eval_async(
                build_system(description),
                dataset,
                concurrency=IO_CONCURRENCY,
                scorers=[scorer],
                store=store,
                engine=engine,
                parts=parts,
            )
        )
    store.close()
    ideal = n * LATENCY_S / IO_CONCURRENCY
    return {
        "n": n,
        "seconds": seconds,
        "ideal_s": ideal,
        "ratio": seconds / ideal,
        "errors": report.error_rate,
        "done": report.completeness.done if report.completeness else None,
    }


def big_child(n: int) -> None:
    """(c), in a fresh process (its RSS its own): ``n`` examples on Ray x2, stored."""
    from arbiter.contract import Dataset, Example
    from arbiter.harness.runner import run_eval_async
    from arbiter.scoring.labels import label
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import system_description
    from arbiter.store import Store
    from arbiter.systems.factory import build_system

    engine = _ray_engine(2)
    target = f"{Path(__file__).resolve()}:instant"
    description = system_description("python", target)
    dataset = Dataset(
        name="big",
        examples=[Example(id=f"b-{i}", input={"q": "x"}, expected="x") for i in range(n)],
    )
    dataset_hash = dataset.content_hash
    # The driver's peak before the run: the dataset's examples, all in memory.
    dataset_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    folder = Path(tempfile.mkdtemp(prefix="engine-scale-"))
    store = Store(f"sqlite:///{folder / 'big.db'}")
    scorer = label()
    try:
        seconds, report = _timed(
            lambda: run_eval_async(
                build_system(description),
                dataset,
                scorers=[scorer],
                store=store,
                engine=engine,
                parts=run_parts(description, {}, [scorer.spec], use_cache=False),
            )
        )
    finally:
        engine.close()
        store.close()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    done = report.completeness.done if report.completeness else 0
    assert report.dataset_hash == dataset_hash
    print(json.dumps({"n": n, "done": done, "status": report.status, "seconds": seconds,
                      "per_second": done / seconds, "peak_rss_mb": peak_mb,
                      "dataset_peak_rss_mb": dataset_mb}))  # fmt: skip


def big(n: int) -> dict[str, Any]:
    import subprocess

    child = subprocess.run(
        [sys.executable, __file__, "--big-child", str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
    if child.returncode != 0 or not lines:
        return {"n": n, "failed": (child.stderr.strip().splitlines() or ["?"])[-1]}
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def _mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _print_cpu(a: dict[str, Any]) -> None:
    print(f"(a) CPU-bound: {a['n']} agent runs, {a['scorers']} trajectory scorers")
    n, local = a["n"], a["local_s"]
    print(f"  local        {local:7.2f} s   {n / local:8.0f} runs/s")
    if a["before"]:
        print(f"  ray, 1 CPU   {a['ray1_before_s']:7.2f} s   {n / a['ray1_before_s']:8.0f} runs/s"
              f"   overhead {a['ray1_before_s'] / local:.2f}x (the work before)")  # fmt: skip
    print(f"  ray, 1 CPU   {a['ray1_s']:7.2f} s   {n / a['ray1_s']:8.0f} runs/s   "
          f"overhead {a['overhead']:.2f}x (target <= {OVERHEAD_TARGET}x: "
          f"{_mark(a['overhead'] <= OVERHEAD_TARGET)})")  # fmt: skip
    if a["before"]:
        print(f"  ray, 2 CPUs  {a['ray2_before_s']:7.2f} s   {n / a['ray2_before_s']:8.0f} runs/s"
              f"   speed-up {local / a['ray2_before_s']:.2f}x (the work before)")  # fmt: skip
    print(f"  ray, 2 CPUs  {a['ray2_s']:7.2f} s   {n / a['ray2_s']:8.0f} runs/s   "
          f"speed-up {a['speedup']:.2f}x (target >= {SPEEDUP_TARGET}x: "
          f"{_mark(a['speedup'] >= SPEEDUP_TARGET)})")  # fmt: skip
    print(f"  the same report on every engine: {'yes' if a['same_report'] else 'NO'}")
    print("  CPU seconds: this process + the Ray workers + Ray's own processes = per run")
    for name in ("local", "ray1_before", "ray1", "ray2_before", "ray2"):
        if f"{name}_cpu" in a:
            driver, workers, rest = a[f"{name}_cpu"]
            total = driver + workers + rest
            print(f"    {name:12s} {driver:6.2f} + {workers:6.2f} + {rest:5.2f} s = "
                  f"{1000 * total / n:5.3f} ms")  # fmt: skip


def _print_io(n: int) -> None:
    from arbiter.engines.local import LocalEngine

    print(f"(b) I/O-bound: {n} examples, HTTP 50 ms, concurrency {IO_CONCURRENCY}")
    here = io_bound(n, LocalEngine())
    print(f"  local        {here['seconds']:7.2f} s   ideal {here['ideal_s']:.2f} s   "
          f"{here['ratio']:.2f}x ideal (this machine's own bound: the service, the client "
          f"and the store share its cores)")  # fmt: skip
    engine = _ray_engine(2)
    try:
        b = io_bound(n, engine)
    finally:
        engine.close()
    print(f"  ray, 2 CPUs  {b['seconds']:7.2f} s   {b['seconds'] / here['seconds']:.2f}x local   "
          f"{b['ratio']:.2f}x ideal (target <= {IO_TARGET}x: {_mark(b['ratio'] <= IO_TARGET)}); "
          f"{b['done']} stored, error rate {b['errors']:.3f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer items (a smoke run)")
    parser.add_argument("--big", type=int, default=BIG_N, help="examples of the big run")
    parser.add_argument("--skip-big", action="store_true", help="leave out (c)")
    parser.add_argument("--skip-cpu", action="store_true", help="leave out (a)")
    parser.add_argument("--skip-io", action="store_true", help="leave out (b)")
    parser.add_argument("--cpu-n", type=int, default=CPU_N, help="agent runs of (a)")
    parser.add_argument("--before", action="store_true", help="(a) also as the work was")
    parser.add_argument("--repeat", type=int, default=1, help="(a): the best of N runs each")
    parser.add_argument(
        "--default-gc", action="store_true", help="keep Python's collector thresholds"
    )
    parser.add_argument("--big-child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.big_child:
        big_child(options.big_child)
        return 0
    scale = 10 if options.quick else 1
    if not options.default_gc:
        from arbiter.cli.main import tune_gc

        tune_gc()  # what the arbiter command does at start
    print(f"engine_scale: {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load {Path('/proc/loadavg').read_text().split()[0]}")  # fmt: skip

    if not options.skip_cpu:
        a = cpu_bound(options.cpu_n // scale, before=options.before, repeat=options.repeat)
        _print_cpu(a)

    if not options.skip_io:
        _print_io(IO_N // scale)

    if not options.skip_big:
        n = options.big // scale
        print(f"(c) big: {n} examples, instant system, ray with 2 CPUs, SQLite store")
        c = big(n)
        if "failed" in c:
            print(f"  did not complete: {c['failed']}")
        else:
            rate, rss = c["per_second"], c["peak_rss_mb"]
            print(f"  {c['status']}: {c['done']}/{c['n']} in {c['seconds']:.1f} s, "
                  f"{rate:,.0f} examples/s, driver peak RSS {rss:,.0f} MB "
                  f"(target < 500 MB: {_mark(rss < 500)}; the dataset alone, before the run: "
                  f"{c['dataset_peak_rss_mb']:,.0f} MB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
