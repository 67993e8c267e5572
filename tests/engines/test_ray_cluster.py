"""The Ray engine on a real local two-node cluster: the same results as the local
engine, and faults (a worker killed by pid, a driver killed, a failing system) handled
with nothing lost or stored twice."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.store import Store
from tests.conftest import Result
from tests.engines.conftest import Cluster, needs_ray

pytestmark = [pytest.mark.ray_cluster, needs_ray]

SYSTEMS = Path(__file__).with_name("systems.py")
TAU_BENCH = Path(__file__).parents[1] / "trajectories" / "data" / "tau_bench_published_shape.json"
TIMINGS = ("run_id", "latency", "examples_per_second")
"""What a report measures of time (and the run's id): all that may differ by engine."""


def _dataset(path: Path, n: int, **extra: Any) -> Path:
    rows = []
    for i in range(n):
        inputs: dict[str, Any] = {"q": f"answer {i % 7}", "shout": i % 5 == 0, **extra}
        if i % 13 == 3:
            inputs["fail"] = True
        rows.append(
            {
                "id": f"ex-{i:03d}",
                "input": inputs,
                "expected": f"answer {i % 7}" if i % 4 else f"ANSWER {i % 7}",
                "cohort": ("alpha", "beta", "gamma")[i % 3],
            }
        )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _without_timings(report: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in report.items() if k not in TIMINGS})


