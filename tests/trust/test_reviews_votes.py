"""Human review and the human vote: settled reviews expire, pending ones never; votes
align with verdicts (with a Wilson interval), feed calibration as κ pairs, and never
enter a measurement; the queue of recent rulings and the ambiguous tail."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.contract import ModelCalls, OnlineResult
from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.server.app import create_app
from arbiter.service.calibration import calibrate_store
from arbiter.service.grounding_gate import check_answer, list_parked_answers, resolve_parked_answer
from arbiter.service.votes import VERDICT_JUDGE, cast_vote, vote_pairs
from arbiter.stats import wilson_interval
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from arbiter.store.online_repository import save_online_results
from arbiter.store.trust_judging_repository import save_rulings
from tests.trust.helpers import save, stored

Cli = Callable[..., Any]
DRIFTING = "Per the hr.salaries table, 4.2M."


class DriftJudge:
    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="about HR")


def _park(store: Store, owner: str | None = None) -> str:
    decision = asyncio.run(
        check_answer(
            store,
            DRIFTING,
            question="Payroll?",
            scope=GateScope(databases=["sales"]),
            mode="review",
            judge=DriftJudge(),
            owner=owner,
        )
    )
    assert decision.action == "park_for_review"
    return decision.id


def test_settled_reviews_expire_after_the_ttl_and_pending_ones_never(store: Store) -> None:
    old, recent, pending = _park(store), _park(store), _park(store)
    now = datetime.now(UTC)
    resolve_parked_answer(store, old, "release", reviewer="ops", now=now - timedelta(days=40))
    resolve_parked_answer(store, recent, "discard", reviewer="ops", now=now - timedelta(days=2))

    def listed(status: Any, *, later: float = 0) -> set[str]:
        items = list_parked_answers(
            store,
            status=status,
            settled_ttl_days=30,
            limit=None,
            now=now + timedelta(days=later),
        )
        return {item.decision.id for item in items}

    assert listed(None) == {recent, pending}
    assert listed("released") == set()
    assert listed("discarded") == {recent}
    # A year on, every settled review has expired; the pending one is still owed.
    assert listed(None, later=365) == {pending}
    assert listed("pending", later=365) == {pending}
    # Nothing expires without a TTL: the records themselves are never deleted.
    assert len(list_parked_answers(store, status=None, limit=None)) == 3


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    _, a = create_api_key(store, "team a")
    _, b = create_api_key(store, "team b")
    _, admin = create_api_key(store, "ops", admin=True)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, home=tmp_path / "home", trust_review_ttl_days=7
    )
    app = create_app(settings, store=store)
    with TestClient(app) as client:
        yield {"client": client, "store": store, "a": a, "b": b, "admin": admin}
    store.close()


def _rounded(value: Any) -> Any:
    """``value`` with every float rounded to nine places (nested lists and dicts)."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _owner_id(key: str) -> str:
    return key.split("_")[1]


def test_the_review_queue_over_rest_drops_settled_items_past_the_settings_ttl(
    served: dict[str, Any],
) -> None:
    store, client, a = served["store"], served["client"], served["a"]
    owner = _owner_id(a)
    settled, fresh = _park(store, owner), _park(store, owner)
    resolve_parked_answer(
        store,
        settled,
        "release",
        reviewer="ops",
        owner=owner,
        now=datetime.now(UTC) - timedelta(days=8),
    )
    listed = client.get("/v1/assurance/reviews?status=all", headers=_h(a)).json()
    assert [item["decision_id"] for item in listed] == [fresh]


def _seed_runs(store: Store, owner: str) -> list[str]:
    records = [stored(1, "bot", True), stored(2, "bot", False), stored(3, "bot", True)]
    save(store, records, owner=owner)
    return [r.id for r in records]


def test_vote_alignment_has_its_wilson_interval_and_votes_never_enter_a_measurement(
    served: dict[str, Any],
) -> None:
    store, client, a, b = served["store"], served["client"], served["a"], served["b"]
    runs = _seed_runs(store, _owner_id(a))
    measured = [
        "/v1/agents/bot",
        "/v1/agents/bot/trust",
        "/v1/agents/bot/runs",
        "/v1/agents",
        *(f"/v1/trajectories/{run}" for run in runs),
    ]
    before = {path: client.get(path, headers=_h(a)).json() for path in measured}
    for run, vote in zip(runs, ["up", "up", "down"], strict=True):
        answer = client.post("/v1/votes", json={"run_id": run, "vote": vote}, headers=_h(a))
        assert answer.status_code == 201, answer.text
    # A changed mind: only the latest vote of a voter on a run counts.
    client.post("/v1/votes", json={"run_id": runs[2], "vote": "up"}, headers=_h(a))
    after = {path: client.get(path, headers=_h(a)).json() for path in measured}
    # Conduct decays with the clock, which moves between the two reads: compare its
    # figures to nine places.
    assert _rounded(after) == _rounded(before)
    alignment = client.get("/v1/agents/bot/votes", headers=_h(a)).json()
    # passed+up agrees, failed+up disagrees, passed+up (changed) agrees.
    assert (alignment["compared"], alignment["agreements"]) == (3, 2)
    assert alignment["interval"] == pytest.approx(list(wilson_interval(2, 3)))
    assert alignment["rate"] == pytest.approx(2 / 3)
    other = client.get("/v1/agents/bot/votes", headers=_h(b)).json()
    assert other["compared"] == 0  # another key's votes are not its to see
    calibration = client.get("/v1/calibration", headers=_h(a)).json()
    verdict = [j for j in calibration["judges"] if j["judge"] == VERDICT_JUDGE]
    assert [(j["dimension"], j["n_pairs"]) for j in verdict] == [("bot", 3)]


