"""``arbiter trust`` and ``arbiter inbox`` from the terminal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.config import Settings
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.trust import TrustPolicy
from tests.trust.helpers import save, stored

Cli = Callable[..., Any]


def _seed(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    save(store, [stored(i, "steady", True) for i in range(12)])
    bad = [stored(100 + i, "sliding", False) for i in range(12)]
    save(store, bad)
    policy = TrustPolicy(breaker_mode="freeze")
    asyncio.run(
        evaluate_breaker(
            store,
            bad,
            owner=None,
            policy=policy,
            settings=Settings(_env_file=None, trust_webhook_urls=""),  # type: ignore[call-arg]
        )
    )
    return store


def test_status_exits_1_only_for_a_named_at_risk_agent(cli: Cli, tmp_path: Path) -> None:
    _seed(tmp_path)
    listing = cli("trust", "status")
    assert listing.code == 0
    assert "sliding: at_risk, FROZEN" in listing.out
    steady = cli("trust", "status", "steady", "--json")
    assert steady.code == 0
    assert json.loads(steady.out)[0]["state"] in ("proven", "trusted")
    sliding = cli("trust", "status", "sliding")
    assert sliding.code == 1
    assert "sliding: at_risk" in sliding.out
    assert cli("trust", "status", "nobody").code == 3


def test_unfreeze_needs_a_reason_and_is_recorded(cli: Cli, tmp_path: Path) -> None:
    _seed(tmp_path)
    assert cli("trust", "unfreeze", "sliding", "--reason", " ").code == 3
    lifted = cli("trust", "unfreeze", "sliding", "--reason", "rolled back", "--by", "ops")
    assert lifted.code == 0
    again = json.loads(cli("trust", "status", "sliding", "--json").out)[0]
    assert again["autonomous"] is True
    assert cli("trust", "unfreeze", "sliding", "--reason", "again").code == 3


def test_inbox_lists_and_acks(cli: Cli, tmp_path: Path) -> None:
    _seed(tmp_path)
    events = json.loads(cli("inbox", "--json").out)
    assert [e["kind"] for e in events] == ["breaker_trip"]
    assert cli("inbox", "--ack", str(events[0]["id"])).code == 0
    assert json.loads(cli("inbox", "--unacked", "--json").out) == []
    assert cli("inbox", "--ack", "999").code == 3


def test_policy_check_names_the_typo(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text('[breaker]\nmoed = "freeze"\n', encoding="utf-8")
    result = cli("trust", "policy", "check", "p.toml")
    assert result.code == 3
    assert "p.toml:2: policy key 'breaker.moed' is unknown" in result.err
    shown = cli("trust", "policy", "show")
    assert shown.code == 0
    assert "[floors]" in shown.out


def test_backtest_of_a_stricter_policy(cli: Cli, tmp_path: Path) -> None:
    _seed(tmp_path)
    (tmp_path / "strict.toml").write_text(
        "[floors]\nat_risk = 0.95\nhealthy = 0.97\ntrusted = 0.99\n"
    )
    (tmp_path / "bands.json").write_text('{"max_cost_usd": {"healthy": 0.005, "danger": 0.008}}')
    result = cli("trust", "backtest", "strict.toml", "--thresholds", "bands.json", "--json")
    assert result.code == 0
    report = json.loads(result.out)
    assert report["runs"] == 24
    assert report["runs_changing_band"] == 12
    assert report["agents_changing_state"] == 1
    text = cli("trust", "backtest", "strict.toml", "--agent", "steady")
    assert "agents changing state: 0 of 1" in text.out
    assert cli("trust", "backtest", "strict.toml", "--since", "yesterday").code == 3


def test_judges_shows_and_sets_an_agents_judge_setting(cli: Cli, tmp_path: Path) -> None:
    _seed(tmp_path)
    shown = cli("trust", "judges", "steady")
    assert shown.code == 0
    assert "steady: judges off (inherit)" in shown.out
    assert "no judge panel is configured" in shown.out
    turned = cli("trust", "judges", "steady", "--judges", "on", "--sample-rate", "3", "--json")
    assert turned.code == 0, turned.err
    view = json.loads(turned.out)
    assert (view["judges"], view["enabled"], view["effective_rate"]) == ("on", True, 1.0)
    assert "judges on (on), sample rate 1" in cli("trust", "judges", "steady").out
    bad = cli("trust", "judges", "steady", "--judges", "sometimes")
    assert bad.code == 3
    assert "judges: expected inherit, on or off" in bad.err
