"""What the agent pages read: live cards equal to the REST roster's, offline cards, ids of
both kinds, per-dimension bars, and judge rulings on stored trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.contract import Score, ScorerSpec
from arbiter.server.judge_rulings import find_ruling, queue_page
from arbiter.service.agent_records import record, roster_cards
from arbiter.service.agent_roster import agent_detail, agent_roster, dimension_bars
from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories, save_trajectories
from tests.server.pages.agents_seed import QUIET, seed_agents, seed_live
from tests.server.pages.conftest import run_sync


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root: Path = tmp_path_factory.mktemp("agent-records")
    seeded = Store(f"sqlite:///{root / 'store.db'}")
    run_sync(seed_agents(seeded, root))  # beside Playwright's loop, on a thread of its own
    return seeded


def test_a_live_card_has_the_rest_rosters_figures(store: Store) -> None:
    cards, offline = roster_cards(store)
    live = {(c.name, c.kind): c for c in cards if c.live}
    entries = agent_roster(store)
    assert len(live) == len(entries) == 2
    for entry in entries:
        card = live[(entry.name, entry.kind)]
        assert card.model_dump(include=set(type(entry).model_fields)) == entry.model_dump()
    weather = live[("weather-bot", "trajectory")]
    assert weather.offline_runs == 6
    assert weather.failing == ["forbidden_tools"]
    assert len(offline) == 14


def test_an_agent_known_only_from_case_files_gets_an_offline_card(store: Store) -> None:
    cards, _ = roster_cards(store)
    by_name = {c.name: c for c in cards if not c.live}
    assert set(by_name) == {"research-desk", "lookup-agent", QUIET}
    assert by_name["research-desk"].runs == 3
    assert by_name[QUIET].health == "inactive"
    assert [c.health for c in cards] == ["review", "review", "healthy", "healthy", "inactive"]


def test_a_record_opens_by_a_stored_id_or_a_case_file_runs_id(store: Store) -> None:
    stored, _ = list_trajectories(store, agent="weather-bot")
    live = record(store, stored[0].id)
    assert live is not None
    assert live.live
    assert live.band == stored[0].band
    _, offline = roster_cards(store)
    again = record(store, offline[0].id)
    assert again is not None
    assert (again.id, again.live) == (offline[0].id, False)
    assert record(store, "tr-000000000000000000000000") is None
    assert record(store, "run:nope:0:x") is None


def test_live_bars_are_one_per_dimension_over_the_scorers_figures(store: Store) -> None:
    detail = agent_detail(store, "weather-bot", kind="trajectory")
    assert detail is not None
    bars = dimension_bars(detail.dimensions)
    assert len({b.dimension for b in bars}) == len(bars)
    decided = sum(b.passed + b.failed for b in bars)
    assert decided == sum(f.passed + f.failed for f in detail.dimensions)
    scorers = sorted(s for b in bars for s in b.scorers)
    assert scorers == sorted(f.scorer for f in detail.dimensions)
    worst = bars[0]
    assert "forbidden_tools" in worst.scorers
    assert worst.pass_rate is not None
    assert worst.pass_rate.estimate == 0.5


def test_a_judges_score_on_a_stored_trajectory_is_in_the_queue(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")  # its own: it adds a judge's score
    run_sync(seed_live(store))
    stored, _ = list_trajectories(store, agent="weather-bot", limit=1)
    judged = stored[0].model_copy(
        update={
            "scorers": [*stored[0].scorers, ScorerSpec(name="panel_judge", kind="model")],
            "scores": [
                *stored[0].scores,
                Score(name="panel_judge", value=0.2, passed=False, explanation="unsupported"),
            ],
        }
    )
    save_trajectories(store, [judged])
    rulings = [r for r in queue_page(store, lambda _: None).rulings if r.item_id == judged.id]
    assert [(r.judge, r.frozen.verdict, r.frozen.score) for r in rulings] == [
        ("panel_judge", "fail", 0.2)
    ]
    found = find_ruling(store, judged.id, "panel_judge", lambda _: None)
    assert found is not None
    assert found.frozen == rulings[0].frozen
    assert find_ruling(store, judged.id, "completed", lambda _: None) is None  # not a judge