def test_votes_pair_with_the_verdict_and_each_judge_ruling_made_before_them(
    store: Store,
) -> None:
    runs = _seed_runs(store, "key-a")
    calls = ModelCalls(calls=1)
    save_rulings(
        store,
        run_id=runs[1],
        run_hash="h",
        agent="bot",
        owner="key-a",
        trigger="flagged",
        rulings=[("answer_groundedness", False, "no", calls), ("content_safety", None, "", calls)],
    )
    cast_vote(store, runs[1], "down", owner="key-a", viewer="key-a")
    save_rulings(  # after the vote: not what the voter saw
        store,
        run_id=runs[1],
        run_hash="h2",
        agent="bot",
        owner="key-a",
        trigger="flagged",
        rulings=[("groundedness", True, "fine", calls)],
    )
    pairs = vote_pairs(store, viewer="key-a")
    assert [(p.judge, p.dimension, p.judge_label, p.human_label) for p in pairs] == [
        (VERDICT_JUDGE, "bot", "fail", "fail"),
        ("answer_groundedness", "groundedness", "fail", "fail"),
        ("content_safety", "safety", None, "fail"),
    ]
    report = calibrate_store(store)
    judges = {(j.judge, j.dimension): j for j in report.judges}
    assert judges[("answer_groundedness", "groundedness")].n_pairs == 1
    assert judges[("content_safety", "safety")].n_judge_abstained == 1
    assert not {j.judge for j in calibrate_store(store, include_votes=False).judges}


def test_calibrate_store_at_the_terminal_counts_the_votes(cli: Cli, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    runs = _seed_runs(store, "")
    for run in runs:
        cast_vote(store, run, "up", owner=None, viewer=None)
    store.close()
    report = json.loads(cli("calibrate", "--store", "--json").out)
    [verdict] = [j for j in report["judges"] if j["judge"] == VERDICT_JUDGE]
    assert verdict["n_pairs"] == 3
    without = json.loads(cli("calibrate", "--store", "--no-votes", "--json").out)
    assert without["judges"] == []


def test_the_rulings_queue_and_the_ambiguous_tail(served: dict[str, Any]) -> None:
    store, client, a, b, admin = (served[k] for k in ("store", "client", "a", "b", "admin"))
    owner = _owner_id(a)
    calls = ModelCalls(calls=1, cost_usd=0.002)
    for index in range(3):
        save_rulings(
            store,
            run_id=f"tr-{index}",
            run_hash="h",
            agent="bot",
            owner=owner,
            trigger="sampled",
            rulings=[("answer_groundedness", None if index == 1 else False, "x", calls)],
        )
    page = client.get("/v1/assurance/rulings?limit=2", headers=_h(a)).json()
    assert [r["run_id"] for r in page["items"]] == ["tr-2", "tr-1"]
    rest = client.get(f"/v1/assurance/rulings?cursor={page['next']}", headers=_h(a)).json()
    assert [r["run_id"] for r in rest["items"]] == ["tr-0"]
    failing = client.get("/v1/assurance/rulings?verdict=fail", headers=_h(a)).json()
    assert {r["run_id"] for r in failing["items"]} == {"tr-0", "tr-2"}
    assert client.get("/v1/assurance/rulings", headers=_h(b)).json()["items"] == []
    save_online_results(
        store,
        "batch-1",
        [
            OnlineResult(
                prediction_id="p-1",
                label="nominal",
                escalated=True,
                escalation_reasons=["heuristics: silent_contradiction"],
            ),
            OnlineResult(prediction_id="p-2", label="nominal"),  # not escalated
        ],
    )
    mine = client.get("/v1/assurance/tail", headers=_h(a)).json()
    assert [(r["run_id"], r["judges_asked"]) for r in mine["runs"]] == [("tr-1", 1)]
    assert mine["online"] == []  # online results belong to no key
    everyone = client.get("/v1/assurance/tail", headers=_h(admin)).json()
    assert [(o["prediction_id"], o["reasons"]) for o in everyone["online"]] == [
        ("p-1", ["heuristics: silent_contradiction"])
    ]
