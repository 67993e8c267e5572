"""REST core: health, critics, arbitrate (stored and read back), verdicts, replay."""

from __future__ import annotations

from fastapi.testclient import TestClient

from arbiter.store import Store
from arbiter.store.browse_repository import load_verdict
from tests.server.conftest import Seed

BROKEN = {
    "task": "Summarize the refund policy.",
    "context": "Refunds are accepted within 30 days of purchase with a receipt.",
    "output": "Refunds are accepted within 90 days of purchase, no receipt needed.",
}


def test_health_says_open_without_keys(client: TestClient) -> None:
    answer = client.get("/v1/health")
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok"
    assert answer.json()["auth"] == "open"


def test_critics_are_the_offline_roster(client: TestClient) -> None:
    answer = client.get("/v1/critics")
    assert answer.status_code == 200
    critics = answer.json()
    assert len(critics) == 3
    assert {c["provider"] for c in critics} == {"mock"}


def test_arbitrate_stores_the_verdict_and_returns_its_id(
    client: TestClient, server_store: Store
) -> None:
    answer = client.post("/v1/arbitrate", json={**BROKEN, "id": "refund-1"})
    assert answer.status_code == 201
    body = answer.json()
    assert body["case"]["id"] == "refund-1"
    assert body["verdict"]["decision"] in {"REVISE", "REJECT"}
    stored = load_verdict(server_store, body["id"])
    assert stored is not None
    assert stored.verdict.decision == body["verdict"]["decision"]
    again = client.get(f"/v1/verdicts/{body['id']}")
    assert again.status_code == 200
    assert again.json() == body


def test_arbitrate_a_clean_output_accepts(client: TestClient) -> None:
    clean = {**BROKEN, "output": "Refunds are accepted within 30 days of purchase with a receipt."}
    answer = client.post("/v1/arbitrate", json=clean)
    assert answer.status_code == 201
    assert answer.json()["verdict"]["decision"] == "ACCEPT"
    assert answer.json()["case"]["id"].startswith("api-")


def test_missing_field_is_a_422_in_the_error_shape(client: TestClient) -> None:
    answer = client.post("/v1/arbitrate", json={"task": "t", "context": "c"})
    assert answer.status_code == 422
    assert answer.json() == {
        "error": {
            "code": "invalid_request",
            "message": "field 'body.output' is required",
            "field": "body.output",
        }
    }


def test_the_seeded_jury_verdict_reads_back(client: TestClient, seed: Seed) -> None:
    answer = client.get(f"/v1/verdicts/{seed.verdict_id}")
    assert answer.status_code == 200
    body = answer.json()
    assert body["run_id"] == seed.jury_run_id
    assert body["case"]["id"] == "multi_02"
    assert body["verdict"]["decision"] == "REJECT"
    assert len(body["verdict"]["critiques"]) == 3


def test_verdicts_list_pages_newest_first(client: TestClient, seed: Seed) -> None:
    first = client.get("/v1/verdicts", params={"limit": 1})
    assert first.status_code == 200
    page = first.json()
    assert page["total"] == 2
    assert len(page["items"]) == 1
    assert page["next"]
    second = client.get("/v1/verdicts", params={"limit": 1, "cursor": page["next"]})
    ids = {page["items"][0]["id"], second.json()["items"][0]["id"]}
    assert ids == {seed.verdict_id, seed.clean_verdict_id}
    assert second.json()["next"] is None


def test_replay_reproduces_the_seeded_run(client: TestClient, seed: Seed) -> None:
    answer = client.post("/v1/replay", json={"run_id": seed.jury_run_id})
    assert answer.status_code == 200
    assert answer.json() == {"run_id": seed.jury_run_id, "n_judgments": 2, "changed": []}
