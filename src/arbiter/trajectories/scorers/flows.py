"""The flow scorers: a flow run graded as a whole (completion, nodes, budget).

Flows are the second agent type: these scorers read ``Output.flow`` and apply only to
the ``flow`` class, and no turn-shaped scorer runs on a flow.

- ``flow_complete``: the run completed, or did not, as the case's ``expect_complete``
  says. Completed means status ``completed``, no run error and no node that ended in
  ``error``.
- ``required_nodes``: every node the case's ``require_nodes`` names was executed;
- ``forbidden_nodes``: none of ``forbid_nodes`` was;
- ``flow_cost``: the nodes' cost, banded by ``max_cost_usd``;
- ``flow_steps``: the nodes executed (a node run twice in a loop counts twice), banded
  by ``max_steps``.

A node is named by its id, its label or its type, compared case-folded: a case can
require "the approval node" by whichever its author knows. An empty list asserts
nothing: the scorer abstains.
"""

from __future__ import annotations

from arbiter.contract import Example, FlowNode, FlowRun, Output, Score
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.scoring.reading import quoted
from arbiter.trajectories.scorers.calls import string_list
from arbiter.trajectories.scorers.common import assertions, banded, trajectory_scorer

__all__ = [
    "flow_complete",
    "flow_completed",
    "flow_cost",
    "flow_steps",
    "forbidden_nodes",
    "required_nodes",
]

_FLOW = {"flow"}


def _flow(output: Output) -> FlowRun:
    assert output.flow is not None
    return output.flow


def flow_completed(flow: FlowRun) -> tuple[bool, str]:
    """Whether a flow run completed, and one phrase saying how it ended."""
    failed = [node for node in flow.nodes if node.status == "error"]
    if flow.status != "completed":
        return False, f"the flow ended {flow.status}"
    if flow.error is not None:
        return False, "the flow completed with an error"
    if failed:
        return False, f"the flow completed but {len(failed)} node(s) failed"
    return True, "the flow completed"


def _identifiers(node: FlowNode) -> set[str]:
    return {name.casefold() for name in (node.id, node.name, node.type) if name}


def _names(example: Example, key: str) -> list[str] | None:
    return string_list(assertions(example), key, expected="a list of node names", non_empty=True)


def _executed(flow: FlowRun) -> set[str]:
    return {identifier for node in flow.nodes for identifier in _identifiers(node)}


@trajectory_scorer(
    name="flow_complete",
    dimension="completion",
    moment="run",
    applies_to=_FLOW,
    needs="flow",
)
def flow_complete() -> ScoreFunction:
    """The flow completed (or did not) as the case's ``expect_complete`` says."""

    def score(example: Example, output: Output) -> Score:
        expected = assertions(example).get("expect_complete")
        if expected is None:
            return Score(explanation="the case sets no expect_complete")
        if not isinstance(expected, bool):
            raise InputError(f"assertion 'expect_complete' must be true or false, got {expected!r}")
        completed, how = flow_completed(_flow(output))
        passed = completed == expected
        wanted = "completion was expected" if expected else "a failure was expected"
        return Score(value=1.0 if passed else 0.0, passed=passed, explanation=f"{how}; {wanted}")

    return score


@trajectory_scorer(
    name="required_nodes",
    dimension="flow_path",
    moment="run",
    applies_to=_FLOW,
    needs="flow",
)
def required_nodes() -> ScoreFunction:
    """Every node of the case's ``require_nodes`` was executed; the value is the share."""

    def score(example: Example, output: Output) -> Score:
        required = _names(example, "require_nodes")
        if not required:
            return Score(explanation="the case sets no require_nodes")
        executed = _executed(_flow(output))
        missing = [name for name in required if name.casefold() not in executed]
        found = len(required) - len(missing)
        if missing:
            shown = ", ".join(quoted(name, 60) for name in missing[:5])
            explanation = f"{found} of {len(required)} required node(s) ran; not run: {shown}"
        else:
            explanation = f"all {len(required)} required node(s) ran"
        return Score(value=found / len(required), passed=not missing, explanation=explanation)

    return score


@trajectory_scorer(
    name="forbidden_nodes",
    dimension="flow_path",
    moment="run",
    applies_to=_FLOW,
    needs="flow",
)
def forbidden_nodes() -> ScoreFunction:
    """No node of the case's ``forbid_nodes`` was executed; the value is how many were."""

    def score(example: Example, output: Output) -> Score:
        forbidden = _names(example, "forbid_nodes")
        if not forbidden:
            return Score(explanation="the case sets no forbid_nodes")
        executed = _executed(_flow(output))
        ran = [name for name in forbidden if name.casefold() in executed]
        if ran:
            shown = ", ".join(quoted(name, 60) for name in ran[:5])
            return Score(
                value=float(len(ran)), passed=False, explanation=f"forbidden node(s) ran: {shown}"
            )
        return Score(
            value=0.0, passed=True, explanation=f"none of {len(forbidden)} forbidden node(s) ran"
        )

    return score


@trajectory_scorer(name="flow_cost", dimension="cost", moment="run", applies_to=_FLOW, needs="flow")
def flow_cost() -> ScoreFunction:
    """The nodes' cost in US dollars, banded by ``max_cost_usd``; abstains when none reports one."""

    def score(example: Example, output: Output) -> Score:
        cost = _flow(output).cost_usd
        if cost is None:
            return Score(explanation="no node of the flow reports a cost")
        return banded(cost, "max_cost_usd", example, higher_is_better=False, unit=" USD")

    return score


@trajectory_scorer(
    name="flow_steps", dimension="steps", moment="run", applies_to=_FLOW, needs="flow"
)
def flow_steps() -> ScoreFunction:
    """The nodes executed (loop iterations included), banded by ``max_steps``."""

    def score(example: Example, output: Output) -> Score:
        count = len(_flow(output).nodes)
        result = banded(count, "max_steps", example, higher_is_better=False)
        result.explanation = f"{count} node(s) executed: {result.explanation}"
        return result

    return score
