"""What every trajectory scorer shares: the decorator, a case's assertions, the tools scored.

A trajectory scorer is an ordinary ``@scorer`` factory (same registry, specs, report,
gate and diff) declared with :func:`trajectory_scorer`, which adds the agent metadata
(dimension, the agent classes it applies to, the moment it measures) and wraps the
inner function so that it

- abstains when the output carries no trajectory (or, for flow scorers, no flow run);
- abstains, marked ``metadata["applicable"] = False``, on a run of an agent class it
  does not apply to.

The scorers of one case read the same things of its run (the graded tool calls, their
canonical arguments, the walked steps): :func:`graded_calls`, :func:`compared_calls`
and :func:`walked` work them out once per case and run
(:mod:`~arbiter.trajectories.scorers.derived`).

A case's assertions are its ``Example.expected`` when that is a JSON object (an agent
case file writes them there; the τ-bench importer puts the gold actions under
``expected_tool_calls``). A scorer whose assertion is absent abstains: grade what the
case asked for, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from functools import wraps
from typing import Any, Literal

from arbiter.contract import Example, FlowRun, Output, Score, Step, ToolCall, Trajectory
from arbiter.scoring.base import ScoreFunction, ScorerFactory, ScorerMoment, scorer
from arbiter.trajectories.bands import Defaults, banded_metric, default_thresholds
from arbiter.trajectories.scorers.calls import ComparedCall
from arbiter.trajectories.scorers.derived import shared

__all__ = [
    "agent_class_of",
    "assertions",
    "banded",
    "compared_calls",
    "graded_calls",
    "internal_tools",
    "scored_tool_calls",
    "trajectory_scorer",
    "walked",
]

Needs = Literal["trajectory", "flow", "either"]
"""What of an output a scorer reads: a trajectory, a flow run, or whichever it has."""


def assertions(example: Example) -> Mapping[str, Any]:
    """The case's assertions: ``example.expected`` when it is an object, else none."""
    expected = example.expected
    return expected if isinstance(expected, dict) else {}


def agent_class_of(example: Example, output: Output) -> str | None:
    """The run's agent class: the trajectory's own, else the case's, else None."""
    if output.flow is not None and output.trajectory is None:
        return "flow"
    if output.trajectory is not None and output.trajectory.agent.agent_class is not None:
        return output.trajectory.agent.agent_class
    declared = example.metadata.get("agent_class")
    return declared if isinstance(declared, str) else None


def internal_tools(example: Example, defaults: Defaults | None = None) -> frozenset[str]:
    """The framework-internal tools: the defaults' plus the case's ``internal_tools``."""
    shipped = (defaults or default_thresholds()).internal_tools
    declared = assertions(example).get("internal_tools")
    if not isinstance(declared, list):
        return shipped
    return shipped | {name for name in declared if isinstance(name, str)}


def walked(trajectory: Trajectory, example: Example) -> tuple[Step, ...]:
    """Every step of the run, hand-offs' included (:meth:`Trajectory.walk`), shared by
    the scorers of a case (:mod:`~arbiter.trajectories.scorers.derived`)."""
    return shared(_walked, example, trajectory)


def _walked(example: Example, trajectory: Trajectory) -> tuple[Step, ...]:
    return tuple(trajectory.walk())


def _own_calls(example: Example, trajectory: Trajectory) -> tuple[ToolCall, ...]:
    return _graded(trajectory.steps, internal_tools(example))


def _all_calls(example: Example, trajectory: Trajectory) -> tuple[ToolCall, ...]:
    return _graded(walked(trajectory, example), internal_tools(example))


