"""The trajectory contract: JSON round trips, named validation errors, hand-off trees, totals."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from arbiter.contract import (
    FlowNode,
    FlowRun,
    Handoff,
    LlmCall,
    Output,
    Retrieval,
    ToolCall,
    Trajectory,
)
from arbiter.contract.trajectory import MAX_NAME_CHARS, MAX_TEXT_CHARS
from arbiter.errors import InputError
from arbiter.validation import validate_document

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _expert(answer: str, *, cost: float) -> Trajectory:
    return Trajectory(
        agent={"name": "expert", "agent_class": "tool_enabled"},
        steps=[
            LlmCall(model="m", input_tokens=10, output_tokens=5, cost_usd=cost),
            ToolCall(name="lookup", call_id="c9", arguments={"q": answer}, result=answer),
        ],
        final_answer=answer,
        status="completed",
    )


def _coordinator() -> Trajectory:
    return Trajectory.model_validate(
        {
            "id": "turn-1",
            "agent": {"name": "coord", "version": "3", "agent_class": "genie"},
            "conversation_id": "s-1",
            "steps": [
                {
                    "kind": "llm_call",
                    "model": "gpt",
                    "input_messages": [{"role": "user", "content": "hi"}],
                    "output_messages": [{"role": "assistant", "content": None}],
                    "input_tokens": 100,
                    "output_tokens": 20,
                    "cost_usd": 0.5,
                    "started_at": _at(0).isoformat(),
                    "ended_at": _at(1).isoformat(),
                },
                {
                    "kind": "retrieval",
                    "query": "hi",
                    "chunks": [{"source": "doc-1", "text": "hello", "similarity": 0.9}],
                    "started_at": _at(1).isoformat(),
                    "ended_at": _at(2).isoformat(),
                },
                {"kind": "handoff", "trajectory": _expert("a", cost=0.25).model_dump(mode="json")},
                {"kind": "handoff", "trajectory": _expert("b", cost=0.125).model_dump(mode="json")},
            ],
            "final_answer": "a and b",
            "status": "completed",
            "source": {"format": "test", "file": "t.jsonl", "line": 3, "span_ids": ["s1"]},
        }
    )


def test_trajectory_round_trips_through_json() -> None:
    trajectory = _coordinator()
    assert Trajectory.model_validate_json(trajectory.model_dump_json()) == trajectory


def test_steps_are_told_apart_by_kind() -> None:
    kinds = [type(step) for step in _coordinator().steps]
    assert kinds == [LlmCall, Retrieval, Handoff, Handoff]


def test_walk_visits_a_handoff_tree_depth_first() -> None:
    names = [
        step.name if isinstance(step, ToolCall) else step.kind for step in _coordinator().walk()
    ]
    assert names == [
        "llm_call",
        "retrieval",
        "handoff",
        "llm_call",
        "lookup",
        "handoff",
        "llm_call",
        "lookup",
    ]


def test_totals_include_sub_agents_unless_asked_not_to() -> None:
    trajectory = _coordinator()
    inclusive = trajectory.totals()
    own = trajectory.totals(include_handoffs=False)
    assert (inclusive.input_tokens, inclusive.output_tokens, inclusive.cost_usd) == (
        120,
        30,
        0.875,
    )
    assert (own.total_tokens, own.cost_usd) == (120, 0.5)


def test_duration_is_the_span_of_timed_steps_when_the_run_is_untimed() -> None:
    assert _coordinator().totals().duration_ms == 2000.0


def test_duration_prefers_the_runs_own_times() -> None:
    trajectory = Trajectory(started_at=_at(0), ended_at=_at(5), steps=[LlmCall(duration_ms=7)])
    assert trajectory.totals().duration_ms == 5000.0


def test_duration_sums_step_durations_without_any_times() -> None:
    trajectory = Trajectory(steps=[LlmCall(duration_ms=7), ToolCall(name="t", duration_ms=3)])
    assert trajectory.totals().duration_ms == 10.0


def test_untimed_run_without_costs_has_no_duration_and_no_cost() -> None:
    totals = Trajectory(steps=[ToolCall(name="t")]).totals()
    assert (totals.duration_ms, totals.cost_usd, totals.total_tokens) == (None, None, 0)


def test_tool_call_without_error_succeeded() -> None:
    assert ToolCall(name="t").succeeded
    assert not ToolCall(name="t", error="boom").succeeded


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"steps": [{"kind": "tool_call"}]}, "steps[0].name"),
        ({"steps": [{"kind": "llm_call", "input_tokens": -1}]}, "steps[0].input_tokens"),
        ({"steps": [{"kind": "teleport"}]}, "steps[0]"),
        ({"steps": [{"kind": "llm_call", "temperature": 1}]}, "steps[0].temperature"),
        ({"agent": {"agent_class": "wizard"}}, "agent.agent_class"),
        ({"status": "fine"}, "status"),
        ({"final_answer": "x" * (MAX_TEXT_CHARS + 1)}, "final_answer"),
        ({"steps": [{"kind": "tool_call", "name": "n" * (MAX_NAME_CHARS + 1)}]}, "steps[0].name"),
        (
            {"steps": [{"kind": "retrieval", "chunks": [{"similarity": "NaN"}]}]},
            "steps[0].chunks[0].similarity",
        ),
        (
            {
                "steps": [
                    {"kind": "handoff", "trajectory": {"steps": [{"kind": "tool_call"}]}},
                ]
            },
            "steps[0].trajectory.steps[0].name",
        ),
    ],
)
def test_invalid_trajectory_names_the_field(document: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match=rf"^t\.jsonl:2: field '{re.escape(field)}'"):
        validate_document(Trajectory, document, where="t.jsonl:2")


def test_step_ending_before_it_starts_is_refused() -> None:
    with pytest.raises(ValidationError, match="ended_at is before started_at"):
        ToolCall(name="t", started_at=_at(2), ended_at=_at(1))


def test_agent_classes_are_configurable_through_the_validation_context() -> None:
    document = {"agent": {"agent_class": "planner"}}
    with pytest.raises(ValidationError, match="unknown agent class 'planner'"):
        Trajectory.model_validate(document)
    custom = Trajectory.model_validate(document, context={"agent_classes": {"planner"}})
    assert custom.agent.agent_class == "planner"


def test_flow_run_sums_node_costs_and_spans_node_times() -> None:
    run = FlowRun(
        nodes=[
            FlowNode(id="a", started_at=_at(0), ended_at=_at(2), cost_usd=0.25),
            FlowNode(id="b", started_at=_at(1), ended_at=_at(3), cost_usd=0.5, status="error"),
            FlowNode(id="c"),
        ]
    )
    assert (run.agent.agent_class, run.cost_usd, run.duration) == ("flow", 0.75, 3000.0)
    assert FlowRun.model_validate_json(run.model_dump_json()) == run


def test_output_carries_a_trajectory_and_reads_its_final_answer() -> None:
    output = Output.coerce({"trajectory": _coordinator().model_dump(mode="json")})
    assert output.trajectory == _coordinator()
    assert output.answer_text == "a and b"


def test_output_without_a_trajectory_dumps_as_before() -> None:
    dumped = Output(text="x").model_dump(mode="json", exclude_defaults=True)
    assert dumped == {"text": "x"}
