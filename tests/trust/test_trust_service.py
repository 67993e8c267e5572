"""Trust status, the breaker on ingest, freezes, the inbox, votes and the backtest,
against a real store."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from arbiter.config import Settings
from arbiter.errors import StoreError
from arbiter.service.backtest import parse_thresholds, run_backtest
from arbiter.service.inbox import ack_event, inbox, unacked_count
from arbiter.service.trust import (
    agent_trust,
    evaluate_breaker,
    trust_history,
    trust_statuses,
    unfreeze_agent,
)
from arbiter.service.votes import cast_vote, kappa_pairs, vote_alignment
from arbiter.service.webhooks import drain
from arbiter.store import Store
from arbiter.store.trust_repository import list_deliveries
from arbiter.trust import TrustPolicy
from tests.trust.helpers import START, save, stored

POLICY = TrustPolicy(min_runs_proven=5, min_runs_trusted=10, breaker_mode="freeze")
NOW = START + timedelta(days=1)
QUIET = Settings(_env_file=None, trust_webhook_urls="")  # type: ignore[call-arg]


def _breaker(store: Store, records: list, owner: str | None = None) -> list:  # type: ignore[type-arg]
    return asyncio.run(
        evaluate_breaker(store, records, owner=owner, policy=POLICY, settings=QUIET, now=NOW)
    )


def test_two_keys_agents_of_one_name_never_merge(store: Store) -> None:
    save(store, [stored(i, "bot", True) for i in range(12)], owner="key-a")
    save(store, [stored(100 + i, "bot", False) for i in range(12)], owner="key-b")
    statuses = trust_statuses(store, policy=POLICY, now=NOW)
    assert [(s.owner, s.state) for s in statuses] == [("key-a", "trusted"), ("key-b", "at_risk")]
    only_a = trust_statuses(store, viewer="key-a", policy=POLICY, now=NOW)
    assert [s.owner for s in only_a] == ["key-a"]


def test_the_breaker_trips_once_freezes_and_survives_a_restart(
    store: Store, tmp_path: Path
) -> None:
    good = [stored(i, "bot", True) for i in range(6)]
    save(store, good)
    assert _breaker(store, good)[0].tripped is False
    bad = [stored(10 + i, "bot", False) for i in range(10)]
    trips = []
    for record in bad:
        save(store, [record])
        trips += [o for o in _breaker(store, [record]) if o.tripped]
    assert len(trips) == 1
    assert trips[0].action == "freeze"
    again = Store(store.url)  # what a restarted server opens
    more = stored(50, "bot", False)
    save(again, [more])
    assert not any(o.tripped for o in _breaker(again, [more]))
    status = agent_trust(store, "bot", owner=None, policy=POLICY, now=NOW)
    assert status is not None
    assert status.state == "at_risk"
    assert status.frozen
    assert status.autonomous is False
    events = inbox(store)
    assert [e.kind for e in events] == ["breaker_trip"]
    assert unacked_count(store) == 1
    acked = ack_event(store, events[0].id, by="ops", note="looking")
    assert acked.acked is not None
    assert acked.acked.by == "ops"
    assert unacked_count(store) == 0
    with pytest.raises(StoreError, match="already acknowledged"):
        ack_event(store, events[0].id, by="ops")
    unfreeze_agent(store, "bot", owner=None, by="admin", reason="fixed the prompt")
    lifted = agent_trust(store, "bot", owner=None, policy=POLICY, now=NOW)
    assert lifted is not None
    assert lifted.autonomous is True
    kinds = [item.kind for item in trust_history(store, "bot", owner=None)]
    assert kinds == ["event:breaker_trip", "freeze", "ack", "event:unfreeze", "unfreeze"]


def test_another_owners_event_is_not_found(store: Store) -> None:
    records = [stored(i, "bot", False) for i in range(6)]
    save(store, records, owner="key-a")
    asyncio.run(
        evaluate_breaker(store, records, owner="key-a", policy=POLICY, settings=QUIET, now=NOW)
    )
    event = inbox(store, viewer="key-a")[0]
    assert inbox(store, viewer="key-b") == []
    with pytest.raises(StoreError):
        ack_event(store, event.id, by="key-b", viewer="key-b")


def test_a_breaker_failure_never_reaches_ingest(store: Store, tmp_path: Path) -> None:
    broken = Settings(_env_file=None, trust_policy=tmp_path / "missing.toml")  # type: ignore[call-arg]
    records = [stored(1, "bot", False)]
    assert asyncio.run(evaluate_breaker(store, records, owner=None, settings=broken)) == []


def test_a_dead_webhook_is_recorded_and_becomes_an_event(store: Store) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, trust_webhook_urls="http://127.0.0.1:9/hook", trust_webhook_retries=1
    )
    records = [stored(i, "bot", False) for i in range(6)]
    save(store, records)

    async def go() -> None:
        await evaluate_breaker(
            store,
            records,
            owner=None,
            policy=POLICY,
            settings=settings,
            now=NOW,
            transport=httpx.MockTransport(refuse),
        )
        await drain()

    asyncio.run(go())
    deliveries = list_deliveries(store)
    assert len(deliveries) == 1
    assert not deliveries[0].delivered
    assert deliveries[0].attempts == 2
    assert sorted(e.kind for e in inbox(store)) == ["breaker_trip", "webhook_failure"]


def test_votes_align_with_verdicts_and_never_change_them(store: Store) -> None:
    save(store, [stored(1, "bot", True), stored(2, "bot", False), stored(3, "bot", None)])
    before = trust_statuses(store, policy=POLICY, now=NOW)
    runs = [stored(i, "bot", None).id for i in (1, 2, 3)]
    cast_vote(store, runs[0], "up", owner=None, viewer=None)
    cast_vote(store, runs[1], "up", owner=None, viewer=None, reason="it was right")
    cast_vote(store, runs[2], "down", owner=None, viewer=None)
    alignment = vote_alignment(store, "bot")
    assert (alignment.compared, alignment.agreements, alignment.disagreements) == (2, 1, 1)
    assert kappa_pairs(store, "bot") == [(True, True), (False, True)]
    assert trust_statuses(store, policy=POLICY, now=NOW) == before
    with pytest.raises(StoreError):
        cast_vote(store, runs[0], "up", owner="key-b", viewer="key-b")


def test_a_stricter_backtest_reports_what_changes(store: Store) -> None:
    save(store, [stored(i, "bot", True, cost=0.2) for i in range(12)])
    strict = TrustPolicy(min_runs_proven=5, breaker_mode="freeze")
    report = run_backtest(
        store,
        strict,
        current=POLICY,
        thresholds=parse_thresholds({"max_cost_usd": {"healthy": 0.05, "danger": 0.1}}),
        now=NOW,
    )
    assert report.runs == 12
    assert report.runs_changing_band == 12
    assert report.band_examples[0]["to"] == "danger"
    assert report.agents_changing_state == 1
    assert report.state_examples[0]["to"] == "at_risk"
    assert (report.trips_now, report.trips_proposed) == (0, 1)
