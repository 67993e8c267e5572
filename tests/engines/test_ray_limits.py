"""The limits shared by a whole Ray cluster, on the real local two-node cluster: calls to a
system and model calls to a provider keep one rate (and a provider one concurrency)
whichever worker makes them."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from arbiter.store import Store
from tests.engines.conftest import Cluster, needs_ray

pytestmark = [pytest.mark.ray_cluster, needs_ray]

SYSTEMS = Path(__file__).with_name("systems.py")


class _Arrivals:
    """A local listener that notes when each call of ``systems.stamped`` arrives (this
    machine's monotonic clock, which the limits actor on it reads too) and answers it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port: int = self.listener.getsockname()[1]
        self.times: list[float] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                link, _ = self.listener.accept()
            except OSError:
                return
            self.times.append(time.monotonic())
            with link:
                link.makefile().readline()
                link.sendall(b"ok\n")

    def close(self) -> None:
        self.listener.close()


def test_calls_to_a_system_and_to_a_provider_keep_one_rate_across_the_cluster(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.engines.rate import CallLimit
    from arbiter.engines.ray import RayEngine
    from arbiter.harness.describe import describe_system_short
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import start_run, system_description
    from arbiter.service.scoring import build_scorers, scorer_specs
    from arbiter.systems.factory import build_system

    arrivals = _Arrivals()
    rows = [{"id": f"r{i:02d}", "input": {"q": "x", "port": arrivals.port}, "expected": "x"}
            for i in range(40)]  # fmt: skip
    data = tmp_path / "stamped.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    description = system_description("python", f"{SYSTEMS}:stamped")
    system_key = describe_system_short(description)
    specs = scorer_specs(["label", "rubric:rubric=Is the answer the expected one?"])
    limits = {
        system_key: CallLimit(per_second=20, burst=2),
        "mock": CallLimit(concurrency=2, per_second=40, burst=1),
    }
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        # Small batches, so that both nodes' workers call at once.
        with RayEngine(ray_cluster.address, limits=limits, batch_size=4) as engine:
            report = asyncio.run(
                start_run(
                    build_system(description),
                    load_dataset(data),
                    config=RunConfig(concurrency=8),
                    store=store,
                    scorers=build_scorers(specs),
                    engine=engine,
                    parts=run_parts(description, {}, specs, use_cache=False),
                )
            )
            system = engine.pool_state(system_key)
            model = engine.pool_state("mock")
            starts = _starts(system_key)
    finally:
        store.close()
        arrivals.close()
    assert report.accuracy.estimate == 1.0
    assert system is not None
    assert model is not None
    # Every call the system saw took a token, and no call started before its token.
    assert len(arrivals.times) == system["granted"] == len(starts) == 40
    for arrived, allowed in zip(sorted(arrivals.times), starts, strict=True):
        assert arrived >= allowed - 1e-3
    # On the actor's clock: never more starts in a second than the burst and the rate.
    assert system["most_in_window"] <= 2 + 20
    # Every model call of the rubric passed the provider's limits: one per pair.
    assert model["granted"] == 40
    assert model["peak"] <= 2
    assert model["most_in_window"] <= 1 + 40


def _starts(key: str) -> list[float]:
    import ray

    from arbiter.engines.ray import NAMESPACE
    from arbiter.engines.ray_limits import limit_actor_name

    actor = ray.get_actor(limit_actor_name(key), namespace=NAMESPACE)
    starts: list[float] = ray.get(actor.starts.remote())
    return starts


class _Judge:
    """A llama.cpp-style chat endpoint that counts its requests and passes every answer,
    quoting the output's first word."""

    def __init__(self) -> None:
        self.requests = 0

    async def chat(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        self.requests += 1
        body = await request.json()
        output = body["messages"][1]["content"].rsplit("<output>\n", 1)[1]
        answer = {
            "reasoning": "It states the fact.",
            "evidence": [{"quote": output.split()[0], "shows": "the answer"}],
            "verdict": "pass",
            "score": 0.9,
        }
        return JSONResponse(
            {
                "model": body["model"],
                "choices": [{"message": {"content": json.dumps(answer)}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            }
        )


def test_a_judged_call_made_on_one_worker_is_answered_from_the_store_on_another(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Route

    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.engines.ray import RayEngine
    from arbiter.providers.cache_sql import SqlResponseCache
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import start_run, system_description
    from arbiter.service.scoring import build_scorers, scorer_specs
    from arbiter.systems.factory import build_system
    from tests.integration.serving import serve_asgi

    judge = _Judge()
    app = Starlette(routes=[Route("/v1/chat/completions", judge.chat, methods=["POST"])])
    data = tmp_path / "one.jsonl"
    row = {"id": "paris", "input": {"q": "The capital of France is Paris."},
           "expected": "The capital of France is Paris."}  # fmt: skip
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    description = system_description("python", f"{SYSTEMS}:answer")
    specs = scorer_specs(["rubric:rubric=The answer is right.,provider=llama_cpp,model=judge-1"])
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)

    def run_on_a_worker_of_its_own(cache_dir: str, cache_url: str | None) -> Any:
        # Each engine's batches run with their own environment, so in worker processes
        # of their own, each with a model-call cache folder no other worker has.
        env = {"ARBITER_LLAMA_CPP_URL": f"{base}/v1", "ARBITER_CACHE_DIR": cache_dir}
        with RayEngine(ray_cluster.address, env=env) as engine:
            return asyncio.run(
                start_run(
                    build_system(description),
                    load_dataset(data),
                    config=RunConfig(),  # k = 1: the cache is on
                    store=store,
                    scorers=build_scorers(specs),
                    engine=engine,
                    parts=run_parts(description, {}, specs, use_cache=True, cache_url=cache_url),
                )
            )

    try:
        with serve_asgi(app) as base:
            first = run_on_a_worker_of_its_own(str(tmp_path / "cache-a"), url)
            second = run_on_a_worker_of_its_own(str(tmp_path / "cache-b"), url)
            assert judge.requests == 1  # the second worker's call came from the store
            unshared = run_on_a_worker_of_its_own(str(tmp_path / "cache-c"), None)
            assert judge.requests == 2  # a worker's own cache folder was empty
    finally:
        store.close()
    cached = [report.sections["rubric"].model.cached for report in (first, second, unshared)]
    assert cached == [0, 1, 0]
    assert first.accuracy.estimate == second.accuracy.estimate == 1.0
    assert SqlResponseCache(url).entries() == 1


def test_run_rate_limit_is_the_limit_every_worker_of_the_cluster_keeps(
    ray_cluster: Cluster, tmp_path: Path, cli: Any
) -> None:
    import ray

    from arbiter.engines.ray import NAMESPACE
    from arbiter.engines.ray_limits import limit_actor_name

    log = tmp_path / "calls.log"
    rows = [{"id": f"r{i:02d}", "input": {"q": "x", "log": str(log)}, "expected": "x"}
            for i in range(30)]  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = cli("run", "--dataset", str(data), "--target", f"{SYSTEMS}:logged",
               "--engine", "ray", "--ray-address", ray_cluster.address,
               "--rate-limit", "30/s,burst=2", "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["accuracy"]["estimate"] == 1.0
    ray.init(address=ray_cluster.address, namespace=NAMESPACE, log_to_driver=False)
    try:
        actor = ray.get_actor(limit_actor_name(f"python:{SYSTEMS}:logged"), namespace=NAMESPACE)
        state: Any = ray.get(actor.state.remote())
    finally:
        ray.shutdown()
    # The command line's limit reached the actor, and every call took one of its tokens.
    assert state["per_second"] == 30
    assert state["granted"] == 30
    assert state["most_in_window"] <= 2 + 30
    starts = [float(line) for line in log.read_text().split()]
    assert len(starts) == 30
    assert max(starts) - min(starts) >= (30 - 2) / 30 - 0.01