def _stored(store_url: str, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    store = Store(store_url)
    try:
        config = store.get_run(run_id).config
        results = [r.model_dump(mode="json", exclude={"latency_ms"}) for r in store.results(run_id)]
    finally:
        store.close()
    return config, sorted(results, key=lambda r: (r["example_id"], r["repetition"]))


RUN = ["--target", f"{SYSTEMS}:answer", "--k", "3", "--seed", "7", "--json", "-q"]
SCORERS = ["--scorer", "label", "--scorer", "casefold", "--scorer", "f1_tokens"]


def test_a_run_on_ray_reports_byte_for_byte_as_on_local(
    cli: Callable[..., Result], ray_cluster: Cluster, tmp_path: Path
) -> None:
    data = _dataset(tmp_path / "qa.jsonl", 90)
    local = cli("run", "--dataset", str(data), *RUN, *SCORERS)
    assert local.code == 0, local.err
    on_ray = cli(
        "run", "--dataset", str(data), *RUN, *SCORERS,
        "--engine", "ray", "--ray-address", ray_cluster.address,
    )  # fmt: skip
    assert on_ray.code == 0, on_ray.err
    a, b = json.loads(local.out), json.loads(on_ray.out)
    assert _without_timings(a) == _without_timings(b)
    # Three scorers, three cohorts, a bootstrap interval; failures recorded per example.
    assert len(a["sections"]) == 3
    assert set(a["cohorts"]) == {"alpha", "beta", "gamma"}
    assert a["pass_hat_k"]["low"] < a["pass_hat_k"]["estimate"] < a["pass_hat_k"]["high"]
    assert a["errors_by_type"] == {"SystemCrashed": 7 * 3}
    url = os.environ["ARBITER_DB_URL"]
    config_a, results_a = _stored(url, a["run_id"])
    config_b, results_b = _stored(url, b["run_id"])
    assert (config_a.pop("engine"), config_b.pop("engine")) == ("local", "ray")
    assert config_a == config_b
    assert results_a == results_b
    assert len(results_b) == 90 * 3


def test_agent_score_on_ray_prints_what_local_prints(
    cli: Callable[..., Result], ray_cluster: Cluster
) -> None:
    local = cli("agent", "score", str(TAU_BENCH), "--json")
    on_ray = cli(
        "agent", "score", str(TAU_BENCH), "--json",
        "--engine", "ray", "--ray-address", ray_cluster.address,
    )  # fmt: skip
    assert (local.code, on_ray.code) == (0, 0), on_ray.err
    assert on_ray.out == local.out


def test_online_score_on_ray_gives_every_line_the_local_result(
    cli: Callable[..., Result], ray_cluster: Cluster, tmp_path: Path
) -> None:
    lines = [
        json.dumps({"id": f"p{i}", "label": "threat" if i % 3 else "nominal",
                    "confidence": (i % 10) / 10, "raw_output": {"text": "ok"}})
        for i in range(120)
    ] + ["not json"]  # fmt: skip
    source = tmp_path / "traffic.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def scored(*engine: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        out = tmp_path / f"out-{len(engine)}.jsonl"
        done = cli("online", "score", str(source), "--json", "-q", "--out", str(out), *engine)
        assert done.code == 0, done.err
        summary = json.loads(done.out)
        for key in ("batch_id", "elapsed_s", "latency"):
            summary.pop(key)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        for row in rows:
            row.pop("total_ms", None)
            for layer in row.get("layers", {}).values():
                layer.pop("latency_ms")
        return summary, sorted(rows, key=lambda r: r["metadata"]["line"])

    local = scored()
    on_ray = scored("--engine", "ray", "--ray-address", ray_cluster.address)
    assert on_ray == local
    assert len(local[1]) == 121


class _CheckIns:
    """The test's end of ``systems.answer``'s check-in: pids arrive; the first may be
    killed, the others are told to go on (or held until released)."""

    def __init__(self, *, kill_first: bool = False, hold: bool = False) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.kill_first, self.hold = kill_first, hold
        self.pids: list[int] = []
        self.killed: list[int] = []
        self.held: list[socket.socket] = []
        self.arrived = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                link, _ = self.listener.accept()
            except OSError:
                return
            pid = int(link.makefile().readline())
            self.pids.append(pid)
            if self.kill_first and not self.killed:
                self.killed.append(pid)
                os.kill(pid, signal.SIGKILL)
                link.close()
            elif self.hold and not self.held:
                self.held.append(link)
            else:
                link.sendall(b"go\n")
                link.close()
            self.arrived.set()

    def close(self) -> None:
        self.listener.close()
        for link in self.held:
            link.close()


@pytest.fixture
def check_ins() -> Iterator[Callable[..., _CheckIns]]:
    made: list[_CheckIns] = []

    def make(**options: bool) -> _CheckIns:
        made.append(_CheckIns(**options))
        return made[-1]

    yield make
    for each in made:
        each.close()


def _pairs(url: str, run_id: str) -> list[tuple[str, int]]:
    store = Store(url)
    try:
        return [(r.example_id, r.repetition) for r in store.results(run_id)]
    finally:
        store.close()


def test_a_worker_killed_mid_run_has_its_batch_run_again_with_nothing_lost_or_doubled(
    cli: Callable[..., Result],
    ray_cluster: Cluster,
    tmp_path: Path,
    check_ins: Callable[..., _CheckIns],
) -> None:
    listener = check_ins(kill_first=True)
    data = _dataset(tmp_path / "qa.jsonl", 60, check_in=listener.port)
    on_ray = cli(
        "run", "--dataset", str(data), *RUN,
        "--engine", "ray", "--ray-address", ray_cluster.address,
    )  # fmt: skip
    assert on_ray.code == 0, on_ray.err
    assert len(listener.killed) == 1
    assert listener.killed[0] not in listener.pids[1:]
    report = json.loads(on_ray.out)
    assert report["status"] == "completed"
    pairs = _pairs(os.environ["ARBITER_DB_URL"], report["run_id"])
    assert len(pairs) == len(set(pairs)) == 60 * 3
    local = cli("run", "--dataset", str(data), *RUN)  # the same run, no kill
    assert _without_timings(json.loads(local.out)) == _without_timings(report)


DRIVER = """
import asyncio, sys
from arbiter.datasets import load_dataset
from arbiter.contract import RunConfig
from arbiter.engines.ray import RayEngine
from arbiter.service.engines import run_parts
from arbiter.service.runs import start_run, system_description
from arbiter.service.scoring import scorer_specs, build_scorers
from arbiter.store import Store
from arbiter.systems.factory import build_system

address, data, target, url = sys.argv[1:5]
description = system_description("python", target)
specs = scorer_specs([])
def progress(done, total):
    print(f"done {done}", flush=True)
store = Store(url)
with RayEngine(address) as engine:
    asyncio.run(start_run(
        build_system(description), load_dataset(data), config=RunConfig(k=3, seed=7),
        store=store, progress=progress, on_start=lambda run_id: print(f"run {run_id}", flush=True),
        scorers=build_scorers(specs), engine=engine,
        parts=run_parts(description, {}, specs, use_cache=False),
    ))
"""


def test_a_driver_killed_mid_run_is_resumed_from_the_store(
    cli: Callable[..., Result],
    ray_cluster: Cluster,
    tmp_path: Path,
    check_ins: Callable[..., _CheckIns],
) -> None:
    listener = check_ins(hold=True)  # the first worker to call holds its batch open
    data = _dataset(tmp_path / "qa.jsonl", 60, check_in=listener.port)
    url = os.environ["ARBITER_DB_URL"]
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, ray_cluster.address, str(data), f"{SYSTEMS}:answer", url],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert driver.stdout is not None
    run_id = None
    for line in driver.stdout:
        if line.startswith("run "):
            run_id = line.split()[1]
        elif line.startswith("done ") and int(line.split()[1]) >= 30:
            break
    driver.kill()
    driver.wait(timeout=60)
    assert run_id is not None
    stored = _pairs(url, run_id)
    assert 30 <= len(stored) < 60 * 3  # the held batch never finished
    listener.hold = False
    listener.close()  # later check-ins find no listener and go on
    resumed = cli(
        "run", "--resume", run_id, "--json", "-q",
        "--engine", "ray", "--ray-address", ray_cluster.address,
    )  # fmt: skip
    assert resumed.code == 0, resumed.err
    report = json.loads(resumed.out)
    assert report["status"] == "completed"
    pairs = _pairs(url, run_id)
    assert len(pairs) == len(set(pairs)) == 60 * 3
    local = cli("run", "--dataset", str(data), *RUN, "--scorer", "label")
    assert _without_timings(json.loads(local.out)) == _without_timings(report)


