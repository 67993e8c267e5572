"""REST: /v1/agents/{name}/trust, the inbox, reviews, votes, backtests and the gate,
through the app over a real store, with API keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from tests.trust.helpers import save, stored

SCOPE = {"databases": ["sales"], "entities": ["orders"], "description": "sales data"}
DRIFT = {
    "question": "What did we spend on HR?",
    "answer": "The hr.salaries table shows 4M.",
    "scope": SCOPE,
    "mode": "enforce",
}


class DriftJudge:
    """The scope judge of a model that rules every answer drifted."""

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="about HR, not sales")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.chdir(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text('[evidence]\nmin_runs_proven = 5\n[breaker]\nmode = "freeze"\n')
    monkeypatch.setenv("ARBITER_TRUST_POLICY", str(policy))
    monkeypatch.setenv("ARBITER_TRUST_WEBHOOK_URLS", "")
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    _, a = create_api_key(store, "team a")
    _, b = create_api_key(store, "team b")
    _, admin = create_api_key(store, "ops", admin=True)
    app = create_app(Settings(home=tmp_path / "home"), store=store)
    app.state.gate_judge = DriftJudge()
    with TestClient(app) as client:
        yield {"client": client, "store": store, "a": a, "b": b, "admin": admin, "app": app}
    store.close()


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _submit(client: TestClient, key: str, agent: str, passed: bool) -> dict[str, Any]:
    cost = 0.01 if passed else 5.0
    body = {
        "trajectory": {
            "agent": {"name": agent},
            "status": "completed",
            "steps": [{"kind": "llm_call", "model": "m", "cost_usd": cost}],
            "final_answer": "ok",
        }
    }
    answer = client.post("/v1/trajectories", json=body, headers=_h(key))
    assert answer.status_code == 201, answer.text
    return answer.json()["items"][0]


def test_trust_needs_a_key_and_is_per_owner(env: dict[str, Any]) -> None:
    client, store = env["client"], env["store"]
    a_id = env["a"].split("_")[1]
    save(store, [stored(i, "bot", True) for i in range(6)], owner=a_id)
    assert client.get("/v1/agents/bot/trust").status_code == 401
    mine = client.get("/v1/agents/bot/trust", headers=_h(env["a"]))
    assert mine.status_code == 200, mine.text
    assert mine.json()["owner"] == a_id
    assert mine.json()["autonomous"] is True
    assert client.get("/v1/agents/bot/trust", headers=_h(env["b"])).status_code == 404
    other = client.get(f"/v1/agents/bot/trust?owner={a_id}", headers=_h(env["b"]))
    assert other.status_code == 403
    seen = client.get(f"/v1/agents/bot/trust?owner={a_id}", headers=_h(env["admin"]))
    assert seen.status_code == 200


def test_a_frozen_agents_withheld_answer_is_parked_and_approved(env: dict[str, Any]) -> None:
    client, store = env["client"], env["store"]
    a_id = env["a"].split("_")[1]
    save(store, [stored(i, "bot", False) for i in range(6)], owner=a_id)
    from arbiter.contract.trust import Freeze
    from arbiter.store.trust_repository import add_freeze
    from tests.trust.helpers import START

    add_freeze(
        store, Freeze(agent="bot", owner=a_id, frozen=True, by="breaker", reason="t", at=START)
    )
    trust = client.get("/v1/agents/bot/trust", headers=_h(env["a"])).json()
    assert trust["autonomous"] is False
    gate = client.post("/v1/gate", json={"agent": "bot", **DRIFT}, headers=_h(env["a"]))
    assert gate.status_code == 200, gate.text
    assert gate.json()["mode"] == "review"
    assert gate.json()["action"] == "park_for_review"
    decision = gate.json()["decision"]["id"]
    unfrozen = client.post("/v1/gate", json={"agent": "calm", **DRIFT}, headers=_h(env["a"]))
    assert unfrozen.json()["action"] == "withhold"
    from arbiter.store.gate_repository import gate_decisions

    assert [d.id for d in gate_decisions(env["store"], everyone=True, agent="bot")] == [decision]
    reviews = client.get("/v1/assurance/reviews", headers=_h(env["a"])).json()
    assert [r["decision_id"] for r in reviews] == [decision]
    assert reviews[0]["answer"] is None  # content only on request
    assert client.get("/v1/assurance/reviews", headers=_h(env["b"])).json() == []
    assert (
        client.post(f"/v1/assurance/reviews/{decision}/approve", headers=_h(env["b"])).status_code
        == 404
    )
    approved = client.post(
        f"/v1/assurance/reviews/{decision}/approve",
        json={"release_original": True, "note": "fine"},
        headers=_h(env["a"]),
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == "released"
    assert approved.json()["answer"] == DRIFT["answer"]
    again = client.post(f"/v1/assurance/reviews/{decision}/reject", headers=_h(env["a"]))
    assert again.status_code == 404
    inbox = client.get("/v1/assurance/inbox", headers=_h(env["a"])).json()
    assert sorted(e["kind"] for e in inbox["items"]) == ["gate_park", "gate_withhold"]
    first = inbox["items"][0]["id"]
    acked = client.post(
        f"/v1/assurance/inbox/{first}/ack", json={"note": "seen"}, headers=_h(env["a"])
    )
    assert acked.status_code == 200
    assert client.get("/v1/assurance/inbox", headers=_h(env["a"])).json()["unacked"] == 1
    history = client.get("/v1/agents/bot/trust/history", headers=_h(env["a"])).json()
    kinds = [h["kind"] for h in history]
    assert kinds.index("event:gate_park") < kinds.index("review")


def test_votes_and_backtest(env: dict[str, Any]) -> None:
    client, store = env["client"], env["store"]
    a_id = env["a"].split("_")[1]
    records = [stored(i, "bot", True, cost=0.2) for i in range(6)]
    save(store, records, owner=a_id)
    vote = client.post(
        "/v1/votes", json={"run_id": records[0].id, "vote": "down"}, headers=_h(env["a"])
    )
    assert vote.status_code == 201, vote.text
    assert vote.json()["verdict_seen"] is True
    assert (
        client.post(
            "/v1/votes", json={"run_id": records[0].id, "vote": "up"}, headers=_h(env["b"])
        ).status_code
        == 404
    )
    report = client.post(
        "/v1/trust/backtest",
        json={
            "policy": "[evidence]\nmin_runs_proven = 5\n",
            "thresholds": {"max_cost_usd": {"healthy": 0.05, "danger": 0.1}},
            "gate_mode": "review",
        },
        headers=_h(env["a"]),
    )
    assert report.status_code == 200, report.text
    assert report.json()["runs_changing_band"] == 6
    bad = client.post(
        "/v1/trust/backtest", json={"policy": {"floors": {"heathy": 1}}}, headers=_h(env["a"])
    )
    assert bad.status_code == 400
    assert "floors.heathy" in bad.json()["error"]["message"]


def test_ingest_trips_the_breaker_once_and_a_webhook_gets_one_signed_call(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    import hmac

    from tests.trust.webhook_receiver import webhook_receiver

    client = env["client"]
    with webhook_receiver() as hook:
        monkeypatch.setenv("ARBITER_TRUST_WEBHOOK_URLS", hook.url)
        monkeypatch.setenv("ARBITER_TRUST_WEBHOOK_SECRET", "s3cret")
        for _ in range(6):
            _submit(client, env["a"], "sliding", True)
        for _ in range(12):
            _submit(client, env["a"], "sliding", False)
        assert hook.arrived.wait(timeout=20)
        trust = client.get("/v1/agents/sliding/trust", headers=_h(env["a"])).json()
        assert trust["state"] == "at_risk"
        assert trust["autonomous"] is False
        events = client.get("/v1/assurance/inbox", headers=_h(env["a"])).json()["items"]
        assert [e["kind"] for e in events] == ["breaker_trip"]
    assert len(hook.calls) == 1
    headers, body = hook.calls[0]
    stamp = headers["x-arbiter-timestamp"]
    mac = hmac.new(b"s3cret", stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert headers["x-arbiter-signature"] == "sha256=" + mac
    assert b'"breaker_trip"' in body


def test_a_broken_trust_policy_never_touches_ingest(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "broken.toml").write_text("[floors]\nheathy = 1\n")
    monkeypatch.setenv("ARBITER_TRUST_POLICY", str(tmp_path / "broken.toml"))
    stored_run = _submit(env["client"], env["a"], "bot", False)
    assert stored_run["passed"] is False
