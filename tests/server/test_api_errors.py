"""Every error the REST core documents, sent for real, answers in the one error shape.

The table below holds one request per documented (method, path, status); a test checks
the table and the OpenAPI document agree, so a newly documented error needs its case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.server.errors import ERROR_CODES
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from tests.server.conftest import Seed
from tests.server.test_api_core import BROKEN

LIMIT = 4096
"""The body limit of the app these tests use."""

MINE = (
    "/v1/health",
    "/v1/critics",
    "/v1/arbitrate",
    "/v1/verdicts",
    "/v1/verdicts/{verdict_id}",
    "/v1/replay",
    "/v1/runs",
    "/v1/runs/{run_id}",
    "/v1/runs/{run_id}/results",
    "/v1/compare",
    "/v1/annotations",
    "/v1/calibration",
)
"""The paths of the REST core (other routers test their own errors)."""


@dataclass(frozen=True)
class Ctx:
    """What a case needs: a client of an open server, the seed, the store."""

    client: TestClient
    seed: Seed
    store: Store

    def keys_on(self) -> dict[str, str]:
        """Configure a (non-admin) key, so requests without one are refused; its header."""
        _, key = create_api_key(self.store, "someone")
        return {"X-API-Key": key}


Send = Callable[[Ctx], httpx.Response]

BAD_CURSOR = {"cursor": "bm90IG9uZSBvZiBvdXJz"}
TOO_BIG = {**BROKEN, "output": "x" * (2 * LIMIT)}


def _no_key(method: str, path: str, **kwargs: object) -> Send:
    def send(ctx: Ctx) -> httpx.Response:
        ctx.keys_on()
        return ctx.client.request(method, path.format(**vars(ctx.seed)), **kwargs)  # type: ignore[arg-type]

    return send


def _store_down(ctx: Ctx) -> httpx.Response:
    with ctx.store.engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE api_keys")
    return ctx.client.get("/v1/health")


CASES: dict[tuple[str, str, int], Send] = {
    ("GET", "/v1/health", 503): _store_down,
    ("GET", "/v1/critics", 401): _no_key("GET", "/v1/critics"),
    ("POST", "/v1/arbitrate", 400): lambda c: c.client.post(
        "/v1/arbitrate", content=b'{"task": "\xff"}', headers={"content-type": "application/json"}
    ),
    ("POST", "/v1/arbitrate", 401): _no_key("POST", "/v1/arbitrate", json=BROKEN),
    ("POST", "/v1/arbitrate", 413): lambda c: c.client.post("/v1/arbitrate", json=TOO_BIG),
    ("POST", "/v1/arbitrate", 422): lambda c: c.client.post("/v1/arbitrate", json={"task": "t"}),
    ("GET", "/v1/verdicts", 400): lambda c: c.client.get("/v1/verdicts", params=BAD_CURSOR),
    ("GET", "/v1/verdicts", 401): _no_key("GET", "/v1/verdicts"),
    ("GET", "/v1/verdicts", 422): lambda c: c.client.get("/v1/verdicts", params={"limit": 0}),
    ("GET", "/v1/verdicts/{verdict_id}", 401): _no_key("GET", "/v1/verdicts/{verdict_id}"),
    ("GET", "/v1/verdicts/{verdict_id}", 404): lambda c: c.client.get("/v1/verdicts/99999"),
    ("GET", "/v1/verdicts/{verdict_id}", 422): lambda c: c.client.get("/v1/verdicts/one"),
    ("POST", "/v1/replay", 400): lambda c: c.client.post(
        "/v1/replay", json={}, headers=c.keys_on()
    ),
    ("POST", "/v1/replay", 401): _no_key("POST", "/v1/replay", json={}),
    ("POST", "/v1/replay", 404): lambda c: c.client.post("/v1/replay", json={"run_id": "nope"}),
    ("POST", "/v1/replay", 413): lambda c: c.client.post(
        "/v1/replay", json={"run_id": "x" * (2 * LIMIT)}
    ),
    ("POST", "/v1/replay", 422): lambda c: c.client.post("/v1/replay", json={"run": 1}),
    ("GET", "/v1/runs", 400): lambda c: c.client.get("/v1/runs", params={"tag": "no-equals"}),
    ("GET", "/v1/runs", 401): _no_key("GET", "/v1/runs"),
    ("GET", "/v1/runs", 422): lambda c: c.client.get("/v1/runs", params={"status": "asleep"}),
    ("GET", "/v1/runs/{run_id}", 401): _no_key("GET", "/v1/runs/{run_id}"),
    ("GET", "/v1/runs/{run_id}", 404): lambda c: c.client.get("/v1/runs/no-such-run"),
    ("GET", "/v1/runs/{run_id}", 422): lambda c: c.client.get("/v1/runs/" + "9" * 41),
    ("GET", "/v1/runs/{run_id}/results", 400): lambda c: c.client.get(
        f"/v1/runs/{c.seed.run_id}/results", params=BAD_CURSOR
    ),
    ("GET", "/v1/runs/{run_id}/results", 401): _no_key("GET", "/v1/runs/{run_id}/results"),
    ("GET", "/v1/runs/{run_id}/results", 404): lambda c: c.client.get("/v1/runs/nope/results"),
    ("GET", "/v1/runs/{run_id}/results", 422): lambda c: c.client.get(
        f"/v1/runs/{c.seed.run_id}/results", params={"order": "random"}
    ),
    ("GET", "/v1/compare", 401): _no_key("GET", "/v1/compare?a={run_id}&b={other_run_id}"),
    ("GET", "/v1/compare", 404): lambda c: c.client.get(
        "/v1/compare", params={"a": c.seed.run_id, "b": "nope"}
    ),
    ("GET", "/v1/compare", 422): lambda c: c.client.get("/v1/compare", params={"a": "x"}),
    ("POST", "/v1/annotations", 400): lambda c: c.client.post(
        "/v1/annotations",
        json={"item_id": "i", "dimension": "d", "label": "agree", "annotator": "a"},
    ),
    ("POST", "/v1/annotations", 401): _no_key(
        "POST", "/v1/annotations", json={"item_id": "i", "dimension": "d", "label": "pass"}
    ),
    ("POST", "/v1/annotations", 413): lambda c: c.client.post(
        "/v1/annotations",
        json={"item_id": "i", "dimension": "d", "label": "pass", "comment": "x" * (2 * LIMIT)},
    ),
    ("POST", "/v1/annotations", 422): lambda c: c.client.post(
        "/v1/annotations", json={"item_id": "i", "dimension": "d", "label": "maybe"}
    ),
    ("GET", "/v1/annotations", 400): lambda c: c.client.get("/v1/annotations", params=BAD_CURSOR),
    ("GET", "/v1/annotations", 401): _no_key("GET", "/v1/annotations"),
    ("GET", "/v1/annotations", 422): lambda c: c.client.get(
        "/v1/annotations", params={"limit": 501}
    ),
    ("GET", "/v1/calibration", 401): _no_key("GET", "/v1/calibration"),
    ("GET", "/v1/calibration", 422): lambda c: c.client.get(
        "/v1/calibration", params={"judge": ""}
    ),
}


@pytest.fixture
def small_app(server_store: Store, tmp_path: Path) -> FastAPI:
    """The app with a body limit of ``LIMIT`` bytes."""
    settings = Settings(db_url=server_store.url, home=tmp_path, server_max_body_bytes=LIMIT)
    return create_app(settings, store=server_store)


@pytest.fixture
def open_ctx(small_app: FastAPI, server_store: Store, seed: Seed) -> Iterator[Ctx]:
    """An open server (no key yet: a case needing one makes it)."""
    with TestClient(small_app) as client:
        yield Ctx(client, seed, server_store)


def test_every_documented_error_has_a_case(small_app: FastAPI) -> None:
    documented = {
        (method.upper(), path, int(status))
        for path, operations in small_app.openapi()["paths"].items()
        if path in MINE
        for method, operation in operations.items()
        for status in operation["responses"]
        if int(status) >= 400
    }
    assert documented == set(CASES)


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: f"{c[0]} {c[1]} {c[2]}")
def test_documented_error_answers_in_the_error_shape(
    case: tuple[str, str, int], open_ctx: Ctx
) -> None:
    status = case[2]
    answer = CASES[case](open_ctx)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["code"] == ERROR_CODES[status]
    assert body["error"]["message"]
    assert "\n" not in body["error"]["message"]
    assert "Traceback" not in answer.text
    assert open_ctx.store.describe() not in answer.text  # where the data lives is the server's


def test_a_chunked_body_past_the_limit_is_413(open_ctx: Ctx) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"task": "t", "context": "c", "output": "'
        for _ in range(4):
            yield b"x" * 2048
        yield b'"}'

    answer = open_ctx.client.post(
        "/v1/arbitrate", content=chunks(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "payload_too_large"


def test_a_body_under_the_limit_is_read(open_ctx: Ctx) -> None:
    answer = open_ctx.client.post("/v1/arbitrate", json={**BROKEN, "output": "x" * (LIMIT // 2)})
    assert answer.status_code == 201


def test_an_unknown_path_and_method_answer_in_the_shape(open_ctx: Ctx) -> None:
    missing = open_ctx.client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    wrong = open_ctx.client.delete("/v1/runs")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method_not_allowed"


def test_text_no_utf8_can_encode_is_a_422_in_the_shape(open_ctx: Ctx) -> None:
    # JSON may carry a lone surrogate (\ud800); it is refused as text, never stored.
    body = b'{"task": "\\ud800", "context": "c", "output": "o"}'
    answer = open_ctx.client.post(
        "/v1/arbitrate", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["field"] == "body.task"


@pytest.mark.parametrize(
    "cursor",
    [
        "eyJvIjotMX0",
        "eyJvIjoxZTk5OX0",
        "eyJvIjoxMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDB9",
        "W10",
        "%%%",
        "é",
    ],
    ids=["negative", "float", "huge", "a list", "not base64", "not ascii"],
)
def test_a_forged_cursor_is_a_400(open_ctx: Ctx, cursor: str) -> None:
    answer = open_ctx.client.get("/v1/verdicts", params={"cursor": cursor})
    assert answer.status_code == 400
    assert answer.json()["error"]["field"] == "query.cursor"


@pytest.mark.parametrize("depth", [33, 500, 900])
def test_metadata_nested_too_deep_is_a_422(open_ctx: Ctx, depth: int) -> None:
    # Within the size limit, yet deeper than serializers go: refused before judging.
    body = '{"task": "t", "context": "c", "output": "o", "metadata": {"a": %s}}' % (
        "[" * depth + "]" * depth
    )
    answer = open_ctx.client.post(
        "/v1/arbitrate", content=body.encode(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["field"] == "body.metadata"
    assert "deeper than 32" in answer.json()["error"]["message"]


def test_metadata_at_the_depth_limit_is_kept(open_ctx: Ctx) -> None:
    nested: object = "leaf"
    for _ in range(31):
        nested = [nested]
    answer = open_ctx.client.post("/v1/arbitrate", json={**BROKEN, "metadata": {"a": nested}})
    assert answer.status_code == 201
    assert answer.json()["case"]["metadata"] == {"a": nested}
