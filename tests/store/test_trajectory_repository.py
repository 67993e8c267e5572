"""Stored agent runs on SQLite and PostgreSQL: round trip, replacement, tallies, owners."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from arbiter.contract import Score, StoredTrajectory, Trajectory, run_hash
from arbiter.store import Store
from arbiter.store.ownership_repository import set_owners
from arbiter.store.trajectory_repository import (
    agent_totals,
    get_trajectory,
    list_trajectories,
    recent_outcomes,
    save_trajectories,
    score_tallies,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _run(
    number: int,
    agent: str = "support",
    *,
    passed: bool | None = True,
    scores: list[Score] | None = None,
) -> StoredTrajectory:
    trajectory = Trajectory.model_validate(
        {"agent": {"name": agent}, "final_answer": f"answer {number}", "status": "completed"}
    )
    band = None if passed is None else "healthy" if passed else "danger"
    return StoredTrajectory(
        id=f"tr-{number:024x}",
        created_at=T0 + timedelta(minutes=number),
        kind="trajectory",
        agent=agent,
        source_format="trajectory",
        trajectory_hash=run_hash(trajectory),
        status="completed",
        passed=passed,
        band=band,
        scores=scores
        if scores is not None
        else [Score(name="completed", value=1.0, passed=passed), Score(name="cost")],
        trajectory=trajectory,
    )


def test_a_run_reads_back_as_it_was_stored(store: Store) -> None:
    hostile = "x\x00<script>\u202e"
    run = _run(1, agent=hostile)
    run.scores.append(Score(name="nan", value=float("nan"), passed=False, band="danger"))
    save_trajectories(store, [run])
    found = get_trajectory(store, run.id)
    assert found is not None
    assert found.agent == hostile  # the record keeps the exact text
    assert found.trajectory == run.trajectory
    assert found.scores[-1].value is None  # NaN is not JSON: stored as null
    assert found.created_at == run.created_at


def test_saving_a_run_again_replaces_it_and_its_scores(store: Store) -> None:
    save_trajectories(store, [_run(1, passed=True)])
    save_trajectories(store, [_run(1, passed=False)])
    runs, total = list_trajectories(store)
    assert total == 1
    assert runs[0].passed is False
    tallies = {(t.name, t.passed): t.count for t in score_tallies(store, "support")}
    assert tallies == {("completed", False): 1, ("cost", None): 1}


def test_superseded_runs_go_in_the_same_write(store: Store) -> None:
    save_trajectories(store, [_run(1), _run(2)])
    save_trajectories(store, [_run(3)], superseded=[_run(1).id, _run(2).id])
    runs, total = list_trajectories(store)
    assert [r.id for r in runs] == [_run(3).id]
    assert total == 1
    assert sum(t.count for t in score_tallies(store, "support")) == 2


def test_totals_outcomes_and_pages_per_agent(store: Store) -> None:
    save_trajectories(
        store,
        [_run(1, passed=True), _run(2, passed=False), _run(3, passed=None), _run(4, "billing")],
    )
    totals = {t.agent: t for t in agent_totals(store)}
    support = totals["support"]
    assert (support.runs, support.passed, support.failed) == (3, 1, 1)
    assert (support.first_at, support.last_at) == (
        T0 + timedelta(minutes=1),
        T0 + timedelta(minutes=3),
    )
    assert [o for o, _ in recent_outcomes(store, "support")] == [None, False, True]
    page, total = list_trajectories(store, agent="support", offset=1, limit=1)
    assert total == 3
    assert [r.id for r in page] == [_run(2).id]
    undecided, _ = list_trajectories(store, band="none")
    assert [r.id for r in undecided] == [_run(3).id]


def test_a_viewer_sees_only_the_runs_it_owns(store: Store) -> None:
    save_trajectories(store, [_run(1)], owner="key-a")
    save_trajectories(store, [_run(2, "billing")])
    set_owners(store, "trajectory", [_run(2).id], "key-b")
    assert [t.agent for t in agent_totals(store, viewer="key-a")] == ["support"]
    assert get_trajectory(store, _run(2).id, viewer="key-a") is None
    assert get_trajectory(store, _run(2).id, viewer=None) is not None
    assert list_trajectories(store, viewer="key-b")[1] == 1
    assert score_tallies(store, "support", viewer="key-b") == []