class _Counter:
    """Counts calls of ``systems.held`` in flight at once; answers them in rounds."""

    def __init__(self, round_size: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.round_size = round_size
        self.peak = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        waiting: list[socket.socket] = []
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        while True:
            # Answer a round when it is full, or when no call came for a while (the
            # last calls of the run): a socket deadline, not a sleep.
            ready = selector.select(timeout=0.5)
            if (not ready and waiting) or len(waiting) >= self.round_size:
                for link in waiting:
                    link.sendall(b"go\n")
                    link.close()
                waiting.clear()
            if ready:
                try:
                    link, _ = self.listener.accept()
                except OSError:
                    return
                link.makefile().readline()
                waiting.append(link)
                self.peak = max(self.peak, len(waiting))

    def close(self) -> None:
        self.listener.close()


def test_calls_to_one_system_share_one_concurrency_limit_across_the_cluster(
    cli: Callable[..., Result], ray_cluster: Cluster, tmp_path: Path
) -> None:
    counter = _Counter(round_size=6)  # would see 6 at once were each worker to take 3
    rows = [{"id": f"h{i}", "input": {"q": "x", "port": counter.port}, "expected": "x"}
            for i in range(24)]  # fmt: skip
    data = tmp_path / "held.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    try:
        done = cli(
            "run", "--dataset", str(data), "--target", f"{SYSTEMS}:held", "--concurrency", "3",
            "--json", "-q", "--engine", "ray", "--ray-address", ray_cluster.address,
        )  # fmt: skip
    finally:
        counter.close()
    assert done.code == 0, done.err
    assert json.loads(done.out)["accuracy"]["estimate"] == 1.0
    assert counter.peak == 3


def test_cancelling_a_run_on_ray_leaves_it_interrupted_and_resumable(
    cli: Callable[..., Result],
    ray_cluster: Cluster,
    tmp_path: Path,
    check_ins: Callable[..., _CheckIns],
) -> None:
    import asyncio

    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.engines.ray import RayEngine
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import start_run, system_description
    from arbiter.service.scoring import build_scorers, scorer_specs
    from arbiter.systems.factory import build_system

    listener = check_ins(hold=True)  # the first call holds its batch: the run cannot end
    data = _dataset(tmp_path / "qa.jsonl", 30, check_in=listener.port)
    description = system_description("python", f"{SYSTEMS}:answer")
    specs = scorer_specs([])
    url = os.environ["ARBITER_DB_URL"]
    store = Store(url)
    started: list[str] = []

    async def interrupted() -> None:
        run = asyncio.create_task(
            start_run(
                build_system(description),
                load_dataset(data),
                config=RunConfig(k=3, seed=7),
                store=store,
                on_start=started.append,
                scorers=build_scorers(specs),
                engine=engine,
                parts=run_parts(description, {}, specs, use_cache=False),
            )
        )
        await asyncio.to_thread(listener.arrived.wait, 120)  # a batch is in flight
        run.cancel()  # what Ctrl-C does to the command's coroutine
        with pytest.raises(asyncio.CancelledError):
            await run

    try:
        with RayEngine(ray_cluster.address) as engine:
            asyncio.run(interrupted())
        assert store.get_run(started[0]).status == "interrupted"
    finally:
        store.close()
    listener.hold = False
    listener.close()
    resumed = cli(
        "run", "--resume", started[0], "--json", "-q",
        "--engine", "ray", "--ray-address", ray_cluster.address,
    )  # fmt: skip
    assert resumed.code == 0, resumed.err
    pairs = _pairs(url, started[0])
    assert len(pairs) == len(set(pairs)) == 30 * 3


def test_closing_the_engine_leaves_a_connection_the_caller_made_open(
    ray_cluster: Cluster,
) -> None:
    import ray

    from arbiter.engines.ray import NAMESPACE, RayEngine

    ray.init(address=ray_cluster.address, namespace=NAMESPACE, log_to_driver=False)
    try:
        with RayEngine(ray_cluster.address) as engine:
            assert engine.cpus == 2
        assert ray.is_initialized()
        assert ray.get(ray.put("still connected")) == "still connected"
    finally:
        ray.shutdown()
    with RayEngine(ray_cluster.address) as engine:  # a connection of the engine's own
        assert engine.cpus == 2
    assert not ray.is_initialized()


SCALE_PAGE = Path(__file__).parents[2] / "docs" / "scale.md"
PAGE_ADDRESS = "127.0.0.2:6399"
"""The head's address on docs/scale.md; the fixture's cluster stands for it."""


def test_docs_scale_md_commands_print_what_the_page_shows(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    from dataclasses import replace

    from tests.docs.doc_examples import Session, examples

    page = examples(SCALE_PAGE)
    chapters = {"A run on a local two-node cluster", "The server on several processes"}
    assert {e.chapter for e in page} <= chapters
    assert sum("--engine ray" in e.code for e in page) >= 1
    session = Session(tmp_path / ".arbiter")
    for example in page:
        on_fixture = replace(example, code=example.code.replace(PAGE_ADDRESS, ray_cluster.address))
        outcome = session.run(on_fixture)
        outcome.lines = [line.replace(ray_cluster.address, PAGE_ADDRESS) for line in outcome.lines]
        problem = outcome.problem(example)
        assert problem is None, problem
    text = SCALE_PAGE.read_text(encoding="utf-8")  # the nodes the page starts are the fixture's
    assert "ray start --head --node-ip-address 127.0.0.2 --port 6399" in text
    assert f"ray start --address {PAGE_ADDRESS} --node-ip-address 127.0.0.3" in text
