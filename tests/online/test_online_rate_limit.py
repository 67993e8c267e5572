"""``online score --rate-limit``: the online pipeline's judge calls hold their provider's
shared limits (a rate token, a concurrency slot), on the local engine through a
:class:`~arbiter.engines.rate.LocalGate`, on a cluster through the limits actor
(tests/engines/test_ray_online_limits.py); a bad value exits 3 with one line."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from arbiter.config import Settings
from arbiter.engines.rate import CallLimit, LocalGate, most_in_window
from arbiter.online.build import GatedJudge, build_pipeline
from arbiter.online.config import OnlineConfig
from arbiter.service.online_judges import online_pipeline
from arbiter.service.online_work import LineWork
from tests.conftest import Result

CONTRADICTION: dict[str, Any] = {
    "label": "nominal",
    "confidence": 0.9,
    "raw_output": {"status": "nominal", "anomaly_score": 0.93},
}
"""A prediction the bundled rules flag, so the judge chain is asked about it."""
CONFIG = {"judges": [{"name": "ollama", "provider": "ollama", "model": "m", "timeout": 30}]}


def _answer() -> httpx.Response:
    content = json.dumps({"label": "critical", "reason": "the score says so"})
    return httpx.Response(200, json={"model": "m", "message": {"content": content}})


class _Provider:
    """A judge endpoint that counts its requests and the most it had in flight at once;
    each request yields to the loop a few times, so that calls not held back overlap."""

    def __init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        return _answer()


async def _judge_all(gate: LocalGate | None, provider: _Provider, n: int) -> list[str | None]:
    config = OnlineConfig.model_validate(CONFIG)
    pipeline = build_pipeline(
        config, Settings(_env_file=None), transport=httpx.MockTransport(provider), gate=gate
    )
    try:
        items = [{**CONTRADICTION, "id": f"p{i}"} for i in range(n)]
        results = await asyncio.gather(*(pipeline.evaluate(item) for item in items))
    finally:
        await pipeline.aclose()
    return [result.judge.label if result.judge else None for result in results]


async def test_a_providers_concurrency_holds_the_judge_chain_to_that_many_calls_in_flight() -> None:
    ungated = _Provider()
    assert await _judge_all(None, ungated, 8) == ["critical"] * 8
    assert ungated.peak > 2  # without the limit the calls overlap
    provider = _Provider()
    gate = LocalGate({"ollama": CallLimit(concurrency=2)})
    assert await _judge_all(gate, provider, 8) == ["critical"] * 8
    assert provider.requests == 8
    assert provider.peak == 2


async def test_judge_calls_under_a_rate_start_no_faster_than_burst_and_rate() -> None:
    now = [0.0]
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)  # the clock stands still: every wait is the bucket's

    gate = LocalGate(
        {"ollama": CallLimit(per_second=4, burst=2)}, clock=lambda: now[0], sleep=no_sleep
    )
    provider = _Provider()
    assert await _judge_all(gate, provider, 10) == ["critical"] * 10
    bucket = gate.buckets["ollama"]
    assert bucket.granted == provider.requests == 10
    starts = bucket.starts()
    # Two at once (the burst), then one every quarter second: not all in the first second.
    assert most_in_window(starts, 1.0) <= 2 + 4
    assert max(starts) == pytest.approx((10 - 2) / 4)
    assert len(waits) == 10 - 2


async def test_a_wait_for_a_token_counts_against_neither_the_judge_timeout_nor_breaker() -> None:
    # A judge of 0.05 s behind a gate that holds each call 0.1 s: the wait is before the
    # call's own timeout starts, so every call answers and the breaker (opened by one
    # failure) stays closed.
    @contextlib.asynccontextmanager
    async def slow_gate(name: str) -> Any:
        assert name == "ollama"
        await asyncio.sleep(0.1)
        yield

    config = OnlineConfig.model_validate(
        {"judges": [{**CONFIG["judges"][0], "timeout": 0.05, "failure_threshold": 1}]}
    )
    pipeline = build_pipeline(
        config,
        Settings(_env_file=None),
        transport=httpx.MockTransport(lambda request: _answer()),
        gate=slow_gate,
    )
    try:
        first = await pipeline.evaluate({**CONTRADICTION, "id": "a"})
        second = await pipeline.evaluate({**CONTRADICTION, "id": "b"})
    finally:
        await pipeline.aclose()
    assert [r.judge.source if r.judge else None for r in (first, second)] == ["ollama"] * 2


def test_the_chain_judges_are_gated_by_their_provider_name() -> None:
    gate = LocalGate({"ollama": CallLimit(per_second=1)})
    pipeline = build_pipeline(
        OnlineConfig.model_validate(CONFIG), Settings(_env_file=None), gate=gate
    )
    chain = pipeline.layer("judge").chain  # type: ignore[attr-defined]
    [judge] = chain.judges
    assert isinstance(judge, GatedJudge)
    assert judge.provider == "ollama"
    ungated = build_pipeline(OnlineConfig.model_validate(CONFIG), Settings(_env_file=None))
    [plain] = ungated.layer("judge").chain.judges  # type: ignore[attr-defined]
    assert not isinstance(plain, GatedJudge)


def test_a_line_work_carries_its_gate_to_the_pipeline_its_worker_builds() -> None:
    gate = LocalGate({"ollama": CallLimit(per_second=1)})
    work = LineWork(None, max_in_flight=4, source="f", config=OnlineConfig.model_validate(CONFIG))
    assert work.portable().gate is None  # the worker's engine hands it its own
    gated = work.portable().gated(gate).limited(2)
    assert (gated.gate, gated.max_in_flight) == (gate, 2)


# ----------------------------------------------------------------------------- the CLI


def _lines(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "preds.jsonl"
    rows = [{**CONTRADICTION, "id": f"p{i:02d}"} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "online.json"
    path.write_text(json.dumps(CONFIG), encoding="utf-8")
    return path


BAD = [
    ("20/h", "expected [PROVIDER=]N/s or N/min"),
    ("ollama=0/s", "per_second must be a positive number"),
    ("ollama=2/s,burst=0", "burst must be at least 1"),
    ("20/s", "this command calls no system under test; name the model provider"),
]


@pytest.mark.parametrize(("value", "message"), BAD)
def test_a_bad_online_rate_limit_exits_3_with_one_line_naming_the_option(
    cli: Callable[..., Result], tmp_path: Path, value: str, message: str
) -> None:
    done = cli("online", "score", str(_lines(tmp_path, 1)), "--rate-limit", value)
    assert done.code == 3
    lines = done.err.strip().splitlines()
    assert len(lines) == 1
    assert f"--rate-limit {value!r}" in lines[0]
    assert message in lines[0]
    assert not (tmp_path / "store.db").exists()  # refused before anything was written


def test_rate_limit_is_in_online_score_help(cli: Callable[..., Result]) -> None:
    done = cli("online", "score", "--help")
    assert done.code == 0
    assert "--rate-limit" in done.out


class _Server:
    """An Ollama-style ``/api/chat`` that notes when each request arrives and the most
    it had in flight at once."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.peak = 0

    async def chat(self, request: Any) -> Any:
        import time

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
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Route

    from tests.integration.serving import serve_asgi

    server = _Server()
    app = Starlette(routes=[Route("/api/chat", server.chat, methods=["POST"])])
    with serve_asgi(app) as base:
        monkeypatch.setenv("OLLAMA_URL", base)
        yield server


