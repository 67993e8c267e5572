"""The agents' read model over records: health bands, the roster's order, bars, the
ledger, record ids (the figures the API, the pages and the CLI all show)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from arbiter.contract import FlowRun, Score, Trajectory
from arbiter.service.agent_health import chip_state, health_of
from arbiter.service.agent_records import parse_record_id, record_id
from arbiter.service.agent_roster import (
    SPARK_RUNS,
    AgentRecord,
    RosterCard,
    dimension_bars,
    figures_of,
    ledger_row,
    record_health,
    summary_of,
    worst_first,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(
    agent: str,
    passed: bool | None,
    minute: int = 0,
    scores: tuple[Score, ...] = (),
    kind: str = "trajectory",
) -> AgentRecord:
    run: Trajectory | FlowRun = FlowRun() if kind == "flow" else Trajectory()
    return AgentRecord(
        id=f"{agent}-{minute}",
        agent=agent,
        kind=kind,  # type: ignore[arg-type]
        run=run,
        scores=scores,
        passed=passed,
        at=T0 + timedelta(minutes=minute),
    )


@pytest.mark.parametrize(
    ("passed", "decided", "health"),
    [
        (8, 10, "healthy"),
        (80, 100, "healthy"),
        (79, 100, "review"),
        (50, 100, "review"),
        (49, 100, "danger"),
        (0, 3, "danger"),
        (0, 0, "inactive"),
    ],
)
def test_health_bands_cut_at_80_and_50_percent(passed: int, decided: int, health: str) -> None:
    assert health_of(passed / decided if decided else None) == health


@pytest.mark.parametrize(
    ("score", "state"),
    [
        (Score(name="s", passed=True), "pass"),
        (Score(name="s", passed=True, band="review"), "review"),
        (Score(name="s", passed=False, band="danger"), "fail"),
        (Score(name="s", passed=None), "abstain"),
        (Score(name="s", passed=None, error="ValueError: x"), "error"),
    ],
)
def test_a_chip_is_pass_review_fail_abstain_or_error(score: Score, state: str) -> None:
    assert chip_state(score) == state


def roster(records: list[AgentRecord]) -> list[RosterCard]:
    groups: dict[tuple[str, str], list[AgentRecord]] = {}
    for r in records:
        groups.setdefault((r.agent, r.kind), []).append(r)
    return worst_first(summary_of(runs) for runs in groups.values())


def test_roster_puts_the_worst_first_and_the_unevaluated_last() -> None:
    records = [
        *[_record("good", True, i) for i in range(5)],
        _record("bad", False, 1),
        _record("bad", True, 2),
        _record("bad", False, 3),
        *[_record("meh", i % 3 != 0, i) for i in range(6)],  # 4 of 6
        _record("silent", None, 1),
    ]
    cards = roster(records)
    assert [c.name for c in cards] == ["bad", "meh", "good", "silent"]
    assert [c.health for c in cards] == ["danger", "review", "healthy", "inactive"]
    silent = cards[-1]
    assert silent.pass_rate is None
    assert silent.evaluated == 0
    assert silent.runs == 1
    assert silent.recent == [None]
    bad = cards[0]
    assert bad.pass_rate is not None
    assert bad.pass_rate.estimate == pytest.approx(1 / 3)
    assert bad.pass_rate.low < 1 / 3 < bad.pass_rate.high
    assert bad.recent == [False, True, False]


def test_an_agent_and_a_flow_of_one_name_are_two_cards() -> None:
    cards = roster([_record("x", True), _record("x", False, kind="flow")])
    assert sorted((c.name, c.kind) for c in cards) == [("x", "flow"), ("x", "trajectory")]


def test_sparkline_keeps_the_newest_runs_oldest_first_and_trend_compares_windows() -> None:
    # Oldest 30 fail, newest 30 pass; given out of order.
    records = [_record("a", i >= 30, i) for i in reversed(range(60))]
    card = roster(records)[0]
    assert len(card.recent) == SPARK_RUNS
    assert card.recent == [True] * 30
    assert card.trend.direction == "up"
    assert card.trend.delta == pytest.approx(1.0)
    assert roster([_record("b", True, i) for i in range(3)])[0].trend.direction is None


def test_failing_checks_are_named_most_often_first() -> None:
    fail = Score(name="cost", passed=False)
    also = Score(name="tools", passed=False)
    records = [
        _record("a", False, 0, (fail, also)),
        _record("a", False, 1, (fail,)),
        _record("a", True, 2, (Score(name="cost", passed=True),)),
    ]
    assert roster(records)[0].failing == ["cost", "tools"]


def test_dimension_bars_leave_abstentions_out_of_the_rate() -> None:
    records = [
        _record(
            "a",
            True,
            i,
            (
                Score(name="my_tools", passed=i != 0),
                Score(name="my_f1", passed=True, band="review" if i == 1 else None),
                Score(name="my_cost", passed=None if i else True),
            ),
        )
        for i in range(4)
    ]
    dimension = {"my_tools": "tool_use", "my_f1": "tool_use"}.get
    bars = {b.dimension: b for b in dimension_bars(figures_of(records), dimension)}
    assert set(bars) == {"tool_use", "my_cost"}
    tools = bars["tool_use"]
    assert (tools.passed, tools.failed, tools.reviewed) == (7, 1, 1)
    assert tools.scorers == ["my_f1", "my_tools"]
    assert tools.health == "healthy"
    assert tools.pass_rate is not None
    assert tools.pass_rate.estimate == pytest.approx(7 / 8)
    cost = bars["my_cost"]
    assert (cost.passed, cost.abstained) == (1, 3)


def test_a_scorer_that_never_decided_draws_no_bar() -> None:
    records = [_record("a", True, i, (Score(name="cost", passed=None),)) for i in range(3)]
    assert dimension_bars(figures_of(records)) == []


def test_a_ledger_row_has_the_runs_band_and_its_checks_strip() -> None:
    review = Score(name="latency", passed=True, band="review")
    quiet = Score(name="cost", passed=None)
    records = [
        _record("a", True, 0, (Score(name="ok", passed=True),)),
        _record("a", False, 2, (Score(name="ok", passed=False),)),
        _record("a", True, 1, (review, quiet, Score(name="ok", passed=True))),
        _record("a", None, 3),
    ]
    rows = [ledger_row(r) for r in records]
    assert [r.health for r in rows] == ["healthy", "danger", "review", "inactive"]
    assert [r.band for r in rows] == ["healthy", "danger", "review", None]
    assert rows[1].convicted_by == ["ok"]
    assert rows[2].strip == [("latency", "review"), ("ok", "pass"), ("cost", "abstain")]
    assert rows[2].abstained == ["cost"]
    assert [c.name for c in rows[2].chips] == ["latency", "ok"]
    assert record_health(records[2]) == "review"


@pytest.mark.parametrize("case_id", ["plain", "with:colons:inside", "slash/and space", "ünï"])
def test_a_record_id_names_its_run_repetition_and_case(case_id: str) -> None:
    ref = parse_record_id(record_id("20260101-000000-abcdef", 3, case_id))
    assert ref is not None
    assert (ref.run_id, ref.repetition, ref.case_id) == ("20260101-000000-abcdef", 3, case_id)


@pytest.mark.parametrize("value", ["", "run:", "run:x:y:z", "other:x:1:c", "run:x:1:"])
def test_what_is_not_a_record_id_is_none(value: str) -> None:
    assert parse_record_id(value) is None
