"""The ``mcp`` system against a real MCP server (the official SDK) under uvicorn.

The server stands in for Sentinel-L7: an ``analyze-transaction`` tool answering a
structured ``{"risk_level", "confidence", "driver"}``, plus tools that are slow,
raise, or answer in text. It is served both stateful (SSE answers, a session id)
and stateless (plain JSON answers, no session).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arbiter.contract import Prediction
from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemHTTPError,
    SystemTimeout,
    SystemUnreachable,
    ToolError,
)
from arbiter.systems.base import ResponseMapping
from arbiter.systems.mcp import McpToolSystem
from tests.integration.serving import free_port, serve_asgi

TOOL = "analyze-transaction"
API_KEY = "letmein"
HIGH_RISK_COUNTRIES = frozenset({"KP", "IR"})


class Assessment(BaseModel):
    risk_level: str
    confidence: float
    driver: str | None


def assess(amount: float, country: str) -> tuple[str, float]:
    """The fake's deterministic verdict, also the tests' expectation."""
    if amount >= 10_000:
        level = "critical"
    elif country in HIGH_RISK_COUNTRIES:
        level = "high"
    elif amount >= 1_000:
        level = "medium"
    else:
        level = "low"
    return level, round(0.5 + min(amount, 50_000) / 100_000, 4)


def build_server(release: threading.Event) -> MCPServer:
    server = MCPServer("sentinel-l7-fake")

    @server.tool(name=TOOL)
    def analyze_transaction(amount: float, country: str, driver: str | None = None) -> Assessment:
        level, confidence = assess(amount, country)
        return Assessment(risk_level=level, confidence=confidence, driver=driver)

    @server.tool(name="slow")
    async def slow() -> Assessment:
        await anyio.to_thread.run_sync(release.wait, 10, abandon_on_cancel=True)
        return Assessment(risk_level="low", confidence=1.0, driver=None)

    @server.tool(name="explode")
    def explode(reason: str) -> Assessment:
        raise ServerToolError(f"provider failed: {reason}")

    @server.tool(name="protocol-error")
    def protocol_error() -> Assessment:
        raise MCPError(code=-32042, message="the provider registry is down")

    @server.tool(name="text-answer", structured_output=False)
    def text_answer(answer: str) -> str:
        return answer

    @server.tool(name="big", structured_output=False)
    def big(size: int) -> str:
        return json.dumps({"risk_level": "low", "confidence": 0.5, "pad": "x" * size})

    @server.tool(name="no-risk-level")
    def no_risk_level() -> dict[str, Any]:
        return {"confidence": 0.3}

    return server


def build_app(mode: str, release: threading.Event) -> ASGIApp:
    """The fake's ASGI app; stateless mode also answers plain JSON instead of SSE."""
    stateless = mode == "stateless"
    app = build_server(release).streamable_http_app(
        stateless_http=stateless, json_response=stateless
    )
    return gateway(app)


def gateway(app: ASGIApp) -> ASGIApp:
    """Serve ``/guarded/...`` as ``/...`` only with the right X-Api-Key; ``/busy/...`` is a 429,
    ``/busy-until/...`` a 503 whose Retry-After is an HTTP date two minutes ahead."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/busy/"):
            busy = PlainTextResponse("slow down", status_code=429, headers={"Retry-After": "7"})
            await busy(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith("/busy-until/"):
            when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
            busy = PlainTextResponse("maintenance", status_code=503, headers={"Retry-After": when})
            await busy(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith("/guarded/"):
            if dict(scope["headers"]).get(b"x-api-key") != API_KEY.encode():
                await PlainTextResponse("bad api key", status_code=401)(scope, receive, send)
                return
            path = scope["path"].removeprefix("/guarded")
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await app(scope, receive, send)

    return guarded


async def call(system: McpToolSystem, example: dict[str, Any], *, entered: bool) -> Prediction:
    """One call, on an entered system or on a bare one."""
    if not entered:
        return await system(example)
    async with system:
        return await system(example)


@pytest.fixture(scope="module", params=["stateful", "stateless"])
def base_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Base URL of a fake server, stateful or stateless, shared by the module's tests."""
    release = threading.Event()
    with serve_asgi(build_app(request.param, release)) as url:
        try:
            yield url
        finally:
            release.set()


@pytest.fixture
def url(base_url: str) -> str:
    return f"{base_url}/mcp"


