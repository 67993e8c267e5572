"""The agent pages' figures: health bands, the roster's order, bars, the ledger, record ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from arbiter.contract import FlowRun, Score, Trajectory
from arbiter.server.agent_records import parse_record_id, record_id
from arbiter.server.agents_view import (
    SPARK_RUNS,
    AgentRecord,
    chip_state,
    dimension_bars,
    health_of,
    ledger,
    roster,
    run_health,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(
    agent: str,
    passed: bool | None,
    minute: int = 0,
    scores: tuple[Score, ...] = (),
    kind: str = "agent",
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
def test_health_bands_are_the_reference_cut_points(passed: int, decided: int, health: str) -> None:
    assert health_of(passed, decided) == health


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
    assert silent.low is None
    assert silent.decided == 0
    assert silent.runs == 1
    assert silent.spark == ()
    bad = cards[0]
    assert bad.pass_rate == pytest.approx(1 / 3)
    assert bad.low is not None
    assert bad.high is not None
    assert bad.low < 1 / 3 < bad.high
    assert bad.spark == (False, True, False)


def test_an_agent_and_a_flow_of_one_name_are_two_cards() -> None:
    cards = roster([_record("x", True), _record("x", False, kind="flow")])
    assert sorted((c.name, c.kind) for c in cards) == [("x", "agent"), ("x", "flow")]


def test_sparkline_keeps_the_newest_runs_oldest_first_and_trend_compares_halves() -> None:
    # Oldest 20 fail, newest 20 pass; given out of order.
    records = [_record("a", i >= 20, i) for i in reversed(range(40))]
    card = roster(records)[0]
    assert len(card.spark) == SPARK_RUNS
    assert card.spark == tuple([False] * 10 + [True] * 20)
    assert card.trend == pytest.approx(1.0)
    assert roster([_record("b", True, i) for i in range(3)])[0].trend is None


def test_failing_checks_are_named_most_often_first() -> None:
    fail = Score(name="cost", passed=False)
    also = Score(name="tools", passed=False)
    records = [
        _record("a", False, 0, (fail, also)),
        _record("a", False, 1, (fail,)),
        _record("a", True, 2, (Score(name="cost", passed=True),)),
    ]
    assert roster(records)[0].failing == ("cost", "tools")


def test_dimension_bars_leave_abstentions_out_of_the_rate() -> None:
    records = [
        _record(
            "a",
            True,
            i,
            (
                Score(name="required_tools", passed=i != 0),
                Score(name="tool_f1", passed=True, band="review" if i == 1 else None),
                Score(name="cost", passed=None),
            ),
        )
        for i in range(4)
    ]
    dimension = {"required_tools": "tool_use", "tool_f1": "tool_use"}.get
    bars = {b.dimension: b for b in dimension_bars(records, dimension)}
    assert set(bars) == {"tool_use", "cost"}
    tools = bars["tool_use"]
    assert (tools.passed, tools.decided, tools.reviewed) == (7, 8, 1)
    assert tools.scorers == ("required_tools", "tool_f1")
    assert tools.health == "healthy"
    assert tools.rate == pytest.approx(7 / 8)
    cost = bars["cost"]
    assert cost.rate is None
    assert cost.health == "inactive"
    assert cost.abstained == 4


def test_ledger_is_newest_first_with_a_band_per_run_and_filters_by_band() -> None:
    review = Score(name="latency", passed=True, band="review")
    records = [
        _record("a", True, 0, (Score(name="ok", passed=True),)),
        _record("a", False, 2, (Score(name="ok", passed=False),)),
        _record("a", True, 1, (review, Score(name="ok", passed=True))),
        _record("a", None, 3),
    ]
    rows = ledger(records)
    assert [r.record.id for r in rows] == ["a-3", "a-2", "a-1", "a-0"]
    assert [r.health for r in rows] == ["inactive", "danger", "review", "healthy"]
    assert rows[2].strip == (("latency", "review"), ("ok", "pass"))
    assert rows[2].counts["review"] == 1
    assert rows[2].counts["pass"] == 1
    assert [r.record.id for r in ledger(records, health="danger")] == ["a-2"]
    assert run_health(records[2]) == "review"


@pytest.mark.parametrize("case_id", ["plain", "with:colons:inside", "slash/and space", "ünï"])
def test_a_record_id_names_its_run_repetition_and_case(case_id: str) -> None:
    ref = parse_record_id(record_id("20260101-000000-abcdef", 3, case_id))
    assert ref is not None
    assert (ref.run_id, ref.repetition, ref.case_id) == ("20260101-000000-abcdef", 3, case_id)


@pytest.mark.parametrize("value", ["", "run:", "run:x:y:z", "other:x:1:c", "run:x:1:"])
def test_what_is_not_a_record_id_is_none(value: str) -> None:
    assert parse_record_id(value) is None
