"""Banded metrics: the two cut points, their direction, and where they come from."""

from __future__ import annotations

import re

import pytest

from arbiter.contract import Example, Output, Score, Trajectory
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.bands import (
    CutPoints,
    Defaults,
    banded_metric,
    check_cut_points,
    default_thresholds,
)
from arbiter.trajectories.scorers.common import banded, trajectory_scorer


@pytest.mark.parametrize(
    ("value", "higher", "band"),
    [
        (0.01, False, "healthy"),
        (0.05, False, "healthy"),  # on the healthy line: its good side
        (0.10, False, "review"),
        (0.25, False, "review"),  # on the danger line: still passes
        (0.30, False, "danger"),
        (0.9, True, "healthy"),
        (0.6, True, "review"),
        (0.3, True, "danger"),
    ],
)
def test_two_cut_points_give_three_bands_in_the_metric_direction(
    value: float, higher: bool, band: str
) -> None:
    danger, healthy = (0.5, 0.8) if higher else (0.25, 0.05)
    score = banded_metric(value, danger=danger, healthy=healthy, higher_is_better=higher)
    assert score.band == band
    assert score.passed is (band != "danger")
    assert score.value == value


@pytest.mark.parametrize(("danger", "healthy"), [(10.0, None), (None, 10.0)])
def test_one_cut_point_is_pass_or_fail_without_review(
    danger: float | None, healthy: float | None
) -> None:
    bands = {
        banded_metric(v, danger=danger, healthy=healthy, higher_is_better=False).band
        for v in (1, 10, 11, 100)
    }
    assert bands == {"healthy", "danger"}


def test_no_cut_point_is_informational() -> None:
    score = banded_metric(7, danger=None, healthy=None, higher_is_better=False)
    assert (score.passed, score.band, score.value) == (None, None, 7)


@pytest.mark.parametrize(
    ("danger", "healthy", "higher"), [(0.1, 0.5, False), (0.8, 0.5, True), (float("nan"), 1, True)]
)
def test_contradictory_or_non_finite_cut_points_are_refused(
    danger: float, healthy: float, higher: bool
) -> None:
    with pytest.raises(ValueError, match=r"line|finite"):
        banded_metric(0.3, danger=danger, healthy=healthy, higher_is_better=higher)


def test_the_shipped_defaults_are_ordered_for_their_direction() -> None:
    defaults = default_thresholds()
    assert "max_cost_usd" in defaults.thresholds
    for key, points in defaults.thresholds.items():
        assert key.startswith(("max_", "min_")), key
        # Grading any value must not raise: the pair is ordered for its direction.
        banded_metric(
            1.0,
            danger=points.danger,
            healthy=points.healthy,
            higher_is_better=key.startswith("min_"),
        )


def test_a_case_that_sets_a_line_replaces_the_default_pair() -> None:
    defaults = Defaults({"max_cost_usd": CutPoints(danger=0.25, healthy=0.05)})
    assert defaults.cut_points("max_cost_usd", {}) == CutPoints(0.25, 0.05)
    assert defaults.cut_points("max_cost_usd", {"max_cost_usd": 1}) == CutPoints(1.0, None)
    both = {"max_cost_usd": 1, "max_cost_usd__healthy": 0.5}
    assert defaults.cut_points("max_cost_usd", both) == CutPoints(1.0, 0.5)
    assert defaults.cut_points("unknown", {}).informational


@pytest.mark.parametrize("value", ["cheap", True, float("inf")])
def test_a_case_line_that_is_not_a_number_is_an_input_error(value: object) -> None:
    with pytest.raises(InputError, match="assertion 'max_cost_usd' must be a finite number"):
        Defaults({}).cut_points("max_cost_usd", {"max_cost_usd": value})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[thresholds]\nmax_x = 3\n", "thresholds.max_x must be a table"),
        ("[thresholds]\nmax_x = {danger = 'a'}\n", "thresholds.max_x.danger must be a finite"),
        ("internal_tools = 'log'\n", "internal_tools must be a list"),
        ("[thresholds\n", "not valid TOML"),
    ],
)
def test_a_bad_defaults_file_is_an_input_error_naming_it(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        Defaults.from_toml(text, where="mine.toml")
    assert str(caught.value).startswith("mine.toml: ")


@trajectory_scorer(name="_cost_probe", dimension="cost", moment="run", applies_to={"tool_enabled"})
def _cost_probe() -> ScoreFunction:
    """Probe: the run's cost, banded."""

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        return banded(3.0, "max_cost_usd", example, higher_is_better=False)

    return score


async def test_a_trajectory_scorer_abstains_without_a_trajectory_or_outside_its_classes() -> None:
    probe = _cost_probe()
    example = Example(id="c1", input={"query": "q"}, expected={"max_cost_usd": 5})
    assert (await probe(example, Output(text="hi"))).explanation == "the output has no trajectory"
    rag = Output(trajectory=Trajectory(agent={"agent_class": "rag_focused"}))
    skipped = await probe(example, rag)
    assert skipped.passed is None
    assert skipped.metadata == {"applicable": False}
    tool = Output(trajectory=Trajectory(agent={"agent_class": "tool_enabled"}))
    graded = await probe(example, tool)
    assert (graded.passed, graded.band, graded.name) == (True, "healthy", "_cost_probe")
    assert _cost_probe.dimension == "cost"
    assert _cost_probe.moment == "run"


@pytest.mark.parametrize(
    ("assertions", "message"),
    [
        ({"max_cost_usd": "cheap"}, "c.jsonl:4: assertion 'max_cost_usd' must be a finite number"),
        ({"min_efficiency__healthy": None}, "assertion 'min_efficiency__healthy' must be a finite"),
        ({"max_whatever": True}, "assertion 'max_whatever' must be a finite number"),
        (
            {"max_cost_usd": 0.1, "max_cost_usd__healthy": 0.5},
            "'max_cost_usd__healthy': the healthy line 0.5 is above the danger line 0.1",
        ),
        (
            {"min_efficiency": 0.8, "min_efficiency__healthy": 0.5},
            "'min_efficiency__healthy': the healthy line 0.5 is below the danger line 0.8",
        ),
    ],
)
def test_a_case_cut_point_that_cannot_grade_is_refused_naming_the_line(
    assertions: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        check_cut_points(assertions, where="c.jsonl:4")


def test_good_cut_points_and_other_assertions_pass_the_check() -> None:
    check_cut_points(
        {
            "max_cost_usd": 0.5,
            "max_cost_usd__healthy": 0.1,
            "min_efficiency": 0.5,
            "must_contain": ["Paris"],
            "expected_tool_calls": [],
        },
        where="c.jsonl:1",
    )