@pytest.mark.parametrize(
    ("amount", "country"),
    [(12.5, "DE"), (2_500.0, "FR"), (300.0, "KP"), (25_000.0, "US")],
)
async def test_risk_level_and_confidence_become_label_and_confidence(
    url: str, amount: float, country: str
) -> None:
    level, confidence = assess(amount, country)
    async with McpToolSystem(url, TOOL, timeout=5) as system:
        prediction = await system({"amount": amount, "country": country})
    assert prediction.label == level
    assert prediction.confidence == pytest.approx(confidence)
    assert prediction.raw_output == {"risk_level": level, "confidence": confidence, "driver": None}


@pytest.mark.parametrize("input_driver", [None, "ollama"])
async def test_fixed_driver_argument_reaches_the_tool(url: str, input_driver: str | None) -> None:
    example: dict[str, Any] = {"amount": 50.0, "country": "DE"}
    if input_driver is not None:
        example["driver"] = input_driver
    async with McpToolSystem(url, TOOL, fixed_arguments={"driver": "gemini"}, timeout=5) as system:
        prediction = await system(example)
    assert prediction.raw_output["driver"] == "gemini"


async def test_sixteen_concurrent_calls_on_one_session_are_each_answered(url: str) -> None:
    inputs = [{"amount": 700.0 * i, "country": "KP" if i % 5 == 0 else "DE"} for i in range(16)]
    async with McpToolSystem(url, TOOL, timeout=5) as system:
        predictions = await asyncio.gather(*(system(example) for example in inputs))
    got = [(p.label, p.confidence) for p in predictions]
    want = [assess(example["amount"], example["country"]) for example in inputs]
    assert got == want


async def test_a_call_without_async_with_opens_its_own_session(url: str) -> None:
    system = McpToolSystem(url, TOOL, fixed_arguments={"driver": "claude"}, timeout=5)
    prediction = await system({"amount": 2_000.0, "country": "FR"})
    assert (prediction.label, prediction.raw_output["driver"]) == ("medium", "claude")


async def test_unknown_tool_is_an_input_error_listing_the_tools(url: str) -> None:
    with pytest.raises(InputError, match="analyze-transaction") as caught:
        async with McpToolSystem(url, "analyse-transaction", timeout=5):
            pass
    assert "'analyse-transaction'" in str(caught.value)


@pytest.mark.parametrize("entered", [True, False])
async def test_a_raising_tool_is_a_tool_error_with_its_message(url: str, entered: bool) -> None:
    system = McpToolSystem(url, "explode", timeout=5)
    with pytest.raises(ToolError, match="provider failed: quota exhausted"):
        await call(system, {"reason": "quota exhausted"}, entered=entered)


async def test_a_slow_tool_is_a_timeout_and_the_session_survives(url: str) -> None:
    async with McpToolSystem(url, "slow", timeout=0.5) as system:
        started = time.monotonic()
        with pytest.raises(SystemTimeout, match=r"'slow'.*0\.5s"):
            await system({})
        assert time.monotonic() - started < 5
        assert system.describe()["tool"] == "slow"
    async with McpToolSystem(url, TOOL, timeout=5) as healthy:
        assert (await healthy({"amount": 1.0, "country": "DE"})).label == "low"


async def test_protocol_error_is_an_invalid_response(url: str) -> None:
    async with McpToolSystem(url, "protocol-error", timeout=5) as system:
        with pytest.raises(InvalidSystemResponse, match=r"-32042: the provider registry is down"):
            await system({})


async def test_text_answer_is_parsed_as_json(url: str) -> None:
    answer = json.dumps({"risk_level": "high", "confidence": 0.8})
    async with McpToolSystem(url, "text-answer", timeout=5) as system:
        prediction = await system({"answer": answer})
    assert (prediction.label, prediction.confidence) == ("high", 0.8)
    assert prediction.raw_output == {"risk_level": "high", "confidence": 0.8}


async def test_text_answer_that_is_not_json_is_an_invalid_response(url: str) -> None:
    async with McpToolSystem(url, "text-answer", timeout=5) as system:
        with pytest.raises(InvalidSystemResponse, match="not JSON"):
            await system({"answer": "looks fine to me"})


async def test_text_answer_is_read_by_the_one_json_reader(url: str) -> None:
    # A number too large for a float means nothing the same way everywhere: refused, as in
    # a dataset file (json.loads read it as infinity and the call passed).
    answer = '{"risk_level": "high", "confidence": 0.8, "amount": 1e999}'
    async with McpToolSystem(url, "text-answer", timeout=5) as system:
        with pytest.raises(InvalidSystemResponse, match="too large for a float"):
            await system({"answer": answer})


async def test_an_answer_past_the_bound_is_refused(url: str) -> None:
    async with McpToolSystem(url, "big", timeout=5, max_response_bytes=50_000) as system:
        assert (await system({"size": 10})).label == "low"  # under the bound: read
        with pytest.raises(InvalidSystemResponse, match="larger than 50,000 bytes"):
            await system({"size": 100_000})


