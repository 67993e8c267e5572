"""REST annotations: create with the ruling frozen, list (owner-scoped), calibration."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key


def _label(item: str, label: str, verdict: str = "fail", **extra: Any) -> dict[str, Any]:
    return {
        "item_id": item,
        "dimension": "groundedness",
        "label": label,
        "ruling": {"judge": "grounded_overlap", "verdict": verdict, "score": 0.2},
        "annotator": "rita",
        **extra,
    }


def test_an_annotation_is_stored_with_its_ruling_frozen(client: TestClient) -> None:
    made = client.post("/v1/annotations", json=_label("ex-1", "agree"))
    assert made.status_code == 201
    body = made.json()
    assert body["ruling"]["verdict"] == "fail"
    assert body["owner"] is None  # an open server: nobody owns it
    listed = client.get("/v1/annotations").json()
    assert listed["total"] == 1
    assert listed["items"][0] == body


def test_agree_without_a_ruling_is_refused(client: TestClient) -> None:
    answer = client.post("/v1/annotations", json={**_label("ex-1", "agree"), "ruling": None})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "bad_request"
    assert "ruling" in answer.json()["error"]["message"]


def test_latest_label_per_annotator_wins_unless_asked_for_all(client: TestClient) -> None:
    client.post("/v1/annotations", json=_label("ex-1", "agree"))
    client.post("/v1/annotations", json=_label("ex-1", "disagree"))
    latest = client.get("/v1/annotations").json()
    assert [a["label"] for a in latest["items"]] == ["disagree"]
    every = client.get("/v1/annotations", params={"latest": "false"}).json()
    assert [a["label"] for a in every["items"]] == ["agree", "disagree"]


def test_annotations_are_scoped_to_their_key(client: TestClient, server_store: Store) -> None:
    _, a = create_api_key(server_store, "a")
    _, b = create_api_key(server_store, "b")
    made = client.post("/v1/annotations", json=_label("ex-1", "pass"), headers={"X-API-Key": a})
    assert made.status_code == 201
    assert client.get("/v1/annotations", headers={"X-API-Key": a}).json()["total"] == 1
    assert client.get("/v1/annotations", headers={"X-API-Key": b}).json()["total"] == 0


@pytest.mark.parametrize("n_pairs", [12])
def test_calibration_counts_the_pairs_and_gives_kappa(client: TestClient, n_pairs: int) -> None:
    # The judge said fail on every other item; the human agrees on all but two.
    for i in range(n_pairs):
        verdict = "fail" if i % 2 else "pass"
        label = "disagree" if i in (0, 1) else "agree"
        answer = client.post("/v1/annotations", json=_label(f"ex-{i}", label, verdict))
        assert answer.status_code == 201
    client.post("/v1/annotations", json={**_label("note", "pass"), "ruling": None})
    report = client.get("/v1/calibration", params={"dimension": "groundedness"}).json()
    (judge,) = report["judges"]
    assert judge["judge"] == "grounded_overlap"
    assert judge["dimension"] == "groundedness"
    assert judge["n_pairs"] == n_pairs
    assert judge["agreement"]["value"] == pytest.approx(10 / 12)
    # 5 pass/pass, 5 fail/fail, 2 crossed: p_o = 10/12, p_e = 1/2, kappa = 2/3
    assert judge["kappa"]["value"] == pytest.approx(2 / 3)
    assert judge["status"] == "calibrated"
    assert report["excluded"]["notes"] == 1  # the note is never evidence
