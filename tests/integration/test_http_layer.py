"""The one outbound HTTP layer: pooled, retried, bounded, redacted.

Against a real local uvicorn server where connections matter; over an injected
``httpx.MockTransport`` where only the answers do.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arbiter.config import Settings
from arbiter.contract import Case
from arbiter.errors import (
    InvalidResponse,
    InvalidSystemResponse,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from arbiter.http.client import HttpClient
from arbiter.http.redact import redact, redact_url
from arbiter.http.retry import RetryBudget, RetryPolicy
from arbiter.jury.critics import CriticSpec
from arbiter.jury.jury import Jury
from arbiter.providers.registry import ProviderRegistry
from arbiter.systems.http import HttpSystem
from tests.integration.serving import serve_asgi

CRITIQUE = {"accuracy": 5, "consistency": 5, "completeness": 5, "callouts": []}


def _chat(content: Any) -> dict[str, Any]:
    return {
        "choices": [{"message": {"content": json.dumps(content)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }


class Peers:
    """An ASGI app answering a chat completion, counting requests and client connections."""

    def __init__(self, body: bytes | None = None) -> None:
        self.requests = 0
        self.peers: set[tuple[str, int]] = set()
        self.body = body or json.dumps(_chat(CRITIQUE)).encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        self.requests += 1
        self.peers.add(tuple(scope["client"]))  # type: ignore[arg-type]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": self.body})


@pytest.fixture
def server() -> Iterator[tuple[str, Peers]]:
    app = Peers()
    with serve_asgi(app) as url:
        yield url, app


async def test_a_provider_keeps_one_pool_for_all_its_calls(server: tuple[str, Peers]) -> None:
    url, app = server
    settings = Settings(_env_file=None, llama_cpp_url=f"{url}/v1", provider_concurrency=4)
    provider = ProviderRegistry.default(plugins=False).build("llama_cpp", settings)
    spec = CriticSpec(name="c", provider="llama_cpp", model="m")
    jury = Jury([spec], providers={"llama_cpp": provider})
    case = Case(id="c", task="t", context="c", output="o")
    verdicts = await jury.judge_many([case] * 40, concurrency=8)
    assert {v.decision for v in verdicts} == {"ACCEPT"}
    assert app.requests == 40
    # A client per call (the old post_json) opened 40 connections; the pool reuses at
    # most its concurrency limit's worth.
    assert len(app.peers) <= 4
    await provider.aclose()  # type: ignore[attr-defined]


async def test_a_429_is_retried_after_its_retry_after_and_the_critic_lives() -> None:
    # Today's defect: a 429 killed the critic although RateLimited.retry_after existed.
    calls: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(asyncio.get_event_loop().time())
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "0.2"}, json={"error": "slow"})
        return httpx.Response(200, json=_chat(CRITIQUE))

    registry = ProviderRegistry.default(plugins=False)
    provider = registry.build(
        "llama_cpp", Settings(_env_file=None), transport=httpx.MockTransport(handler)
    )
    jury = Jury(
        [CriticSpec(name="c", provider="llama_cpp", model="m")], providers={"llama_cpp": provider}
    )
    verdict = await jury.judge_async(Case(id="c", task="t", context="c", output="o"))
    assert verdict.critiques[0].status == "ok"
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.2  # Retry-After honoured


async def test_retries_stop_at_the_configured_count_and_the_last_error_is_raised() -> None:
    seen = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal seen
        seen += 1
        return httpx.Response(503, headers={"Retry-After": "0"}, json={"error": "down"})

    client = HttpClient(transport=httpx.MockTransport(handler), retry=RetryPolicy(retries=3))
    with pytest.raises(ProviderUnavailable, match="HTTP 503: down"):
        await client.post_json("http://p.test/x", {}, where="p m", timeout=5)
    assert seen == 4


async def test_a_non_retryable_error_is_not_retried() -> None:
    seen = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal seen
        seen += 1
        return httpx.Response(400, json={"error": {"message": "bad schema"}})

    client = HttpClient(transport=httpx.MockTransport(handler), retry=RetryPolicy(retries=3))
    with pytest.raises(InvalidResponse, match="bad schema"):
        await client.post_json("http://p.test/x", {}, where="p m", timeout=5)
    assert seen == 1


async def test_a_retry_that_cannot_finish_in_time_is_not_made() -> None:
    seen = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal seen
        seen += 1
        return httpx.Response(429, headers={"Retry-After": "30"}, json={"error": "later"})

    client = HttpClient(transport=httpx.MockTransport(handler), retry=RetryPolicy(retries=5))
    with pytest.raises(RateLimited):
        await client.post_json("http://p.test/x", {}, where="p m", timeout=1.0)
    assert seen == 1  # waiting 30 s would outlive the call's 1 s


def test_the_retry_budget_caps_retries_at_a_share_of_first_attempts() -> None:
    budget = RetryBudget(ratio=0.5, minimum=1)
    granted = []
    for _ in range(10):
        budget.record_attempt()
        granted.append(budget.try_spend())
    assert budget.spent == 6  # 1 + 0.5 x 10
    assert budget.refused == 4
    assert granted[:2] == [True, True]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_backoff_is_exponential_with_equal_jitter_and_honours_retry_after(seed: int) -> None:
    policy, rng = RetryPolicy(base_s=0.5, cap_s=4.0, max_retry_after_s=60), random.Random(seed)

    class Error:
        retryable, retry_after = True, None

    delays = [policy.delay(Error(), attempt, rng) for attempt in range(1, 6)]
    ceilings = [0.5, 1.0, 2.0, 4.0, 4.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    Error.retry_after = 300.0  # type: ignore[assignment]
    assert policy.delay(Error(), 1, rng) == 60


async def test_the_concurrency_limit_bounds_calls_in_flight() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return httpx.Response(200, json={"ok": True})

    client = HttpClient(transport=httpx.MockTransport(handler), concurrency=3)
    await asyncio.gather(
        *(client.post_json("http://p.test/x", {}, where="p", timeout=5) for _ in range(20))
    )
    assert peak == 3


@pytest.mark.parametrize("declared", [True, False])
async def test_an_answer_larger_than_the_bound_is_refused_unread(declared: bool) -> None:
    big = b'{"x": "' + b"a" * 200_000 + b'"}'

    def handler(request: httpx.Request) -> httpx.Response:
        if declared:
            return httpx.Response(200, content=big)
        return httpx.Response(200, stream=httpx.ByteStream(big), headers={})

    client = HttpClient(transport=httpx.MockTransport(handler), max_response_bytes=10_000)
    with pytest.raises(InvalidResponse, match="larger than 10,000 bytes"):
        await client.post_json("http://p.test/x", {}, where="p m", timeout=5)


async def test_the_http_system_refuses_a_body_past_its_bound() -> None:
    app = Peers(body=b'{"label": "' + b"x" * 100_000 + b'"}')
    with serve_asgi(app) as url:
        system = HttpSystem(f"{url}/ingest", max_response_bytes=50_000)
        with pytest.raises(InvalidSystemResponse, match="larger than 50,000 bytes"):
            await system({"a": 1})


async def test_a_timeout_names_the_whole_call_s_limit() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json={})

    client = HttpClient(transport=httpx.MockTransport(slow), retry=RetryPolicy(retries=2))
    with pytest.raises(ProviderTimeout, match=r"p m at http://p\.test: no answer within 0\.2s"):
        await client.post_json("http://p.test/x", {}, where="p m", timeout=0.2)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("GET http://h/x?api_key=s3cr3t&n=1", "GET http://h/x?api_key=[redacted]&n=1"),
        ("https://h/x?token=abc&key=def", "https://h/x?token=[redacted]&key=[redacted]"),
        ("http://bob:hunter2@h/x", "http://bob:[redacted]@h/x"),
        ("refused sk-live-123", "refused [redacted]"),
        ("monkey=banana", "monkey=banana"),
    ],
)
def test_secrets_never_reach_a_message(text: str, shown: str) -> None:
    assert redact(text, ["sk-live-123"]) == shown


def test_a_url_with_a_query_secret_is_stored_redacted() -> None:
    assert redact_url("http://h:81/p?q=1&apikey=zz") == "http://h:81/p?q=1&apikey=[redacted]"
    system = HttpSystem("http://svc.test/ingest?api_key=s3cr3t")
    assert "s3cr3t" not in json.dumps(system.describe())


def test_a_query_secret_reaches_no_message_report_or_store(cli: Any, tmp_path: Path) -> None:
    # The old http system printed "?api_key=..." to stdout, reports and the store.
    dataset = tmp_path / "data.jsonl"
    dataset.write_text('{"id": "a", "input": {"x": 1}, "expected_label": "low"}\n')
    url = "http://127.0.0.1:9/ingest?api_key=SUPERSECRET"
    result = cli("run", "--dataset", str(dataset), "--system", "http", "--url", url, "-q")
    assert result.code == 1  # every call failed: unreachable
    stored = (tmp_path / "store.db").read_bytes()
    reports = [cli("report", "x").err] + [
        cli("report", run, "--format", f).out
        for run in [line.split()[1] for line in result.err.splitlines() if line.startswith("run ")]
        for f in ("json", "junit", "markdown")
    ]
    assert "SUPERSECRET" not in result.out + result.err
    assert b"SUPERSECRET" not in stored
    assert all("SUPERSECRET" not in text for text in reports)
    assert "api_key=[redacted]" in result.err


def test_a_short_secret_is_hidden_where_it_stands_whole_and_never_blanks_letters() -> None:
    from arbiter.http.redact import redact

    message = "Input should be 'text' or 'json_object'; sent key x with x-api"
    assert redact(message, ["x"]) == (
        "Input should be 'text' or 'json_object'; sent key [redacted] with x-api"
    )
    # A long secret is hidden wherever it occurs, inside a word too.
    assert redact("tok=abcd1234efgh;", ["abcd1234efgh"]) == "tok=[redacted];"
    assert redact("nothing here", ["", None]) == "nothing here"
