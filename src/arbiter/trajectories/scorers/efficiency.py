"""What a run cost in work, money, time and tokens: steps, efficiency, cost, latency,
tokens — each banded, each abstaining when the run does not report what it reads.

Cost and tokens are the run's inclusive figures: a coordinator's own model calls and
those of the sub-agents it handed off to.
"""

from __future__ import annotations

import math
from typing import Any

from arbiter.contract import Example, LlmCall, Output, Score, Trajectory
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.common import assertions, banded, trajectory_scorer, walked
from arbiter.trajectories.scorers.derived import shared
from arbiter.trajectories.scorers.tasks import task_set

__all__ = ["cost", "efficiency", "latency", "planned_steps", "steps", "tokens"]

PLANNED_STEPS_KEY = "planned_steps"
"""Trajectory (or case) metadata key holding the size of the agent's plan."""
PLAN_KEY = "plan"
"""Trajectory metadata key holding the plan itself, a list of steps."""


def _trajectory(output: Output) -> Trajectory:
    assert output.trajectory is not None  # trajectory_scorer abstains without one
    return output.trajectory


def _model_calls(example: Example, output: Output) -> tuple[LlmCall, ...]:
    # Summed here rather than through Trajectory.totals(), which also orders the run's
    # times: a cost must not fail because a trace mixes zoned and zoneless timestamps.
    return shared(_llm_calls, example, _trajectory(output))


def _llm_calls(example: Example, trajectory: Trajectory) -> tuple[LlmCall, ...]:
    calls: list[LlmCall] = []
    for step in walked(trajectory, example):
        if step.kind == "llm_call":  # the discriminator: cheaper than a model isinstance
            calls.append(step)
    return tuple(calls)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def planned_steps(trajectory: Trajectory, example: Example) -> int | None:
    """The number of steps the agent planned, when the run or the case records it.

    The trajectory's ``metadata["planned_steps"]`` (a count) or ``metadata["plan"]`` (a
    list), else the case's ``metadata["planned_steps"]``; None when none is a count.
    """
    for source in (trajectory.metadata, example.metadata):
        counted = _count(source.get(PLANNED_STEPS_KEY))
        if counted is not None:
            return counted
        plan = source.get(PLAN_KEY)
        if isinstance(plan, list):
            return len(plan)
    return None


@trajectory_scorer(
    name="steps", dimension="steps", moment="plan", applies_to={"tool_enabled"}, gating=False
)
def steps() -> ScoreFunction:
    """The size of the agent's plan (its planned steps), banded by ``max_steps``.

    A planner's concept: abstains when neither the run nor the case records a plan.
    Non-gating, like every volume signal.
    """

    def score(example: Example, output: Output) -> Score:
        planned = planned_steps(_trajectory(output), example)
        if planned is None:
            return Score(explanation="the run records no plan")
        result = banded(float(planned), "max_steps", example, higher_is_better=False)
        result.explanation = f"{planned} planned steps; {result.explanation}"
        return result

    return score


def _target(example: Example) -> tuple[str, int] | None:
    given = assertions(example)
    for key in ("optimal_tasks", "optimal_steps"):
        value = given.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"assertion {key!r} must be a positive whole number, got {value!r}")
        return key, value
    return None


@trajectory_scorer(name="efficiency", dimension="efficiency", moment="run")
def efficiency() -> ScoreFunction:
    """How close the run came to the optimal amount of work: optimal / actual tasks.

    The target is the case's ``optimal_tasks`` (``optimal_steps`` is read the same
    way); the actual count is the run's tasks. At most 1 (fewer tasks than the target
    is 1). Banded by ``min_efficiency``; abstains without a target or without tasks.
    """

    def score(example: Example, output: Output) -> Score:
        target = _target(example)
        if target is None:
            return Score(explanation="the case sets no optimal_tasks")
        key, optimal = target
        actual = len(task_set(example, _trajectory(output)))
        if actual == 0:
            return Score(explanation="the run did no tasks")
        ratio = min(optimal / actual, 1.0)
        result = banded(ratio, "min_efficiency", example, higher_is_better=True)
        result.explanation = f"{optimal} optimal ({key}) over {actual} tasks; {result.explanation}"
        result.metadata.update(optimal=optimal, actual=actual)
        return result

    return score


@trajectory_scorer(name="cost", dimension="cost", moment="run")
def cost() -> ScoreFunction:
    """The run's cost in US dollars, banded by ``max_cost_usd``.

    Abstains when no model call of the run reports a cost.
    """

    def score(example: Example, output: Output) -> Score:
        costs = [c.cost_usd for c in _model_calls(example, output) if c.cost_usd is not None]
        if not costs:
            return Score(explanation="no model call of the run reports a cost")
        spent = math.fsum(costs)
        return banded(spent, "max_cost_usd", example, higher_is_better=False, unit=" USD")

    return score


@trajectory_scorer(name="latency", dimension="latency", moment="run")
def latency() -> ScoreFunction:
    """The run's wall-clock time in milliseconds, banded by ``max_latency_ms``.

    From the run's own start and end, else its steps' times or durations; abstains
    when nothing of the run is timed.
    """

    def score(example: Example, output: Output) -> Score:
        try:
            elapsed = _trajectory(output).duration
        except TypeError:  # step times with and without a zone cannot be ordered
            return Score(explanation="the run's times mix zoned and zoneless timestamps")
        if elapsed is None:
            return Score(explanation="nothing of the run is timed")
        return banded(elapsed, "max_latency_ms", example, higher_is_better=False, unit=" ms")

    return score


@trajectory_scorer(name="tokens", dimension="tokens", moment="run")
def tokens() -> ScoreFunction:
    """Prompt and completion tokens of the run's model calls, banded by ``max_tokens``.

    Abstains when no model call reports a token count.
    """

    def score(example: Example, output: Output) -> Score:
        calls = _model_calls(example, output)
        if all(c.input_tokens is None and c.output_tokens is None for c in calls):
            return Score(explanation="no model call of the run reports tokens")
        sent = sum(c.input_tokens or 0 for c in calls)
        received = sum(c.output_tokens or 0 for c in calls)
        result = banded(float(sent + received), "max_tokens", example, higher_is_better=False)
        result.explanation = f"{sent} in + {received} out; {result.explanation}"
        result.metadata.update(input_tokens=sent, output_tokens=received)
        return result

    return score
