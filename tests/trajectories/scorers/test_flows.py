"""Flow scorers: completion, required and forbidden nodes, cost and steps of a flow run."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Example, FlowNode, FlowRun, Output, Trajectory
from arbiter.errors import InputError
from arbiter.trajectories.scorers.flows import (
    flow_complete,
    flow_cost,
    flow_steps,
    forbidden_nodes,
    required_nodes,
)
from tests.trajectories.scorers.case_runs import score_run


def flow(*nodes: FlowNode, status: str = "completed", error: str | None = None) -> FlowRun:
    return FlowRun(nodes=list(nodes), status=status, error=error)


RUN = flow(
    FlowNode(id="n1", name="Fetch orders", type="tool", status="completed", cost_usd=0.01),
    FlowNode(id="n2", name="Summarise", type="agent", status="completed", cost_usd=0.02),
    FlowNode(id="n2", name="Summarise", type="agent", status="completed"),  # a loop: twice
)


@pytest.mark.parametrize(
    ("run", "expected", "passed"),
    [
        (RUN, True, True),
        (RUN, False, False),
        (flow(status="error"), False, True),
        (flow(FlowNode(id="x", status="error")), True, False),  # a failed node
        (flow(error="boom"), True, False),
    ],
)
def test_flow_complete_compares_how_the_run_ended_with_the_case(
    run: FlowRun, expected: bool, passed: bool
) -> None:
    assert score_run(flow_complete, run, {"expect_complete": expected}).passed is passed


@pytest.mark.parametrize(
    ("required", "value", "passed"),
    [
        (["n1", "summarise"], 1.0, True),  # by id, or by label case-folded
        (["AGENT"], 1.0, True),  # by type
        (["n1", "approve"], 0.5, False),
    ],
)
def test_required_nodes_match_by_id_label_or_type(
    required: list[str], value: float, passed: bool
) -> None:
    score = score_run(required_nodes, RUN, {"require_nodes": required})
    assert (score.value, score.passed) == (value, passed)


@pytest.mark.parametrize(
    ("forbidden", "value", "passed"),
    [(["approve"], 0.0, True), (["Fetch Orders", "tool"], 2.0, False)],
)
def test_forbidden_nodes_fail_when_one_ran(
    forbidden: list[str], value: float, passed: bool
) -> None:
    score = score_run(forbidden_nodes, RUN, {"forbid_nodes": forbidden})
    assert (score.value, score.passed) == (value, passed)


def test_flow_cost_bands_the_nodes_cost_and_abstains_without_one() -> None:
    score = score_run(flow_cost, RUN, {"max_cost_usd": 0.1, "max_cost_usd__healthy": 0.02})
    assert score.value == pytest.approx(0.03)
    assert score.band == "review"
    assert score_run(flow_cost, flow(FlowNode(id="a"))).passed is None


@pytest.mark.parametrize(("line", "band"), [(3, "healthy"), (2, "danger")])
def test_flow_steps_counts_every_executed_node_loops_included(line: int, band: str) -> None:
    score = score_run(flow_steps, RUN, {"max_steps": line})
    assert (score.value, score.band) == (3, band)


@pytest.mark.parametrize(
    ("factory", "key"),
    [
        (flow_complete, "expect_complete"),
        (required_nodes, "require_nodes"),
        (forbidden_nodes, "forbid_nodes"),
    ],
)
def test_flow_assertion_scorers_abstain_without_their_assertion(factory: Any, key: str) -> None:
    score = score_run(factory, RUN)
    assert score.passed is None
    assert key in score.explanation


@pytest.mark.parametrize(
    ("factory", "assertions"),
    [(flow_complete, {"expect_complete": "yes"}), (required_nodes, {"require_nodes": [3]})],
)
def test_a_malformed_flow_assertion_is_an_input_error(
    factory: Any, assertions: dict[str, Any]
) -> None:
    with pytest.raises(InputError, match="assertion"):
        score_run(factory, RUN, assertions)


@pytest.mark.parametrize(
    "factory", [flow_complete, required_nodes, forbidden_nodes, flow_cost, flow_steps]
)
def test_flow_scorers_read_only_flows(factory: Any) -> None:
    assert factory.applies_to == {"flow"}
    example = Example(id="c", input={}, expected={"expect_complete": True, "max_steps": 3})
    turn = factory().function(example, Output(trajectory=Trajectory(final_answer="x")))
    assert turn.passed is None
    assert "flow run" in turn.explanation


@pytest.mark.parametrize(
    ("factory", "key"), [(required_nodes, "require_nodes"), (forbidden_nodes, "forbid_nodes")]
)
def test_an_empty_node_list_asserts_nothing(factory: Any, key: str) -> None:
    assert score_run(factory, RUN, {key: []}).passed is None
