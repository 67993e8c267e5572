"""``arbiter agent score --store`` keeps the scored runs as the server does: the UI shows them.

Before, runs scored at the terminal never reached the store, so the agents' pages and
``GET /v1/trajectories`` never showed them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories

TAU = Path(__file__).parent / "data" / "tau_bench_published_shape.json"


def test_agent_score_store_keeps_every_run_with_its_verdict_and_repairs(
    cli: Any, tmp_path: Path
) -> None:
    result = cli("agent", "score", str(TAU), "--store", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert "stored 2 runs" in result.err
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        records, total = list_trajectories(store)
        assert total == 2
        by_case = {(r.trajectory.id if r.trajectory else None): r for r in records}
        first = by_case["7/0"]
        assert first.source_format == "tau_bench"
        assert first.scores[0].name == "reward"
        assert {s.name for s in first.scores} >= {"reward", "no_tool_loops", "tool_calls"}
        assert first.notes[:2] == report["repairs"]["first"]
        assert first.scorers
        assert all(spec.name for spec in first.scorers)
        assert by_case["7/1"].passed is False  # its reward is 0: a rule convicts it
    finally:
        store.close()


def test_storing_the_same_file_again_replaces_its_runs(cli: Any, tmp_path: Path) -> None:
    for _ in range(2):
        result = cli("agent", "score", str(TAU), "--store", "--json")
        assert result.code == 0, result.err
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert list_trajectories(store)[1] == 2
    finally:
        store.close()


def test_without_store_nothing_is_written(cli: Any, tmp_path: Path) -> None:
    result = cli("agent", "score", str(TAU), "--json")
    assert result.code == 0, result.err
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert list_trajectories(store)[1] == 0
    finally:
        store.close()
