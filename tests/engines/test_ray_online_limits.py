"""``online score`` and ``agent run`` with ``--rate-limit`` on the real local two-node
Ray cluster: every worker's judge calls to a provider, and every call to an agent's
executor, take their tokens (and a provider's slots) from one limits actor."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.engines.conftest import Cluster, needs_ray

pytestmark = [pytest.mark.ray_cluster, needs_ray]

AGENTS = Path(__file__).with_name("agents.py")


def _actor_state(address: str, key: str) -> tuple[dict[str, float], list[float]]:
    """The limits actor's counts for ``key``, and when it let each call start (this
    machine's monotonic clock, which the test's own stamps read too)."""
    import ray

    from arbiter.engines.ray import NAMESPACE
    from arbiter.engines.ray_limits import limit_actor_name

    ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
    try:
        actor = ray.get_actor(limit_actor_name(key), namespace=NAMESPACE)
        state: Any = ray.get(actor.state.remote())
        starts: Any = ray.get(actor.starts.remote())
    finally:
        ray.shutdown()
    return {str(name): float(value) for name, value in state.items()}, [float(t) for t in starts]


class _Judge:
    """An Ollama-style ``/api/chat`` that notes when each request arrives and the most it
    had in flight at once."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.peak = 0

    async def chat(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        self.arrivals.append(time.monotonic())
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.02)  # a call that takes a while, so that calls overlap
            content = json.dumps({"label": "critical", "reason": "the score says so"})
            return JSONResponse({"model": "m", "message": {"content": content}})
        finally:
            self.in_flight -= 1


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Judge]:
    from starlette.applications import Starlette
    from starlette.routing import Route

    from tests.integration.serving import serve_asgi

    server = _Judge()
    app = Starlette(routes=[Route("/api/chat", server.chat, methods=["POST"])])
    with serve_asgi(app) as base:
        monkeypatch.setenv("OLLAMA_URL", base)  # read by the driver, sent to the workers
        yield server


def test_online_score_judge_calls_keep_one_rate_and_concurrency_across_the_cluster(
    ray_cluster: Cluster, tmp_path: Path, cli: Callable[..., Result], judge: _Judge
) -> None:
    rows = [{"id": f"p{i:02d}", "label": "nominal", "confidence": 0.9,
             "raw_output": {"status": "nominal", "anomaly_score": 0.93}}
            for i in range(30)]  # fmt: skip
    lines = tmp_path / "preds.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    config = tmp_path / "online.json"
    config.write_text(json.dumps({"judges": [{"name": "ollama", "provider": "ollama",
                                              "model": "m", "timeout": 30}]}))  # fmt: skip
    done = cli("online", "score", str(lines), "--config", str(config), "--concurrency", "8",
               "--engine", "ray", "--ray-address", ray_cluster.address,
               "--rate-limit", "ollama=25/s,burst=3,concurrency=2", "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["items"] == 30
    assert report["judge_sources"] == {"ollama": 30}
    state, allowed = _actor_state(ray_cluster.address, "ollama")
    # The command line's limit reached the actor; every judge call took a token and a slot.
    assert state["per_second"] == 25
    assert state["granted"] == 30
    assert state["most_in_window"] <= 3 + 25
    assert state["peak"] <= 2
    assert len(judge.arrivals) == 30
    assert judge.peak <= 2  # however many workers: two calls in flight at most
    # No call reached the judge before the actor let it start; the actor let 3 start at
    # once, then one every 1/25 s. Without the limit all 30 arrive within milliseconds.
    assert len(allowed) == 30
    for arrived, start in zip(sorted(judge.arrivals), allowed, strict=True):
        assert arrived >= start - 1e-3
    assert max(allowed) - min(allowed) >= (30 - 3) / 25 - 1e-6


def test_agent_run_executor_calls_keep_one_rate_across_the_cluster(
    ray_cluster: Cluster, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    log = tmp_path / "calls.log"
    case = {"input": {"query": "q", "log": str(log)}, "agent_class": "tool_enabled"}
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i:02d}", **case}) + "\n" for i in range(24)))
    executor = f"python:{AGENTS}:logged"
    done = cli("agent", "run", str(cases), "-e", executor, "-s", "completed",
               "--concurrency", "8", "--engine", "ray", "--ray-address", ray_cluster.address,
               "--rate-limit", "24/s,burst=2", "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["accuracy"]["estimate"] == 1.0
    state, allowed = _actor_state(ray_cluster.address, f"agent-python:{AGENTS}:logged")
    assert state["per_second"] == 24
    assert state["granted"] == 24
    assert state["most_in_window"] <= 2 + 24
    starts = [float(line) for line in log.read_text().split()]
    assert len(starts) == len(allowed) == 24
    # No call to the executor started before the actor let it; the actor let two start
    # at once, then one every 1/24 s.
    for started, start in zip(sorted(starts), allowed, strict=True):
        assert started >= start - 1e-3
    assert max(allowed) - min(allowed) >= (24 - 2) / 24 - 1e-6


def test_agent_score_judge_calls_keep_one_rate_across_the_cluster(
    ray_cluster: Cluster, tmp_path: Path, cli: Callable[..., Result], judge: _Judge
) -> None:
    tau = Path(__file__).parents[1] / "trajectories" / "data" / "tau_bench_published_shape.json"
    records = json.loads(tau.read_text())
    many = tmp_path / "tau.json"  # the two published runs, again under other task ids
    many.write_text(json.dumps([{**r, "task_id": 100 * i + r["task_id"]}
                                for i in range(6) for r in records]))  # fmt: skip
    done = cli("agent", "score", str(many),
               "--scorer", "rubric:rubric=The agent did what was asked.,provider=ollama,model=m",
               "--engine", "ray", "--ray-address", ray_cluster.address,
               "--rate-limit", "ollama=10/s,burst=2", "--json")  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["n_trajectories"] == 12
    state, allowed = _actor_state(ray_cluster.address, "ollama")
    assert state["per_second"] == 10
    # Every judge call, from either worker, took its token from the one actor. (The
    # workers read the provider's URL from their own environment, not the driver's, so
    # here their calls do not reach this judge: see docs/scale.md.)
    assert state["granted"] == len(allowed) >= 12
    assert max(allowed) - min(allowed) >= (len(allowed) - 2) / 10 - 1e-6
