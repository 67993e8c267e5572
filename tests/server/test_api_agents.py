"""REST agents: trajectories submitted and read back, the roster, one agent, its ledger,
and OTLP/HTTP ingest (JSON, gzip) with log events paired to their trace."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.contract import StoredTrajectory, Trajectory, run_hash
from arbiter.stats import wilson_interval
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from arbiter.store.trajectory_repository import list_trajectories, save_trajectories
from tests.helpers import otlp_json as otlp

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "agents"
TRACE = "0af7651916cd43dd8448eb211c80319c"
OTHER_TRACE = "1bf7651916cd43dd8448eb211c80319d"

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}


def _trajectory(
    agent: str, *, tool: str = "get_order", answer: str | None = "Done."
) -> dict[str, Any]:
    return {
        "agent": {"name": agent, "agent_class": "tool_enabled"},
        "steps": [
            {"kind": "tool_call", "name": tool, "arguments": {"order_id": "77"}, "result": "ok"}
        ],
        "final_answer": answer,
        "status": "completed",
    }


def _submit(client: TestClient, body: dict[str, Any], **headers: str) -> list[dict[str, Any]]:
    answer = client.post("/v1/trajectories", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def test_a_submitted_trajectory_is_scored_stored_and_read_back(client: TestClient) -> None:
    body = _trajectory("orders")
    [stored] = _submit(client, {"trajectory": body})
    assert stored["agent"] == "orders"
    assert stored["source_format"] == "trajectory"
    assert stored["passed"] is True
    assert stored["band"] == "healthy"
    assert stored["trajectory_hash"] == run_hash(Trajectory.model_validate(body))
    names = {s["name"] for s in stored["scores"]}
    assert {"completed", "tool_success_rate", "no_tool_loops"} <= names
    assert {spec["name"] for spec in stored["scorers"]} == names
    again = client.get(f"/v1/trajectories/{stored['id']}")
    assert again.status_code == 200
    assert again.json() == stored


def test_a_run_a_rule_convicts_fails_in_the_danger_band(client: TestClient) -> None:
    body = {
        "trajectory": _trajectory("orders", tool="delete_order"),
        "assertions": {"must_not_call": ["delete_order"]},
    }
    [stored] = _submit(client, body)
    assert stored["passed"] is False
    assert stored["band"] == "danger"
    assert stored["convicted_by"] == ["forbidden_tools"]


def test_an_openai_conversation_record_is_told_apart_and_imported(client: TestClient) -> None:
    record = json.loads((EXAMPLES / "support-v1.jsonl").read_text().splitlines()[0])
    [stored] = _submit(client, {"record": record})
    assert stored["source_format"] == "openai_messages"
    assert [s["name"] for s in stored["trajectory"]["steps"] if s["kind"] == "tool_call"] == [
        "get_order",
        "issue_refund",
    ]


def test_tau_bench_results_give_a_run_each_with_the_reward_as_a_rule(client: TestClient) -> None:
    record = json.loads((EXAMPLES / "retail-tau-bench.json").read_text())
    stored = _submit(client, {"record": record})
    assert len(stored) == len(record) == 12
    for run, trial in zip(stored, record, strict=True):
        assert run["scores"][0]["name"] == "reward"
        if trial["reward"] != 1:
            assert run["passed"] is False
            assert "reward" in run["convicted_by"]


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({}, 422, "exactly one of"),
        ({"trajectory": _trajectory("a"), "record": {"messages": []}}, 422, "exactly one of"),
        ({"record": {"hello": "world"}}, 400, "cannot tell the record's format"),
        (
            {"record": {"turn_id": "t"}, "format": "mapping", "mapping": "/etc/passwd"},
            400,
            "shipped",
        ),
        ({"record": {"steps": "no"}, "format": "trajectory"}, 400, "steps"),
        ({"record": {}, "format": "csv"}, 422, "format"),
    ],
)
def test_a_bad_submission_is_one_error_line_and_stores_nothing(
    client: TestClient, server_store: Store, body: dict[str, Any], status: int, needle: str
) -> None:
    answer = client.post("/v1/trajectories", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert needle in error["message"]
    assert "\n" not in error["message"]
    assert list_trajectories(server_store)[1] == 0


def test_an_unknown_trajectory_or_agent_is_a_404(client: TestClient) -> None:
    for path in ("/v1/trajectories/tr-000000000000000000000000", "/v1/agents/nobody"):
        answer = client.get(path)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"


def _undecided(agent: str) -> StoredTrajectory:
    trajectory = Trajectory.model_validate({"agent": {"name": agent}})
    return StoredTrajectory(
        id="tr-" + "0" * 24,
        created_at=datetime.now(UTC),
        kind="trajectory",
        agent=agent,
        source_format="trajectory",
        trajectory_hash=run_hash(trajectory),
        status="unknown",
        passed=None,
        band=None,
        trajectory=trajectory,
    )


def test_the_roster_lists_the_worst_health_first_with_honest_intervals(
    client: TestClient, server_store: Store
) -> None:
    for _ in range(4):
        _submit(client, {"trajectory": _trajectory("steady")})
    for tool in ("get_order", "delete_order", "delete_order"):
        _submit(
            client,
            {
                "trajectory": _trajectory("shaky", tool=tool),
                "assertions": {"must_not_call": ["delete_order"]},
            },
        )
    # A run no scorer decided (stored as such): its agent is inactive, with no number.
    save_trajectories(server_store, [_undecided("quiet")])
    answer = client.get("/v1/agents")
    assert answer.status_code == 200
    roster = answer.json()
    names = [entry["name"] for entry in roster["items"]]
    assert names[:2] == ["shaky", "steady"]
    shaky, steady = roster["items"][0], roster["items"][1]
    assert shaky["health"] == "danger"
    low, high = wilson_interval(1, 3)
    assert shaky["pass_rate"] == {"estimate": 1 / 3, "low": low, "high": high, "n": 3, "passed": 1}
    assert shaky["recent"] == [True, False, False]
    assert steady["health"] == "healthy"
    assert steady["runs"] == 4
    assert steady["trend"]["direction"] is None  # too few runs for a direction
    quiet = roster["items"][-1]
    assert (quiet["name"], quiet["health"], quiet["pass_rate"]) == ("quiet", "inactive", None)
    assert (quiet["runs"], quiet["evaluated"], quiet["recent"]) == (1, 0, [None])
    assert roster["total"] == len(roster["items"]) == 3


def test_an_agent_has_a_figure_per_scorer_that_decided(client: TestClient) -> None:
    _submit(
        client,
        {"trajectory": _trajectory("shaky"), "assertions": {"must_not_call": ["delete_order"]}},
    )
    _submit(
        client,
        {
            "trajectory": _trajectory("shaky", tool="delete_order"),
            "assertions": {"must_not_call": ["delete_order"]},
        },
    )
    answer = client.get("/v1/agents/shaky")
    assert answer.status_code == 200
    detail = answer.json()
    figures = {f["scorer"]: f for f in detail["dimensions"]}
    forbidden = figures["forbidden_tools"]
    assert (forbidden["passed"], forbidden["failed"]) == (1, 1)
    assert forbidden["health"] == "review"
    assert figures["tool_success_rate"]["bands"]["healthy"] == 2
    assert detail["evaluated"] == 2


def test_the_ledger_pages_newest_first_and_filters_by_band(client: TestClient) -> None:
    ids = []
    for tool in ("get_order", "delete_order", "get_order", "delete_order", "get_order"):
        body = {
            "trajectory": _trajectory("pager", tool=tool),
            "assertions": {"must_not_call": ["delete_order"]},
        }
        ids.append(_submit(client, body)[0]["id"])
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(f"/v1/agents/pager/runs{query}").json()
        assert page["total"] == 5
        seen += [row["id"] for row in page["items"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    danger = client.get("/v1/agents/pager/runs?band=danger").json()
    assert [row["id"] for row in danger["items"]] == [ids[3], ids[1]]
    assert danger["items"][0]["convicted_by"] == ["forbidden_tools"]
    chip = next(c for c in danger["items"][0]["chips"] if c["name"] == "forbidden_tools")
    assert chip == {"name": "forbidden_tools", "passed": False, "band": None, "error": False}


def test_a_key_sees_its_own_agents_and_an_admin_all(
    client: TestClient, server_store: Store
) -> None:
    _, a = create_api_key(server_store, "team a")
    _, b = create_api_key(server_store, "team b")
    _, admin = create_api_key(server_store, "ops", admin=True)
    [mine] = _submit(client, {"trajectory": _trajectory("a-agent")}, Authorization=f"Bearer {a}")
    _submit(client, {"trajectory": _trajectory("b-agent")}, **{"X-API-Key": b})

    def names(key: str) -> list[str]:
        answer = client.get("/v1/agents", headers={"Authorization": f"Bearer {key}"})
        return [entry["name"] for entry in answer.json()["items"]]

    assert names(a) == ["a-agent"]
    assert names(b) == ["b-agent"]
    assert sorted(names(admin)) == ["a-agent", "b-agent"]
    hidden = client.get(f"/v1/trajectories/{mine['id']}", headers={"X-API-Key": b})
    assert hidden.status_code == 404
    assert client.get("/v1/agents/a-agent", headers={"X-API-Key": b}).status_code == 404
    assert client.get("/v1/agents").status_code == 401


# --- POST /v1/traces and /v1/logs -------------------------------------------------------


def _runs(client: TestClient, agent: str = "support") -> list[dict[str, Any]]:
    page = client.get(f"/v1/agents/{agent}/runs").json()
    return [client.get(f"/v1/trajectories/{row['id']}").json() for row in page["items"]]


def _post(
    client: TestClient, path: str, document: dict[str, Any], *, compress: bool = False
) -> None:
    body = json.dumps(document).encode()
    headers = dict(JSON)
    if compress:
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    answer = client.post(path, content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {}


def test_otlp_json_traces_gzipped_are_imported_scored_and_stored(client: TestClient) -> None:
    spans = otlp.agent_spans(TRACE)
    tool = otlp.span(
        TRACE,
        4,
        "execute_tool get_order",
        1,
        start=41,
        end=59,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="get_order",
    )
    _post(client, "/v1/traces", otlp.traces(*spans, tool), compress=True)
    [run] = _runs(client)
    stored = StoredTrajectory.model_validate(run)
    assert stored.trace_id == TRACE
    assert stored.source_format == "otlp_json"
    assert stored.trajectory is not None
    assert [c.name for c in stored.trajectory.tool_calls] == ["get_order"]
    # No message was captured, so no answer: a rule convicts the run, as it should.
    assert stored.passed is False
    assert "answer_present" in stored.convicted_by
    # The exporter retries a batch: the run is replaced, not counted twice.
    _post(client, "/v1/traces", otlp.traces(*spans, tool))
    assert [r["id"] for r in _runs(client)] == [run["id"]]


def test_log_events_arriving_after_their_trace_add_its_tool_calls(client: TestClient) -> None:
    _post(client, "/v1/traces", otlp.traces(*otlp.agent_spans(TRACE)))
    [before] = _runs(client)
    assert [s["kind"] for s in before["trajectory"]["steps"]] == ["llm_call", "llm_call"]
    _post(client, "/v1/logs", otlp.logs(*otlp.tool_call_logs(TRACE)))
    [after] = _runs(client)
    assert after["id"] == before["id"]
    assert [s["kind"] for s in after["trajectory"]["steps"]] == [
        "llm_call",
        "tool_call",
        "llm_call",
    ]
    assert after["trajectory"]["final_answer"] == "Order 77 has shipped."
    assert after["trajectory_hash"] != before["trajectory_hash"]


def test_log_events_arriving_first_wait_for_their_spans(client: TestClient) -> None:
    _post(client, "/v1/logs", otlp.logs(*otlp.tool_call_logs(TRACE)))
    assert client.get("/v1/agents").json()["total"] == 0
    _post(client, "/v1/traces", otlp.traces(*otlp.agent_spans(TRACE)))
    [run] = _runs(client)
    assert [c["name"] for c in run["trajectory"]["steps"] if c["kind"] == "tool_call"] == [
        "get_order"
    ]


def test_a_trace_exported_in_two_batches_is_one_run_once_its_agent_span_arrives(
    client: TestClient,
) -> None:
    agent, *chats = otlp.agent_spans(TRACE)
    _post(client, "/v1/traces", otlp.traces(*chats))  # children end (and export) first
    partial = client.get("/v1/trajectories").json()
    assert partial["total"] == 2  # until the agent span comes, each model call is a root
    _post(client, "/v1/traces", otlp.traces(agent))
    [run] = _runs(client)
    assert [s["kind"] for s in run["trajectory"]["steps"]] == ["llm_call", "llm_call"]
    assert client.get("/v1/trajectories").json()["total"] == 1


def test_traces_of_different_keys_never_mix(client: TestClient, server_store: Store) -> None:
    _, a = create_api_key(server_store, "team a")
    _, b = create_api_key(server_store, "team b")
    body = json.dumps(otlp.traces(*otlp.agent_spans(TRACE))).encode()
    logs = json.dumps(otlp.logs(*otlp.tool_call_logs(TRACE))).encode()
    assert (
        client.post("/v1/traces", content=body, headers={**JSON, "X-API-Key": a}).status_code == 200
    )
    assert (
        client.post("/v1/logs", content=logs, headers={**JSON, "X-API-Key": b}).status_code == 200
    )
    page = client.get("/v1/agents/support/runs", headers={"X-API-Key": a}).json()
    [row] = page["items"]
    run = client.get(f"/v1/trajectories/{row['id']}", headers={"X-API-Key": a}).json()
    assert [s["kind"] for s in run["trajectory"]["steps"]] == ["llm_call", "llm_call"]


def test_a_trace_without_genai_spans_is_not_an_agent_run(client: TestClient) -> None:
    plain = otlp.span(OTHER_TRACE, 9, "GET /health", http__method="GET")
    _post(client, "/v1/traces", otlp.traces(plain))
    assert client.get("/v1/trajectories").json()["total"] == 0


def test_arbiters_own_evaluation_spans_sent_back_are_not_a_run(client: TestClient) -> None:
    evaluation = otlp.span(
        OTHER_TRACE,
        7,
        "evaluation",
        gen_ai__operation__name="evaluation",
        gen_ai__evaluation__name="completed",
    )
    _post(client, "/v1/traces", otlp.traces(evaluation, service="arbiter"))
    assert client.get("/v1/trajectories").json()["total"] == 0


@pytest.mark.parametrize(
    ("body", "headers", "status", "needle"),
    [
        (b"\x0a\xff\xff", PROTOBUF, 400, "not a protobuf ExportTraceServiceRequest"),
        (b"{", JSON, 400, "invalid JSON"),
        (b'{"spans": []}', JSON, 400, "expected an OTLP export request"),
        (b"not gzip", {**JSON, "Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (b"{}", {**JSON, "Content-Encoding": "br"}, 400, "unsupported content encoding"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "unsupported content type"),
    ],
)
def test_a_bad_export_is_answered_in_the_error_shape(
    client: TestClient, body: bytes, headers: dict[str, str], status: int, needle: str
) -> None:
    answer = client.post("/v1/traces", content=body, headers=headers)
    assert answer.status_code == status, answer.text
    assert needle in answer.json()["error"]["message"]


def test_an_empty_protobuf_export_is_answered_with_an_empty_protobuf_response(
    client: TestClient,
) -> None:
    answer = client.post("/v1/traces", content=b"", headers=PROTOBUF)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-protobuf"
    assert answer.content == b""
