"""Every error the agents routes document, sent for real, answers in the one error shape."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from arbiter.server.errors import ERROR_CODES
from tests.server.test_api_errors import (  # noqa: F401  (fixtures)
    BAD_CURSOR,
    LIMIT,
    Ctx,
    Send,
    _no_key,
    open_ctx,
    small_app,
)

PROTOBUF = {"content-type": "application/x-protobuf"}
RUN = {"trajectory": {"agent": {"name": "a"}, "status": "completed", "final_answer": "ok"}}
TOO_BIG = {"trajectory": {**RUN["trajectory"], "final_answer": "x" * (2 * LIMIT)}}
NO_RUN = "/v1/trajectories/tr-000000000000000000000000"

MINE = (
    "/v1/agents",
    "/v1/agents/{name}",
    "/v1/agents/{name}/runs",
    "/v1/trajectories",
    "/v1/trajectories/{run_id}",
    "/v1/traces",
    "/v1/logs",
)
"""The paths of the agents router."""


def _export(path: str, body: bytes, headers: dict[str, str]) -> Send:
    return lambda c: c.client.post(path, content=body, headers=headers)


CASES: dict[tuple[str, str, int], Send] = {
    ("GET", "/v1/agents", 400): lambda c: c.client.get("/v1/agents", params=BAD_CURSOR),
    ("GET", "/v1/agents", 401): _no_key("GET", "/v1/agents"),
    ("GET", "/v1/agents", 422): lambda c: c.client.get("/v1/agents", params={"limit": 0}),
    ("GET", "/v1/agents/{name}", 401): _no_key("GET", "/v1/agents/a"),
    ("GET", "/v1/agents/{name}", 404): lambda c: c.client.get("/v1/agents/nobody"),
    ("GET", "/v1/agents/{name}", 422): lambda c: c.client.get("/v1/agents/a?kind=robot"),
    ("GET", "/v1/agents/{name}/runs", 400): lambda c: c.client.get(
        "/v1/agents/a/runs", params=BAD_CURSOR
    ),
    ("GET", "/v1/agents/{name}/runs", 401): _no_key("GET", "/v1/agents/a/runs"),
    ("GET", "/v1/agents/{name}/runs", 422): lambda c: c.client.get(
        "/v1/agents/a/runs", params={"band": "green"}
    ),
    ("POST", "/v1/trajectories", 400): lambda c: c.client.post(
        "/v1/trajectories", json={"record": {"hello": "world"}}
    ),
    ("POST", "/v1/trajectories", 401): _no_key("POST", "/v1/trajectories", json=RUN),
    ("POST", "/v1/trajectories", 413): lambda c: c.client.post("/v1/trajectories", json=TOO_BIG),
    ("POST", "/v1/trajectories", 422): lambda c: c.client.post("/v1/trajectories", json={}),
    ("GET", "/v1/trajectories", 400): lambda c: c.client.get("/v1/trajectories", params=BAD_CURSOR),
    ("GET", "/v1/trajectories", 401): _no_key("GET", "/v1/trajectories"),
    ("GET", "/v1/trajectories", 422): lambda c: c.client.get(
        "/v1/trajectories", params={"kind": "robot"}
    ),
    ("GET", "/v1/trajectories/{run_id}", 401): _no_key("GET", NO_RUN),
    ("GET", "/v1/trajectories/{run_id}", 404): lambda c: c.client.get(NO_RUN),
    ("GET", "/v1/trajectories/{run_id}", 422): lambda c: c.client.get(
        "/v1/trajectories/" + "x" * 41
    ),
    ("POST", "/v1/traces", 400): _export("/v1/traces", b"\x0a\xff\xff", PROTOBUF),
    ("POST", "/v1/traces", 401): _no_key("POST", "/v1/traces", content=b"", headers=PROTOBUF),
    ("POST", "/v1/traces", 413): _export("/v1/traces", b"\x00" * (2 * LIMIT), PROTOBUF),
    ("POST", "/v1/traces", 415): _export("/v1/traces", b"{}", {"content-type": "text/plain"}),
    ("POST", "/v1/logs", 400): _export("/v1/logs", b"\x0a\xff\xff", PROTOBUF),
    ("POST", "/v1/logs", 401): _no_key("POST", "/v1/logs", content=b"", headers=PROTOBUF),
    ("POST", "/v1/logs", 413): _export("/v1/logs", b"\x00" * (2 * LIMIT), PROTOBUF),
    ("POST", "/v1/logs", 415): _export("/v1/logs", b"", {"content-type": "application/xml"}),
}


def test_every_documented_error_has_a_case(small_app: FastAPI) -> None:  # noqa: F811
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
    case: tuple[str, str, int],
    open_ctx: Ctx,  # noqa: F811
) -> None:
    status = case[2]
    answer = CASES[case](open_ctx)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["code"] == ERROR_CODES[status]
    assert "\n" not in body["error"]["message"]
    assert "Traceback" not in answer.text