def _graded(steps: Iterable[Step], internal: frozenset[str]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for step in steps:
        # The steps' discriminator: a string compare where isinstance of a pydantic
        # model class is an ABC check for every step that is no tool call.
        if step.kind == "tool_call" and step.name not in internal:
            calls.append(step)
    return tuple(calls)


def graded_calls(
    trajectory: Trajectory, example: Example, *, include_handoffs: bool = False
) -> tuple[ToolCall, ...]:
    """:func:`scored_tool_calls` with the shipped defaults, shared by the scorers of a
    case (:mod:`~arbiter.trajectories.scorers.derived`): read it, never change it."""
    return shared(_all_calls if include_handoffs else _own_calls, example, trajectory)


def compared_calls(trajectory: Trajectory, example: Example) -> list[ComparedCall]:
    """The agent's own graded calls as matching compares them, shared by the scorers of
    a case (each call's canonical arguments are worked out once): read it, never
    change it."""
    return shared(_compared_calls, example, trajectory)


def _compared_calls(example: Example, trajectory: Trajectory) -> list[ComparedCall]:
    return [ComparedCall(call.name, call.arguments) for call in graded_calls(trajectory, example)]


def scored_tool_calls(
    trajectory: Trajectory,
    example: Example,
    *,
    defaults: Defaults | None = None,
    include_handoffs: bool = False,
) -> list[ToolCall]:
    """The tool calls a tool scorer grades: framework-internal tools left out.

    The internal tools are the defaults' ``internal_tools`` plus the case's
    ``internal_tools`` assertion.

    Args:
        trajectory: The run.
        example: The case (its ``internal_tools`` assertion, if any).
        defaults: The defaults in use; None: the shipped ones.
        include_handoffs: Count sub-agents' calls too.
    """
    if defaults is None:
        return list(graded_calls(trajectory, example, include_handoffs=include_handoffs))
    internal = internal_tools(example, defaults)
    steps = trajectory.walk() if include_handoffs else iter(trajectory.steps)
    return [s for s in steps if isinstance(s, ToolCall) and s.name not in internal]


def banded(
    value: float,
    key: str,
    example: Example,
    *,
    higher_is_better: bool,
    unit: str = "",
    defaults: Defaults | None = None,
) -> Score:
    """:func:`~arbiter.trajectories.bands.banded_metric` with the cut points of ``key``.

    The case's ``<key>`` / ``<key>__healthy`` assertions, else the defaults' pair.
    """
    points = (defaults or default_thresholds()).cut_points(key, assertions(example))
    score = banded_metric(
        value,
        danger=points.danger,
        healthy=points.healthy,
        higher_is_better=higher_is_better,
        unit=unit,
    )
    score.metadata["threshold_key"] = key
    return score


def trajectory_scorer(
    *,
    name: str,
    dimension: str,
    moment: ScorerMoment,
    applies_to: Collection[str] = (),
    gating: bool = True,
    version: str = "1",
    description: str | None = None,
    needs: Needs = "trajectory",
) -> Callable[[Callable[..., ScoreFunction]], ScorerFactory]:
    """Declare a trajectory (or flow) scorer: ``@scorer`` plus the agent metadata.

    The decorated factory returns a function ``(example, output) -> Score`` that may
    assume ``output.trajectory`` (``needs="flow"``: ``output.flow``; ``"either"``: one of
    the two) is set and the run's class is one the scorer applies to.

    Args:
        name: The registered name.
        dimension: The one dimension it measures.
        moment: When in the run what it measures happens.
        applies_to: Agent classes it measures; empty: every class but ``flow``.
        gating: Whether it takes part in pass / fail by default.
        version: Bump when what it computes changes.
        description: One line for ``arbiter scorers``; defaults to the docstring's first.
        needs: What of the output it reads: a ``trajectory``, a ``flow`` run, or
            ``either``.
    """
    classes = frozenset(applies_to)

    def decorate(factory: Callable[..., ScoreFunction]) -> ScorerFactory:
        @wraps(factory)
        def guarded_factory(**arguments: Any) -> ScoreFunction:
            inner = factory(**arguments)

            def score(example: Example, output: Output) -> Score:
                subject: Trajectory | FlowRun | None
                if needs == "trajectory":
                    subject = output.trajectory
                elif needs == "flow":
                    subject = output.flow
                else:
                    subject = output.trajectory or output.flow
                if subject is None:
                    what = {"trajectory": "trajectory", "flow": "flow run"}.get(
                        needs, "trajectory or flow run"
                    )
                    return Score(explanation=f"the output has no {what}")
                agent_class = agent_class_of(example, output)
                if not built.applies_to_class(agent_class):
                    return Score(
                        explanation=f"does not apply to agent class {agent_class!r}",
                        metadata={"applicable": False},
                    )
                result = inner(example, output)
                if not isinstance(result, Score):  # an async inner function: not for these
                    raise TypeError("a trajectory scorer must score synchronously")
                return result

            return score

        built = scorer(
            name=name,
            version=version,
            description=description or (factory.__doc__ or "").strip().split("\n", 1)[0],
            dimension=dimension,
            applies_to=classes,
            moment=moment,
            gating=gating,
        )(guarded_factory)
        return built

    return decorate