def test_online_score_on_the_local_engine_keeps_the_providers_rate_and_concurrency(
    cli: Callable[..., Result], tmp_path: Path, judge_server: _Server
) -> None:
    done = cli("online", "score", str(_lines(tmp_path, 20)), "--config", str(_config(tmp_path)),
               "--concurrency", "8", "--rate-limit", "ollama=40/s,burst=2,concurrency=3",
               "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["items"] == 20
    assert report["judge_sources"] == {"ollama": 20}
    assert len(judge_server.arrivals) == 20
    assert judge_server.peak <= 3
    # Two at once (the burst), then one every 1/40 s: a busy machine can only delay calls,
    # never bring them forward. Without the limit all 20 start within milliseconds. The
    # first call opens its connection, so it may reach the server that much later than
    # it started, which shortens the span seen there (150 ms allowed).
    arrivals = judge_server.arrivals
    assert max(arrivals) - min(arrivals) >= (20 - 2) / 40 - 0.15


async def test_the_judge_panels_model_calls_pass_the_gate_by_provider_name() -> None:
    from arbiter.online.config import JudgePanelConfig
    from arbiter.online.rules import HeuristicRules
    from arbiter.service.online_agents import TrajectoryScorers, trajectory_item
    from tests.service.test_online_agents import finished
    from tests.service.test_online_judges import QUESTION, run

    held: list[str] = []

    @contextlib.asynccontextmanager
    async def recording(name: str) -> Any:
        held.append(name)
        yield

    config = OnlineConfig(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        sample_rate=1.0,
        judge_panel=JudgePanelConfig(
            judges=["answer_groundedness", "instruction_following"],
            panel=[{"provider": "mock", "model": "m", "timeout": 5}],
        ),
    )
    pipeline = online_pipeline(
        config,
        Settings(_env_file=None),
        scorers=TrajectoryScorers(scorers=[finished()]),
        gate=recording,
    )
    try:
        await pipeline.evaluate(trajectory_item(run(), input=QUESTION))
    finally:
        await pipeline.aclose()
    assert held == ["mock", "mock"]  # one call per judge, each through the gate


async def test_a_judge_chain_beside_a_judge_panel_passes_the_gate_too() -> None:
    from arbiter.online.config import JudgePanelConfig
    from arbiter.online.rules import HeuristicRules
    from arbiter.service.online_agents import TrajectoryScorers, trajectory_item
    from tests.service.test_online_agents import finished
    from tests.service.test_online_judges import QUESTION, run

    held: list[str] = []

    @contextlib.asynccontextmanager
    async def recording(name: str) -> Any:
        held.append(name)
        yield

    provider = _Provider()
    config = OnlineConfig(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        sample_rate=1.0,
        judges=OnlineConfig.model_validate(CONFIG).judges,
        vocabulary=["nominal", "critical"],
        judge_panel=JudgePanelConfig(
            judges=["answer_groundedness"],
            panel=[{"provider": "mock", "model": "m", "timeout": 5}],
        ),
    )
    pipeline = online_pipeline(
        config,
        Settings(_env_file=None),
        scorers=TrajectoryScorers(scorers=[finished()]),
        transport=httpx.MockTransport(provider),
        gate=recording,
    )
    try:
        await pipeline.evaluate(trajectory_item(run(), input=QUESTION))
    finally:
        await pipeline.aclose()
    assert provider.requests == 1  # the chain's judge was asked
    assert sorted(held) == ["mock", "ollama"]  # the panel's call and the chain's, both held
