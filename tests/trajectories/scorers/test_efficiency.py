"""Steps, efficiency, cost, latency and tokens: banded around their cut points, abstaining
when the run does not report what they read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from arbiter.contract import Handoff, ToolCall, Trajectory
from arbiter.errors import InputError
from arbiter.trajectories.scorers.efficiency import cost, efficiency, latency, steps, tokens
from tests.trajectories.scorers.runs import at, grade, llm, run, tool


@pytest.mark.parametrize(
    ("planned", "band"),
    [(2, "healthy"), (6, "healthy"), (7, "review"), (12, "review"), (13, "danger")],
)
def test_steps_bands_the_planned_step_count_by_max_steps(planned: int, band: str) -> None:
    score = grade(steps, run(llm(), metadata={"planned_steps": planned}))
    assert (score.value, score.band, score.passed) == (float(planned), band, band != "danger")


@pytest.mark.parametrize(
    ("trajectory_metadata", "case_metadata", "value"),
    [
        ({"plan": [{"phase": 1}, {"phase": 2}]}, {}, 2.0),
        ({}, {"planned_steps": 3}, 3.0),
        ({"planned_steps": 4}, {"planned_steps": 3}, 4.0),  # the run's own record first
        ({}, {}, None),
        ({"planned_steps": True}, {}, None),  # not a count
        ({"planned_steps": -1}, {}, None),
        ({"planned_steps": "3"}, {}, None),
    ],
)
def test_steps_reads_a_plan_from_the_run_else_the_case_and_abstains_without_one(
    trajectory_metadata: dict[str, Any], case_metadata: dict[str, Any], value: float | None
) -> None:
    score = grade(steps, run(llm(), metadata=trajectory_metadata), metadata=case_metadata)
    assert score.value == value
    if value is None:
        assert (score.passed, score.explanation) == (None, "the run records no plan")


def test_steps_is_a_planner_signal_that_does_not_gate() -> None:
    assert steps.applies_to == {"tool_enabled"}
    assert steps.moment == "plan"
    assert steps.gating is False


def _tasks(n: int) -> Trajectory:
    """A run of ``n`` tasks: a planner call, ``n - 2`` tool calls, a synthesis."""
    return run(llm(), *(tool(f"t{i}") for i in range(n - 2)), llm())


@pytest.mark.parametrize(
    ("actual", "value", "band"),
    [
        (3, 1.0, "healthy"),
        (2, 1.0, "healthy"),  # fewer tasks than the target: at most 1
        (4, 0.75, "review"),
        (6, 0.5, "review"),  # on the danger line: passes
        (7, 3 / 7, "danger"),
    ],
)
def test_efficiency_is_optimal_over_actual_tasks_banded_by_min_efficiency(
    actual: int, value: float, band: str
) -> None:
    score = grade(efficiency, _tasks(actual), {"optimal_tasks": 3})
    assert score.value == pytest.approx(value)
    assert (score.band, score.passed) == (band, band != "danger")
    assert score.metadata["actual"] == actual


def test_efficiency_reads_optimal_steps_too_and_abstains_without_a_target() -> None:
    assert grade(efficiency, _tasks(4), {"optimal_steps": 2}).value == 0.5
    score = grade(efficiency, _tasks(4), {"max_cost_usd": 1})
    assert (score.passed, score.value) == (None, None)
    assert score.explanation == "the case sets no optimal_tasks"
    assert grade(efficiency, run(), {"optimal_tasks": 2}).explanation == "the run did no tasks"


@pytest.mark.parametrize("target", [0, -2, 1.5, "3", True])
def test_a_target_that_is_not_a_positive_count_is_an_input_error(target: Any) -> None:
    with pytest.raises(InputError, match="assertion 'optimal_tasks' must be a positive whole"):
        grade(efficiency, _tasks(3), {"optimal_tasks": target})


@pytest.mark.parametrize(
    ("costs", "band"),
    [
        ([0.01, 0.04], "healthy"),  # 0.05: on the healthy line
        ([0.05, 0.05], "review"),
        ([0.25], "review"),  # on the danger line
        ([0.2, 0.06], "danger"),
    ],
)
def test_cost_sums_the_model_calls_and_is_banded_by_max_cost_usd(
    costs: list[float], band: str
) -> None:
    score = grade(cost, run(*(llm(cost=c) for c in costs), llm()))
    assert score.value == pytest.approx(sum(costs))
    assert (score.band, score.passed) == (band, band != "danger")


def test_cost_includes_the_sub_agents_and_abstains_when_nothing_is_priced() -> None:
    expert = Handoff(trajectory=run(llm(cost=0.3)))
    assert grade(cost, run(llm(cost=0.01), expert)).value == pytest.approx(0.31)
    score = grade(cost, run(llm(), tool("a")))
    assert (score.passed, score.explanation) == (None, "no model call of the run reports a cost")


def test_a_case_cost_line_replaces_the_default_pair() -> None:
    trajectory = run(llm(cost=0.1))
    assert grade(cost, trajectory, {"max_cost_usd": 0.05}).band == "danger"
    assert grade(cost, trajectory, {"max_cost_usd": 1.0}).band == "healthy"  # no review band
    split = {"max_cost_usd": 1.0, "max_cost_usd__healthy": 0.01}
    assert grade(cost, trajectory, split).band == "review"


@pytest.mark.parametrize(
    ("seconds", "band"), [(30, "healthy"), (31, "review"), (120, "review"), (121, "danger")]
)
def test_latency_is_the_runs_wall_clock_banded_by_max_latency_ms(seconds: int, band: str) -> None:
    score = grade(latency, run(llm(), started_at=at(0), ended_at=at(seconds)))
    assert (score.value, score.band) == (seconds * 1000.0, band)


def test_latency_falls_back_to_the_steps_times_and_abstains_when_untimed() -> None:
    timed = run(tool("a", start=1, end=2), tool("b", start=5, end=7))
    assert grade(latency, timed).value == 6000.0
    score = grade(latency, run(tool("a")))
    assert (score.passed, score.explanation) == (None, "nothing of the run is timed")


@pytest.mark.parametrize(
    ("counts", "band"),
    [
        ([(15_000, 5_000)], "healthy"),
        ([(15_000, 5_001)], "review"),
        ([(60_000, 20_000), (10_000, 10_000)], "review"),  # 100,000: on the danger line
        ([(100_000, 1)], "danger"),
    ],
)
def test_tokens_sums_prompt_and_completion_banded_by_max_tokens(
    counts: list[tuple[int, int]], band: str
) -> None:
    score = grade(tokens, run(*(llm(tokens=c) for c in counts)))
    assert score.value == float(sum(i + o for i, o in counts))
    assert score.band == band
    assert score.metadata["input_tokens"] == sum(i for i, _ in counts)


def test_tokens_include_the_sub_agents_and_abstain_when_no_call_counts_them() -> None:
    expert = Handoff(trajectory=run(llm(tokens=(10, 5))))
    assert grade(tokens, run(llm(), expert)).value == 15.0
    score = grade(tokens, run(llm(), tool("a")))
    assert (score.passed, score.explanation) == (None, "no model call of the run reports tokens")


@pytest.mark.parametrize("factory", [cost, latency, tokens, efficiency])
def test_the_budget_scorers_apply_to_every_profile_class_but_not_flows(factory: Any) -> None:
    assert factory.applies_to_class("llm_only")
    assert not factory.applies_to_class("flow")
    assert factory.moment == "run"


def test_a_run_with_times_with_and_without_a_zone_never_reaches_latency() -> None:
    naive = ToolCall(name="a", started_at=datetime(2026, 1, 1), ended_at=datetime(2026, 1, 1, 0, 1))
    aware = tool("b", start=1, end=2)
    with pytest.raises(ValueError, match="all zoned or all zoneless"):
        run(naive, aware)
