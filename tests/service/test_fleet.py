"""The fleet read model: the posture matrix by trust-critical dimension, the timeline by
day, and the history of the default band thresholds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arbiter.contract import StoredTrajectory
from arbiter.service.fleet import fleet_posture, fleet_timeline
from arbiter.service.trust_thresholds import set_thresholds, thresholds_history
from arbiter.stats import wilson_interval
from arbiter.store import Store
from tests.trust.helpers import START, save, stored

NOW = START + timedelta(days=3)


def costly(index: int, agent: str, passed: bool, at: datetime, cost: float) -> StoredTrajectory:
    """A stored run that cost ``cost`` USD."""
    return stored(index, agent, passed, at=at).model_copy(update={"cost_usd": cost})


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def test_the_matrix_puts_the_worst_state_first_with_each_dimension_rate(store: Store) -> None:
    save(store, [stored(i, "steady", True) for i in range(60)])
    save(store, [stored(100 + i, "sliding", i < 4) for i in range(20)])
    save(store, [stored(200 + i, "newcomer", False) for i in range(2)])
    posture = fleet_posture(store, now=NOW)
    assert [r.status.agent for r in posture.rows] == ["sliding", "newcomer", "steady"]
    assert [r.status.state for r in posture.rows] == ["at_risk", "provisional", "trusted"]
    sliding = posture.rows[0]
    scope = sliding.dimensions[posture.dimensions.index("scope_adherence")]
    assert (scope.passed, scope.n, scope.health) == (4, 20, "danger")
    assert scope.interval == wilson_interval(4, 20)
    assert scope.series[0] == 1.0
    assert scope.series[-1] == 0.0
    assert len(scope.series) == 10
    grounded = sliding.dimensions[posture.dimensions.index("grounded_overlap")]
    assert (grounded.rate, grounded.n, grounded.health) == (None, 0, "inactive")


def test_an_agent_without_a_verdict_on_a_dimension_has_no_rate(store: Store) -> None:
    save(store, [stored(i, "quiet", None) for i in range(3)])
    [row] = fleet_posture(store, now=NOW).rows
    assert all(c.rate is None and c.interval is None for c in row.dimensions)
    assert all(v is None for c in row.dimensions for v in c.series)


def test_the_timeline_buckets_runs_by_day_ending_with_the_newest(store: Store) -> None:
    day = datetime(2026, 5, 10, 9, tzinfo=UTC)
    save(store, [costly(i, "a", i % 2 == 0, day, 0.02) for i in range(4)])
    save(store, [costly(10, "a", False, day - timedelta(days=2), 0.10)])
    save(store, [stored(20, "b", True, at=day - timedelta(days=20))])  # before the days shown
    timeline = fleet_timeline(store, days=7)
    assert timeline.days[-1] == day.date()
    assert len(timeline.days) == 7
    [line] = timeline.agents
    assert line.agent == "a"
    assert line.runs == 5
    newest, two_back = line.points[-1], line.points[-3]
    assert (newest.runs, newest.decided, newest.passed, newest.rate) == (4, 4, 2, 0.5)
    assert newest.cost == pytest.approx(0.02)
    assert (two_back.rate, two_back.cost) == (0.0, pytest.approx(0.10))
    assert line.points[0].rate is None
    assert line.points[0].runs == 0


def test_an_empty_store_has_an_empty_fleet(store: Store) -> None:
    assert fleet_posture(store).rows == []
    assert fleet_timeline(store).agents == []


def test_the_thresholds_history_lists_every_setting_newest_first(store: Store) -> None:
    assert thresholds_history(store) == []
    set_thresholds(store, preset="strict", by="alice", now=START)
    set_thresholds(store, preset="lenient", thresholds={"max_cost_usd": 0.5}, by="bob", now=NOW)
    history = thresholds_history(store)
    assert [(h.preset, h.set_by) for h in history] == [("lenient", "bob"), ("strict", "alice")]
    assert "max_cost_usd" in history[0].thresholds
    assert history[0].set_at == NOW


def test_the_matrix_statuses_are_the_trust_statuses(store: Store) -> None:
    from arbiter.contract.trust import Freeze
    from arbiter.service.trust import trust_statuses
    from arbiter.store.trust_repository import add_freeze

    save(store, [stored(i, "bot", i % 4 != 0) for i in range(30)], owner="key-a")
    save(store, [stored(100 + i, "bot", False) for i in range(12)], owner="key-b")
    save(store, [stored(200 + i, "other", True) for i in range(5)])
    add_freeze(
        store, Freeze(agent="bot", owner="key-b", frozen=True, by="ops", reason="bad", at=NOW)
    )
    posture = fleet_posture(store, now=NOW)
    expected = trust_statuses(store, now=NOW)
    assert sorted((r.status for r in posture.rows), key=lambda s: (s.agent, s.owner or "")) == (
        sorted(expected, key=lambda s: (s.agent, s.owner or ""))
    )
    frozen = [r.status for r in posture.rows if r.status.frozen]
    assert [(s.agent, s.owner, s.autonomous) for s in frozen] == [("bot", "key-b", False)]
