"""The http system against real servers: a uvicorn app imitating Synapse-L4's ``/ingest``
(with endpoints that echo the request or answer as told) and raw TCP servers that
misbehave below HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import aiohttp
import psutil
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, Router

from arbiter.errors import (
    InvalidSystemResponse,
    MissingField,
    SystemHTTPError,
    SystemTimeout,
    SystemUnreachable,
)
from arbiter.systems.base import ResponseMapping
from arbiter.systems.http import HttpSystem
from tests.integration.serving import free_port, serve_asgi

SYNAPSE = ResponseMapping(label="status", confidence="anomaly_score", id="source_id")
TIMEOUT = 0.3


def status_for(score: float) -> str:
    if score < 0.4:
        return "nominal"
    return "degraded" if score < 0.8 else "critical"


async def ingest(request: Request) -> Response:
    """Score = the highest reading; a claimed status that contradicts it is rejected."""
    payload = await request.json()
    score = round(max(payload["readings"]), 3)
    status = status_for(score)
    claimed = payload.get("status")
    if claimed is not None and claimed != status:
        detail = f"judge_rejected: status {claimed!r} contradicts anomaly_score {score}"
        return JSONResponse({"detail": detail}, status_code=422)
    return JSONResponse(
        {"status": status, "anomaly_score": score, "source_id": payload["source_id"]}
    )


async def slow(request: Request) -> Response:
    await asyncio.sleep(TIMEOUT * 4)
    return JSONResponse({"status": "nominal", "anomaly_score": 0.0})


async def unavailable(request: Request) -> Response:
    return JSONResponse({"message": "judge model is warming up"}, status_code=503)


async def limited(request: Request) -> Response:
    return JSONResponse(
        {"error": {"message": "ingest quota exhausted"}},
        status_code=429,
        headers={"Retry-After": "2"},
    )


async def garbage(request: Request) -> Response:
    return PlainTextResponse("%%garbage; not json%%")


async def incomplete(request: Request) -> Response:
    return JSONResponse({"anomaly_score": 0.1, "source_id": "s-1"})


async def echo(request: Request) -> Response:
    """Answers a prediction carrying what was received and on which client port."""
    body = await request.body()
    assert request.client is not None
    return JSONResponse(
        {
            "label": "echoed",
            "confidence": 1.0,
            "method": request.method,
            "headers": dict(request.headers),
            "query": list(request.query_params.multi_items()),
            "body": body.decode(),
            "client_port": request.client.port,
        }
    )


async def scripted(request: Request) -> Response:
    """Answers with the status, headers and JSON or text body the request asks for."""
    script = await request.json()
    status, headers = script["status"], script.get("headers")
    if "json" in script:
        return JSONResponse(script["json"], status_code=status, headers=headers)
    return PlainTextResponse(script.get("text", ""), status_code=status, headers=headers)


def script(status: int, *, json: Any = None, text: str | None = None, **headers: str) -> Any:
    """The input that makes ``/scripted`` answer like this."""
    body = {"json": json} if json is not None else {"text": text or ""}
    return {"status": status, "headers": headers, **body}


class InFlight:
    """Holds each request until ``expect`` are in flight at once (or 5 s pass).

    Every answer carries the most requests seen in flight together, so a client that
    caps its connections below ``expect`` gets answers showing the cap.
    """

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def hold(self, request: Request) -> Response:
        expect = (await request.json())["expect"]
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            for _ in range(500):
                if self.peak >= expect:
                    break
                await asyncio.sleep(0.01)
            return JSONResponse({"label": "held", "in_flight": self.peak})
        finally:
            self.now -= 1
            if self.now == 0:
                self.peak = 0


METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
APP = Starlette(
    routes=[
        Route("/ingest", ingest, methods=["POST"]),
        Route("/slow", slow, methods=["POST"]),
        Route("/unavailable", unavailable, methods=["POST"]),
        Route("/limited", limited, methods=["POST"]),
        Route("/garbage", garbage, methods=["POST"]),
        Route("/incomplete", incomplete, methods=["POST"]),
        Route("/echo", echo, methods=METHODS),
        Route("/scripted", scripted, methods=["POST"]),
        Route("/hold", InFlight().hold, methods=["POST"]),
    ]
)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_asgi(APP) as url:
        yield url


def reading(source_id: str, *values: float, **extra: Any) -> dict[str, Any]:
    return {"source_id": source_id, "readings": list(values), **extra}


@pytest.mark.parametrize(
    ("payload", "label", "confidence"),
    [
        (reading("s-1", 0.1, 0.25), "nominal", 0.25),
        (reading("s-2", 0.5, 0.62), "degraded", 0.62),
        (reading("s-3", 0.93), "critical", 0.93),
    ],
)
async def test_ingest_maps_status_score_and_source_id(
    base_url: str, payload: dict[str, Any], label: str, confidence: float
) -> None:
    async with HttpSystem(f"{base_url}/ingest", mapping=SYNAPSE) as system:
        prediction = await system(payload)
    assert prediction.label == label
    assert prediction.confidence == confidence
    assert prediction.id == payload["source_id"]
    assert prediction.raw_output == {
        "status": label,
        "anomaly_score": confidence,
        "source_id": payload["source_id"],
    }


async def test_call_without_async_with_reaches_the_service(base_url: str) -> None:
    prediction = await HttpSystem(f"{base_url}/ingest", mapping=SYNAPSE)(reading("s-7", 0.81))
    assert (prediction.label, prediction.id) == ("critical", "s-7")


async def test_twenty_concurrent_calls_through_one_client_all_succeed(base_url: str) -> None:
    payloads = [reading(f"s-{i}", i / 20) for i in range(20)]
    async with HttpSystem(f"{base_url}/ingest", mapping=SYNAPSE) as system:
        predictions = await asyncio.gather(*(system(p) for p in payloads))
    assert [p.id for p in predictions] == [f"s-{i}" for i in range(20)]
    assert [p.label for p in predictions] == [status_for(i / 20) for i in range(20)]


async def test_judge_rejection_is_http_422_with_the_service_message(base_url: str) -> None:
    url = f"{base_url}/ingest"
    system = HttpSystem(url, mapping=SYNAPSE)
    with pytest.raises(SystemHTTPError) as caught:
        await system(reading("s-4", 0.93, status="nominal"))
    assert caught.value.status_code == 422
    assert not caught.value.retryable
    assert "judge_rejected: status 'nominal' contradicts anomaly_score 0.93" in str(caught.value)
    assert url in str(caught.value)


async def test_service_unavailable_is_retryable_http_error(base_url: str) -> None:
    with pytest.raises(SystemHTTPError) as caught:
        await HttpSystem(f"{base_url}/unavailable", mapping=SYNAPSE)(reading("s-5", 0.1))
    assert caught.value.status_code == 503
    assert caught.value.retryable
    assert "judge model is warming up" in str(caught.value)


async def test_rate_limit_carries_retry_after(base_url: str) -> None:
    with pytest.raises(SystemHTTPError) as caught:
        await HttpSystem(f"{base_url}/limited", mapping=SYNAPSE)(reading("s-6", 0.1))
    assert caught.value.status_code == 429
    assert caught.value.retry_after == 2.0
    assert "ingest quota exhausted" in str(caught.value)


async def test_slow_service_times_out(base_url: str) -> None:
    url = f"{base_url}/slow"
    with pytest.raises(SystemTimeout) as caught:
        await HttpSystem(url, mapping=SYNAPSE, timeout=TIMEOUT)(reading("s-8", 0.1))
    assert url in str(caught.value)
    assert f"{TIMEOUT:g}s" in str(caught.value)


async def test_plain_text_answer_is_invalid_response(base_url: str) -> None:
    with pytest.raises(InvalidSystemResponse, match="not JSON") as caught:
        await HttpSystem(f"{base_url}/garbage", mapping=SYNAPSE)(reading("s-9", 0.1))
    assert "%%garbage; not json%%" in str(caught.value)


async def test_answer_without_the_mapped_label_is_missing_field(base_url: str) -> None:
    url = f"{base_url}/incomplete"
    with pytest.raises(MissingField) as caught:
        await HttpSystem(url, mapping=SYNAPSE)(reading("s-10", 0.1))
    assert "'status'" in str(caught.value)
    assert url in str(caught.value)


async def test_connection_refused_is_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}/ingest"
    with pytest.raises(SystemUnreachable) as caught:
        await HttpSystem(url, mapping=SYNAPSE, timeout=2)(reading("s-11", 0.1))
    assert url in str(caught.value)


# --- what is sent --------------------------------------------------------------------

INPUT: dict[str, Any] = {"id": 7, "meta": {"source": "s-1", "tags": ["a", "b"]}, "text": "hi"}


@pytest.mark.parametrize(
    ("body_template", "received"),
    [
        (None, INPUT),
        ({"payload": {"n": "{{input.id}}"}}, {"payload": {"n": 7}}),
        ("{{input.meta.tags}}", ["a", "b"]),
    ],
)
async def test_post_sends_the_input_or_the_rendered_template_as_json(
    base_url: str, body_template: Any, received: Any
) -> None:
    system = HttpSystem(f"{base_url}/echo", body_template=body_template)
    echoed = (await system(INPUT)).raw_output
    assert echoed["method"] == "POST"
    assert echoed["headers"]["content-type"] == "application/json"
    assert json.loads(echoed["body"]) == received


@pytest.mark.parametrize("method", ["GET", "delete"])
async def test_get_and_delete_send_query_params_and_no_body(base_url: str, method: str) -> None:
    query = {"q": "x y", "n": 3, "flag": True, "ids": [1, 2], "none": None, "meta": {"a": [1]}}
    echoed = (await HttpSystem(f"{base_url}/echo", method=method)(query)).raw_output
    assert echoed["method"] == method.upper()
    assert echoed["body"] == ""
    assert echoed["query"] == [
        ["q", "x y"],
        ["n", "3"],
        ["flag", "true"],
        ["ids", "1"],
        ["ids", "2"],
        ["none", ""],
        ["meta", '{"a":[1]}'],
    ]


@pytest.mark.parametrize(
    ("userinfo", "headers", "sent"),
    [
        (
            "",
            {"Authorization": "Bearer s3cret", "X-Run": "r1"},
            {"authorization": "Bearer s3cret", "x-run": "r1", "accept": "application/json"},
        ),
        ("", {"accept": "text/plain"}, {"accept": "text/plain"}),
        ("user:pw@", {}, {"authorization": "Basic dXNlcjpwdw=="}),  # base64 of user:pw
    ],
)
async def test_configured_headers_and_url_credentials_are_sent(
    base_url: str, userinfo: str, headers: dict[str, str], sent: dict[str, str]
) -> None:
    url = f"{base_url}/echo".replace("://", f"://{userinfo}")
    echoed = (await HttpSystem(url, headers=headers)(INPUT)).raw_output
    assert {name: echoed["headers"].get(name) for name in sent} == sent


async def test_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    async def answer_as_proxy(scope: Any, receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        response = JSONResponse({"label": "proxied", "host": request.headers.get("host")})
        await response(scope, receive, send)

    with serve_asgi(Router(default=answer_as_proxy)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        prediction = await HttpSystem("http://svc.test/ingest", timeout=5)(INPUT)
    assert prediction.label == "proxied"
    assert prediction.raw_output["host"] == "svc.test"


# --- sessions and connections --------------------------------------------------------


async def connections_to(port: int, *, settle_at: int | None = None) -> int:
    """TCP connections this process holds open to ``port``, waiting up to 1 s for
    ``settle_at`` (a closed socket is released on the next turn of the loop)."""
    for _ in range(100):
        count = sum(
            1
            for conn in psutil.Process().net_connections(kind="tcp")
            if conn.raddr and conn.raddr.port == port
        )
        if settle_at is None or count == settle_at:
            return count
        await asyncio.sleep(0.01)
    return count


def port_of(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


async def test_async_with_keeps_one_connection_alive_and_closes_it_on_exit(
    base_url: str,
) -> None:
    port = port_of(base_url)
    async with HttpSystem(f"{base_url}/echo") as system:
        first = await system(INPUT)
        second = await system(INPUT)
        assert first.raw_output["client_port"] == second.raw_output["client_port"]
        assert await connections_to(port, settle_at=1) == 1
    assert await connections_to(port, settle_at=0) == 0


async def test_calls_outside_async_with_leave_no_connection_open(base_url: str) -> None:
    port = port_of(base_url)
    system = HttpSystem(f"{base_url}/echo")
    for _ in range(2):
        assert (await system(INPUT)).label == "echoed"
        assert await connections_to(port, settle_at=0) == 0


async def test_one_session_has_no_connection_cap_below_the_callers_concurrency(
    base_url: str,
) -> None:
    calls = 150  # above aiohttp's default cap of 100 connections
    async with HttpSystem(f"{base_url}/hold") as system:
        predictions = await asyncio.gather(*(system({"expect": calls}) for _ in range(calls)))
    assert {p.raw_output["in_flight"] for p in predictions} == {calls}


# --- error answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "message", "retryable", "retry_after"),
    [
        (
            script(422, json={"detail": "judge_rejected: score contradicts status"}),
            "judge_rejected: score contradicts status",
            False,
            None,
        ),
        (
            script(422, json={"detail": [{"loc": ["body", "x"], "msg": "field required"}]}),
            "field required",
            False,
            None,
        ),
        (script(429, json={"detail": "slow down"}, **{"Retry-After": "2"}), "slow down", True, 2.0),
        (script(502, text="upstream exploded " + "x" * 500), "upstream exploded", True, None),
        (script(500), "Internal Server Error", True, None),
    ],
)
async def test_error_status_carries_the_service_message_and_retry_after(
    base_url: str, answer: Any, message: str, retryable: bool, retry_after: float | None
) -> None:
    url = f"{base_url}/scripted"
    with pytest.raises(SystemHTTPError) as caught:
        await HttpSystem(url)(answer)
    error = caught.value
    assert (error.status_code, error.retryable, error.retry_after) == (
        answer["status"],
        retryable,
        retry_after,
    )
    assert message in str(error)
    assert url in str(error)
    assert "x" * 201 not in str(error)


async def test_retry_after_as_http_date_becomes_seconds_from_now(base_url: str) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    with pytest.raises(SystemHTTPError) as caught:
        await HttpSystem(f"{base_url}/scripted")(script(503, **{"Retry-After": when}))
    assert caught.value.retry_after is not None
    assert 100 <= caught.value.retry_after <= 120


async def test_redirect_is_not_followed(base_url: str) -> None:
    answer = script(307, **{"Location": "/ingest"})
    with pytest.raises(InvalidSystemResponse, match="HTTP 307"):
        await HttpSystem(f"{base_url}/scripted")(answer)


# --- failures below HTTP: raw TCP servers --------------------------------------------

Misbehaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"


def answering(raw: bytes, *, then_hang: bool = False) -> Misbehaviour:
    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(raw)
        await writer.drain()
        if then_hang:
            await reader.read()  # until the client gives up and closes

    return behave


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    pass


async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()


@asynccontextmanager
async def raw_server(behave: Misbehaviour) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            await behave(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/ingest"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("behave", "expected", "wording"),
    [
        pytest.param(hang_up, SystemUnreachable, "Server disconnected", id="hang-up"),
        pytest.param(reset, SystemUnreachable, "reset", id="reset"),
        pytest.param(
            answering(b"NOT HTTP AT ALL\r\n\r\n"), SystemUnreachable, "status line", id="not-http"
        ),
        pytest.param(
            answering(OK_HEAD + b"content-length: 100\r\n\r\n{"),
            SystemUnreachable,
            "the answer broke off",
            id="truncated-body",
        ),
        pytest.param(
            answering(OK_HEAD + b"content-encoding: gzip\r\ncontent-length: 4\r\n\r\nnope"),
            InvalidSystemResponse,
            "undecodable body",
            id="bad-gzip",
        ),
        pytest.param(never_answer, SystemTimeout, "no answer within 0.3s", id="silent"),
        pytest.param(
            answering(OK_HEAD + b"content-length: 100\r\n\r\n{", then_hang=True),
            SystemTimeout,
            "no answer within 0.3s",
            id="stalled-body",
        ),
    ],
)
async def test_connection_and_protocol_failures_become_our_errors(
    behave: Misbehaviour, expected: type[Exception], wording: str
) -> None:
    async with raw_server(behave) as url:
        with pytest.raises(expected) as caught:
            await HttpSystem(url, timeout=TIMEOUT)(INPUT)
    message = str(caught.value)
    assert wording in message
    assert url in message
    assert "\n" not in message
    assert not isinstance(caught.value, aiohttp.ClientError)