async def test_missing_mapped_field_is_reported(url: str) -> None:
    async with McpToolSystem(url, "no-risk-level", timeout=5) as system:
        with pytest.raises(MissingField, match="risk_level"):
            await system({})


async def test_custom_mapping_reads_other_fields(url: str) -> None:
    mapping = ResponseMapping(label="driver", confidence=None)
    system = McpToolSystem(url, TOOL, fixed_arguments={"driver": "gemini"}, mapping=mapping)
    prediction = await system({"amount": 1.0, "country": "DE"})
    assert (prediction.label, prediction.confidence) == ("gemini", None)


async def test_headers_are_sent(base_url: str) -> None:
    system = McpToolSystem(f"{base_url}/guarded/mcp", TOOL, headers={"X-Api-Key": API_KEY})
    async with system:
        assert (await system({"amount": 1.0, "country": "DE"})).label == "low"


async def test_http_error_status_is_a_system_http_error(base_url: str) -> None:
    url = f"{base_url}/guarded/mcp"
    system = McpToolSystem(url, TOOL, headers={"X-Api-Key": "wrong"}, timeout=5)
    with pytest.raises(SystemHTTPError, match="HTTP 401: bad api key") as caught:
        async with system:
            pass
    assert (caught.value.status_code, caught.value.retryable) == (401, False)


async def test_rate_limit_keeps_its_retry_after(base_url: str) -> None:
    system = McpToolSystem(f"{base_url}/busy/mcp", TOOL, timeout=5)
    with pytest.raises(SystemHTTPError, match="HTTP 429: slow down") as caught:
        await system({"amount": 1.0, "country": "DE"})
    assert (caught.value.retryable, caught.value.retry_after) == (True, 7.0)


async def test_retry_after_as_an_http_date_becomes_seconds(base_url: str) -> None:
    system = McpToolSystem(f"{base_url}/busy-until/mcp", TOOL, timeout=5)
    with pytest.raises(SystemHTTPError, match="HTTP 503: maintenance") as caught:
        await system({"amount": 1.0, "country": "DE"})
    assert caught.value.retry_after is not None
    assert 100 <= caught.value.retry_after <= 120


async def test_wrong_path_is_a_404(base_url: str) -> None:
    with pytest.raises(SystemHTTPError, match="HTTP 404") as caught:
        await McpToolSystem(f"{base_url}/nowhere", TOOL, timeout=5)({"amount": 1.0})
    assert caught.value.status_code == 404


@pytest.mark.parametrize("entered", [True, False])
async def test_nothing_listening_is_unreachable(entered: bool) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    system = McpToolSystem(url, TOOL, timeout=5)
    with pytest.raises(SystemUnreachable, match=rf"'{TOOL}' at {url}: unreachable") as caught:
        await call(system, {"amount": 1.0, "country": "DE"}, entered=entered)
    assert caught.value.retryable


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_server_gone_mid_session_fails_only_the_call(mode: str) -> None:
    example = {"amount": 1.0, "country": "DE"}
    with ExitStack() as running:
        base_url = running.enter_context(serve_asgi(build_app(mode, threading.Event())))
        async with McpToolSystem(f"{base_url}/mcp", TOOL, timeout=5) as system:
            assert (await system(example)).label == "low"
            running.close()  # stop the server, keep the session
            with pytest.raises(SystemUnreachable, match=": unreachable"):
                await system(example)
            await asyncio.sleep(0.05)  # the dead session did not cancel this task


def test_describe_is_json_and_keeps_header_values_out() -> None:
    system = McpToolSystem(
        "http://user:secret@localhost:8000/mcp?token=t0k3n",
        TOOL,
        fixed_arguments={"driver": "gemini"},
        headers={"X-Api-Key": "s3cr3t"},
        timeout=7,
    )
    described = system.describe()
    text = json.dumps(described)
    assert "s3cr3t" not in text
    assert "secret" not in text
    assert "t0k3n" not in text
    assert described["kind"] == "mcp"
    assert described["headers"] == ["X-Api-Key"]
    assert described["fixed_arguments"] == {"driver": "gemini"}
    assert described["mapping"]["label"] == "risk_level"
    assert described["timeout"] == 7.0


@pytest.mark.parametrize(
    ("url", "tool", "timeout"),
    [("ftp://host/mcp", TOOL, 5.0), ("http://host/mcp", " ", 5.0), ("http://host/mcp", TOOL, 0.0)],
)
def test_invalid_settings_are_input_errors(url: str, tool: str, timeout: float) -> None:
    with pytest.raises(InputError):
        McpToolSystem(url, tool, timeout=timeout)
