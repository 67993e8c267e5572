"""``arbiter demo`` stores the sample agent runs, so ``arbiter serve`` shows a roster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arbiter.service.agent_roster import agent_roster
from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories


def test_demo_stores_the_sample_agent_runs_and_prints_their_roster(
    cli: Any, tmp_path: Path
) -> None:
    result = cli("demo", "--quiet")
    assert result.code == 0, result.err
    assert "agents: 24 sample runs scored by the trajectory scorers" in result.out
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        roster = {entry.name: entry for entry in agent_roster(store)}
        assert set(roster) == {
            "@OPS",
            "retail-agent",
            "nightly-report",
            "support-agent",
            "weather-app",
        }
        assert roster["nightly-report"].kind == "flow"
        assert roster["retail-agent"].runs == 12
        for name, entry in roster.items():
            assert f"  {name}" in result.out
            assert entry.health in result.out
        # Again: the samples replace themselves rather than pile up.
        assert cli("demo", "--quiet").code == 0
        assert list_trajectories(store)[1] == 24
    finally:
        store.close()
