"""Mining: which runs are anomalous, and the case each becomes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from arbiter.contract import ChatMessage, LlmCall, ToolCall, Trajectory
from arbiter.trajectories.mining import (
    case_from_trajectory,
    first_user_message,
    mining_reasons,
    retried_failures,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _call(name: str, error: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, error=error)


def _run(*steps: Any, **fields: Any) -> Trajectory:
    ask = LlmCall(input_messages=[ChatMessage(role="user", content="Refund order 1042")])
    return Trajectory(steps=[ask, *steps], **fields)


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ([("get", True)], 0),
        ([("put", False), ("put", True)], 1),
        ([("put", False), ("put", False), ("put", True)], 1),  # one recovery, however long
        ([("put", False), ("put", True), ("get", False), ("get", True)], 2),
        ([("put", False), ("get", True)], 0),  # another tool corrects nothing
    ],
)
def test_self_corrections_count_recoveries_of_the_same_tool(
    outcomes: list[tuple[str, bool]], expected: int
) -> None:
    calls = [_call(name, None if ok else "failed") for name, ok in outcomes]
    assert retried_failures(calls) == expected


@pytest.mark.parametrize(
    ("trajectory", "passed", "reasons"),
    [
        (_run(_call("get"), status="completed"), True, []),
        (_run(_call("get"), status="completed"), None, []),  # unknown is no failure
        (_run(status="error", error="timeout"), None, ["errored"]),
        (_run(_call("get", "404"), status="completed"), True, ["tool_error"]),
        (_run(_call("get"), status="completed"), False, ["failed"]),
        (
            _run(_call("a", "x"), _call("a"), _call("b", "y"), _call("b"), status="completed"),
            True,
            ["tool_error", "self_corrections"],
        ),
    ],
)
def test_mining_reasons(trajectory: Trajectory, passed: bool | None, reasons: list[str]) -> None:
    assert mining_reasons(trajectory, passed=passed) == reasons


def test_a_scorers_count_of_self_corrections_wins_over_the_fallback() -> None:
    run = _run(_call("get"), status="completed")
    assert mining_reasons(run, passed=True, self_corrections=3) == ["self_corrections"]
    assert mining_reasons(run, passed=True, self_corrections=3, min_self_corrections=4) == []


def test_mined_case_prefills_assertions_from_successful_calls() -> None:
    run = _run(
        _call("get_order", order_id="1042"),
        _call("refund", "422 invalid amount", amount="25"),
        _call("refund", amount=25),
        _call("get_order", order_id="1042"),
        status="completed",
        agent={"agent_class": "tool_enabled"},
    )
    case = case_from_trajectory(
        run, case_id="refund-1042", reasons=["tool_error"], provenance={"source": "a.jsonl:3"}
    )
    assert case["id"] == "refund-1042"
    assert case["input"] == {"query": "Refund order 1042"}
    assert case["agent_class"] == "tool_enabled"
    assertions = case["assertions"]
    assert assertions["require_tools_subset"] == ["get_order", "refund"]
    assert assertions["must_not_call"] == []
    assert assertions["expected_tool_calls"] == [
        {"name": "get_order", "arguments": {"order_id": "1042"}},
        {"name": "refund", "arguments": {"amount": 25}},
        {"name": "get_order", "arguments": {"order_id": "1042"}},
    ]
    assert "max_cost_usd" not in assertions
    assert "max_latency_ms" not in assertions
    mined = case["metadata"]["mined"]
    assert mined["reasons"] == ["tool_error"]
    assert mined["tool_errors"] == [{"name": "refund", "error": "422 invalid amount"}]
    assert mined["source"] == "a.jsonl:3"


def test_ceilings_are_the_observed_cost_and_latency_times_the_margin() -> None:
    call = LlmCall(
        input_messages=[ChatMessage(role="user", content="hi")],
        cost_usd=0.0123,
        started_at=START,
        ended_at=START + timedelta(milliseconds=1500),
    )
    case = case_from_trajectory(Trajectory(steps=[call]), case_id="c", reasons=[], margin=2.0)
    assert case["assertions"]["max_cost_usd"] == pytest.approx(0.0246)
    assert case["assertions"]["max_latency_ms"] == 3000


def test_a_ceiling_is_rounded_up_never_below_the_observed_figure() -> None:
    call = LlmCall(cost_usd=0.0000011)
    case = case_from_trajectory(Trajectory(steps=[call]), case_id="c", reasons=[], margin=1.0)
    assert case["assertions"]["max_cost_usd"] >= 0.0000011


@pytest.mark.parametrize("margin", [0.5, float("nan"), float("inf")])
def test_margin_below_one_or_not_finite_is_refused(margin: float) -> None:
    with pytest.raises(ValueError, match="margin"):
        case_from_trajectory(Trajectory(), case_id="c", reasons=[], margin=margin)


def test_first_user_message_skips_system_and_blank_messages() -> None:
    call = LlmCall(
        input_messages=[
            ChatMessage(role="system", content="be brief"),
            ChatMessage(role="user", content="  "),
            ChatMessage(role="user", content="Where is order 77?"),
        ]
    )
    assert first_user_message(Trajectory(steps=[call])) == "Where is order 77?"
    assert first_user_message(Trajectory()) is None
