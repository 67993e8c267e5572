"""The http system against a real uvicorn server imitating Synapse-L4's ``/ingest``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

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


APP = Starlette(
    routes=[
        Route("/ingest", ingest, methods=["POST"]),
        Route("/slow", slow, methods=["POST"]),
        Route("/unavailable", unavailable, methods=["POST"]),
        Route("/limited", limited, methods=["POST"]),
        Route("/garbage", garbage, methods=["POST"]),
        Route("/incomplete", incomplete, methods=["POST"]),
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
    assert prediction.raw_output["anomaly_score"] == confidence


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
    with pytest.raises(InvalidSystemResponse) as caught:
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
