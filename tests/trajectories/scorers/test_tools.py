"""Tool assertions and tool-use metrics: required / forbidden tools, success rate, loops,
volume and self-corrections."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Handoff, ToolCall
from arbiter.errors import InputError
from arbiter.scoring.base import ScorerFactory
from arbiter.trajectories.scorers.tools import (
    forbidden_tools,
    no_tool_loops,
    required_tools,
    self_correction,
    self_corrections,
    tool_calls,
    tool_success_rate,
)
from tests.trajectories.scorers.runs import grade, run, tool

WEATHER = run(tool("geocode", {"q": "Paris"}), tool("get_weather", {"city": "Paris"}))


@pytest.mark.parametrize(
    ("required", "passed", "missing"),
    [
        (["geocode", "get_weather"], True, []),
        ("get_weather", True, []),  # one name is a list of one
        (["get_weather", "send_email", "send_email"], False, ["send_email"]),
        ([], True, []),
    ],
)
def test_required_tools_passes_when_every_listed_tool_was_called(
    required: Any, passed: bool, missing: list[str]
) -> None:
    score = grade(required_tools, WEATHER, {"require_tools_subset": required})
    assert score.passed is passed
    assert score.metadata["missing"] == missing
    assert [e.quote for e in score.evidence] == missing


def test_required_tools_counts_a_sub_agents_calls_but_not_internal_tools() -> None:
    expert = Handoff(trajectory=run(tool("lookup")))
    trajectory = run(expert, tool("log_event"))
    case = {"require_tools_subset": ["lookup", "log_event"], "internal_tools": ["log_event"]}
    score = grade(required_tools, trajectory, case)
    assert (score.passed, score.metadata["missing"]) == (False, ["log_event"])


@pytest.mark.parametrize(
    ("factory", "key"),
    [(required_tools, "require_tools_subset"), (forbidden_tools, "must_not_call")],
)
def test_tool_assertions_abstain_without_their_assertion_and_refuse_a_malformed_one(
    factory: ScorerFactory, key: str
) -> None:
    score = grade(factory, WEATHER, {"max_cost_usd": 1})
    assert (score.passed, score.explanation) == (None, f"the case sets no {key}")
    with pytest.raises(InputError, match=f"assertion '{key}' must be a tool name or a list"):
        grade(factory, WEATHER, {key: [1, 2]})


def test_forbidden_tools_fails_on_any_forbidden_call_anywhere_in_the_tree() -> None:
    expert = Handoff(trajectory=run(tool("delete_user", {"id": 7})))
    trajectory = run(tool("get_weather"), expert, tool("delete_user", {"id": 8}))
    score = grade(forbidden_tools, trajectory, {"must_not_call": ["delete_user", "drop_table"]})
    assert (score.passed, score.value) == (False, 2.0)
    assert [e.quote for e in score.evidence] == ['delete_user({"id":7})', 'delete_user({"id":8})']
    assert grade(forbidden_tools, WEATHER, {"must_not_call": "delete_user"}).passed is True


@pytest.mark.parametrize(
    ("errors", "value", "band"),
    [
        ([None, None, None, None], 1.0, "healthy"),
        ([None, None, None, "500"], 0.75, "review"),
        ([None, None, "500", "500"], 0.5, "review"),  # on the danger line: passes
        ([None, "500", "500", "500"], 0.25, "danger"),
    ],
)
def test_tool_success_rate_is_banded_around_the_default_cut_points(
    errors: list[str | None], value: float, band: str
) -> None:
    trajectory = run(*(tool("t", {"i": i}, error=e) for i, e in enumerate(errors)))
    score = grade(tool_success_rate, trajectory)
    assert (score.value, score.band, score.passed) == (value, band, band != "danger")
    assert len(score.evidence) == sum(e is not None for e in errors)


def test_tool_success_rate_leaves_out_internal_tools_and_abstains_without_calls() -> None:
    trajectory = run(tool("TDA_SystemLog", error="disk full"), tool("fetch"))
    score = grade(tool_success_rate, trajectory, {"internal_tools": ["TDA_SystemLog"]})
    assert (score.value, score.band) == (1.0, "healthy")
    assert grade(tool_success_rate, run()).explanation == "the agent called no tool"


@pytest.mark.parametrize(
    ("repeats", "band"), [(1, "healthy"), (2, "review"), (3, "review"), (4, "danger")]
)
def test_no_tool_loops_bands_the_most_repeated_identical_call(repeats: int, band: str) -> None:
    trajectory = run(*[tool("search", {"q": "x"}) for _ in range(repeats)], tool("other"))
    score = grade(no_tool_loops, trajectory)
    assert (score.value, score.band) == (float(repeats), band)


def test_no_tool_loops_compares_arguments_as_canonical_json() -> None:
    same = run(
        tool("search", {"q": "x", "limit": 1}),
        tool("search", {"limit": 1.0, "q": "x"}),  # key order and 1.0 vs 1: the same call
        tool("search", {"q": "x", "limit": True}),  # a boolean is not a number
        tool("search", {"q": "y", "limit": 1}),
    )
    score = grade(no_tool_loops, same)
    assert score.value == 2.0
    assert score.evidence[0].quote == 'search({"limit":1,"q":"x"})'
    assert score.metadata["repeated_calls"] == 1


@pytest.mark.parametrize(
    ("calls", "band"),
    [(0, "healthy"), (10, "healthy"), (11, "review"), (25, "review"), (26, "danger")],
)
def test_tool_calls_bands_raw_volume_and_does_not_gate(calls: int, band: str) -> None:
    trajectory = run(*(tool(f"t{i % 3}", {"i": i}) for i in range(calls)))
    score = grade(tool_calls, trajectory)
    assert (score.value, score.band) == (float(calls), band)
    assert tool_calls.gating is False


def test_a_case_threshold_replaces_the_default_pair() -> None:
    trajectory = run(tool("a"), tool("b"), tool("c"))
    assert grade(tool_calls, trajectory, {"max_tool_calls": 2}).band == "danger"
    assert grade(tool_calls, trajectory, {"max_tool_calls": 3}).band == "healthy"
    split = {"max_tool_calls": 5, "max_tool_calls__healthy": 2}
    assert grade(tool_calls, trajectory, split).band == "review"


@pytest.mark.parametrize(
    ("sequence", "corrections"),
    [
        ("ok ok", 0),
        ("fail", 0),  # never recovered: a failure, not a correction
        ("fail ok", 1),
        ("fail fail fail ok", 1),  # one correction however many tries it took
        ("fail ok fail ok", 2),
        ("fail other-ok", 0),  # another tool's success corrects nothing
    ],
)
def test_a_self_correction_is_a_failure_then_a_success_of_the_same_tool(
    sequence: str, corrections: int
) -> None:
    calls: list[ToolCall] = []
    for word in sequence.split():
        name = "other" if word.startswith("other") else "fetch"
        calls.append(tool(name, error="500" if word.endswith("fail") else None))
    assert len(self_corrections(calls)) == corrections
    assert grade(self_correction, run(*calls)).value == float(corrections)


@pytest.mark.parametrize(
    ("corrections", "band"),
    [(0, "healthy"), (1, "healthy"), (2, "review"), (3, "review"), (4, "danger")],
)
def test_self_correction_is_banded_around_the_default_cut_points(
    corrections: int, band: str
) -> None:
    steps = [tool(f"t{i}", error="x") for i in range(corrections)]
    steps += [tool(f"t{i}") for i in range(corrections)]
    score = grade(self_correction, run(*steps, tool("z")))
    assert (score.value, score.band, score.passed) == (float(corrections), band, band != "danger")


@pytest.mark.parametrize(
    "factory", [tool_success_rate, no_tool_loops, tool_calls, self_correction, forbidden_tools]
)
@pytest.mark.parametrize(
    "arguments",
    [None, "not json {", 3.5, [1, [2, [3]]], {"blob": "x" * 200_000}, {"k": float("1e308")}],
)
def test_tool_scorers_take_any_arguments_and_quote_them_bounded(
    factory: ScorerFactory, arguments: Any
) -> None:
    trajectory = run(tool("x" * 1_000, arguments, error="e"), tool("x" * 1_000, arguments))
    score = grade(factory, trajectory, {"must_not_call": ["x" * 1_000]})
    if score.band is not None:
        assert score.passed is (score.band != "danger")
    assert all(len(e.quote) < 300 for e in score.evidence)
    assert len(score.explanation) < 2_000


@pytest.mark.parametrize("factory", [tool_success_rate, no_tool_loops, tool_calls, self_correction])
def test_tool_metrics_apply_to_the_tool_classes_only(factory: ScorerFactory) -> None:
    assert factory.applies_to_class("tool_enabled")
    assert not factory.applies_to_class("llm_only")
    assert not factory.applies_to_class("flow")
