"""Hostile trajectories are input errors naming the field, never a 500 or a traceback.

Costs or durations whose sums overflow a float (1e308 twice), times with and without a
zone in one run, a τ²-bench run that ends before it starts: through ``arbiter agent
score`` (exit 3, one line naming the field) and ``POST /v1/trajectories`` (a 4xx naming
it), in Arbiter's own shapes and through the τ²-bench, mapping and OTLP importers alike.
Before, these raised ``OverflowError`` (``math.fsum``) or ``TypeError`` (comparing a
zoned and a zoneless time) out of the contract: a 500, or a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories
from tests.helpers import otlp_json as otlp

from .test_tau2_bench import _results as tau2_results
from .test_tau2_bench import _simulation as tau2_simulation

UDERIA = Path(__file__).parent / "data" / "uderia_turn.jsonl"
BIG = 1e308


def _tau2(mutate: Any) -> dict[str, Any]:
    simulation = tau2_simulation("0", 0, 1.0)
    mutate(simulation)
    return tau2_results([simulation])


def _costly(simulation: dict[str, Any]) -> None:
    for message in simulation["messages"]:
        if message["role"] == "assistant":
            message["cost"] = BIG


def _slow(simulation: dict[str, Any]) -> None:
    simulation["messages"][2]["generation_time_seconds"] = BIG


def _zoned_message(simulation: dict[str, Any]) -> None:
    simulation["messages"][4]["timestamp"] = "2025-06-01T10:00:05+00:00"


def _ends_first(simulation: dict[str, Any]) -> None:
    simulation["start_time"], simulation["end_time"] = (
        simulation["end_time"],
        simulation["start_time"],
    )


def _uderia(mutate: Any) -> dict[str, Any]:
    record = json.loads(UDERIA.read_text(encoding="utf-8").splitlines()[0])
    mutate(record)
    return record


def _turn_cost(record: dict[str, Any]) -> None:
    record["turn_cost"] = BIG


def _zoneless_step(record: dict[str, Any]) -> None:
    record["execution_trace"][1]["started_at"] = "2026-03-02T09:14:06"


def _otlp_costs() -> dict[str, Any]:
    chat = {"gen_ai__operation__name": "chat", "gen_ai__usage__cost": BIG}
    trace = "5b8efff798038103d269b633813fc60c"
    return otlp.traces(
        otlp.span(trace, 1, "invoke_agent a", end=100, gen_ai__operation__name="invoke_agent"),
        otlp.span(trace, 2, "chat m", 1, start=1, end=40, **chat),
        otlp.span(trace, 3, "chat m", 1, start=60, end=99, **chat),
    )


RECORDS: dict[str, tuple[Any, str | None, str]] = {
    # name: (record, its --format / 'format', what the error must name)
    "tau2-costs": (_tau2(_costly), "tau2_bench", "cost_usd"),
    "tau2-duration": (_tau2(_slow), "tau2_bench", "duration_ms"),
    "tau2-mixed-times": (_tau2(_zoned_message), "tau2_bench", "messages[4].timestamp"),
    "tau2-ends-before-start": (_tau2(_ends_first), "tau2_bench", "end_time"),
    "otlp-costs": (_otlp_costs(), "otlp", "cost_usd"),
}
MAPPED: dict[str, tuple[Any, str]] = {
    "mapping-costs": (_uderia(_turn_cost), "turn_cost"),
    "mapping-mixed-times": (_uderia(_zoneless_step), "execution_trace.1.started_at"),
}


@pytest.mark.parametrize("name", [*RECORDS, *MAPPED])
def test_agent_score_refuses_a_hostile_file_naming_the_field(
    cli: Any, tmp_path: Path, name: str
) -> None:
    if name in MAPPED:
        record, field = MAPPED[name]
        args = ["--mapping", "uderia_turn"]
    else:
        record, format, field = RECORDS[name]
        args = ["--format", format] if format else []
    file = tmp_path / f"{name}.json"
    file.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = cli("agent", "score", str(file), *args, "--store")
    assert result.code == 3, result.err
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    assert field in result.err
    assert str(file) in result.err


@pytest.fixture
def client(tmp_path: Path) -> Iterator[tuple[TestClient, Store]]:
    store = Store(f"sqlite:///{tmp_path / 'server.db'}")
    app = create_app(Settings(db_url=store.url, home=tmp_path / "home"), store=store)
    with TestClient(app, raise_server_exceptions=False) as served:
        yield served, store
    store.close()


def _trajectory(**fields: Any) -> dict[str, Any]:
    return {"id": "t", "steps": [], **fields}


OWN_SHAPES: dict[str, tuple[dict[str, Any], str]] = {
    # body, what the error must name
    "step-costs": (
        {
            "trajectory": _trajectory(
                steps=[{"kind": "llm_call", "cost_usd": BIG}, {"kind": "llm_call", "cost_usd": BIG}]
            )
        },
        "cost_usd",
    ),
    "step-durations": (
        {
            "trajectory": _trajectory(
                steps=[
                    {"kind": "tool_call", "name": "a", "duration_ms": BIG},
                    {"kind": "tool_call", "name": "b", "duration_ms": BIG},
                ]
            )
        },
        "duration_ms",
    ),
    "flow-node-costs": (
        {"flow": {"nodes": [{"id": "a", "cost_usd": BIG}, {"id": "b", "cost_usd": BIG}]}},
        "cost_usd",
    ),
    "mixed-times-in-a-step": (
        {
            "trajectory": _trajectory(
                steps=[
                    {
                        "kind": "llm_call",
                        "started_at": "2025-01-01T00:00:00",
                        "ended_at": "2025-01-01T00:00:01Z",
                    }
                ]
            )
        },
        "started_at",
    ),
    "mixed-times-across-steps": (
        {
            "record": _trajectory(
                started_at="2025-01-01T00:00:00Z",
                steps=[{"kind": "llm_call", "started_at": "2025-01-01T00:00:00"}],
            ),
            "format": "trajectory",
        },
        "steps[0].started_at",
    ),
    "mixed-times-in-a-flow": (
        {
            "flow": {
                "started_at": "2025-01-01T00:00:00Z",
                "nodes": [{"id": "a", "started_at": "2025-01-01T00:00:00"}],
            }
        },
        "nodes[0].started_at",
    ),
}


@pytest.mark.parametrize("name", [*OWN_SHAPES, *RECORDS, *MAPPED])
def test_a_hostile_submission_is_a_4xx_naming_the_field_and_stores_nothing(
    client: tuple[TestClient, Store], name: str
) -> None:
    served, store = client
    if name in OWN_SHAPES:
        body, field = OWN_SHAPES[name]
    elif name in MAPPED:
        record, field = MAPPED[name]
        body = {"record": record, "format": "mapping", "mapping": "uderia_turn"}
    else:
        record, format, field = RECORDS[name]
        body = {"record": record, "format": format}
    answer = served.post("/v1/trajectories", json=body)
    assert answer.status_code in (400, 422), answer.text
    error = answer.json()["error"]
    assert field in f"{error['message']} {error.get('field') or ''}", error
    assert "\n" not in error["message"]
    assert list_trajectories(store)[1] == 0


def test_an_openai_conversation_posted_with_an_agent_name_lands_on_that_agent(
    client: tuple[TestClient, Store],
) -> None:
    served, _ = client
    conversation = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
        ]
    }
    answer = served.post(
        "/v1/trajectories",
        json={"record": conversation, "agent": "greeter", "agent_version": "2"},
    )
    assert answer.status_code == 201, answer.text
    (stored,) = answer.json()["items"]
    assert (stored["agent"], stored["agent_version"]) == ("greeter", "2")
    roster = served.get("/v1/agents").json()
    assert [entry["name"] for entry in roster["items"]] == ["greeter"]
