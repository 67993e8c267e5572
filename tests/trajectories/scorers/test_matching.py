"""The agent's tool calls against the case's expected calls: trajectory_match in every
match mode and argument mode, and precision / recall / F1 as multiset counts."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from arbiter.contract import ToolCall
from arbiter.errors import InputError
from arbiter.trajectories.scorers.matching import (
    ComparedCall,
    match_calls,
    tool_call_f1,
    tool_call_precision,
    tool_call_recall,
    trajectory_match,
)
from tests.trajectories.scorers.runs import grade, run, tool

EXPECTED = [
    {"name": "geocode", "arguments": {"city": "Paris"}},
    {"name": "search", "arguments": {"q": "x", "limit": 5}},
]
A = tool("geocode", {"city": "Paris"})
B = tool("search", {"q": "x", "limit": 5})

MODES = ("strict", "unordered", "subset", "superset")
ARGS = ("exact", "ignore", "subset", "superset")

# Each scenario's outcome as a table: one row per match mode (strict, unordered, subset,
# superset), one column per argument mode (exact, ignore, subset, superset); P passes.
TABLE: dict[str, tuple[list[ToolCall], str]] = {
    "the same calls in order": ([A, B], "PPPP PPPP PPPP PPPP"),
    "the same calls reversed": ([B, A], "FFFF PPPP PPPP PPPP"),
    "an extra call": ([A, tool("log"), B], "FFFF FFFF FFFF PPPP"),
    "an expected call left out": ([A], "FFFF FFFF PPPP FFFF"),
    "an extra argument": (
        [tool("geocode", {"city": "Paris", "unit": "c"}), B],
        "FPFP FPFP FPFP FPFP",
    ),
    "an argument left out": ([tool("geocode", {}), B], "FPPF FPPF FPPF FPPF"),
    "a wrong argument value": ([tool("geocode", {"city": "Rome"}), B], "FPFF FPFF FPFF FPFF"),
    "no call at all": ([], "FFFF FFFF PPPP FFFF"),
}


@pytest.mark.parametrize("scenario", TABLE)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("arg", ARGS)
def test_trajectory_match_follows_the_table_of_modes(scenario: str, mode: str, arg: str) -> None:
    calls, table = TABLE[scenario]
    expected = table.split()[MODES.index(mode)][ARGS.index(arg)] == "P"
    case = {"expected_tool_calls": EXPECTED, "match_mode": mode, "arg_match": arg}
    score = grade(trajectory_match, run(*calls), case)
    assert score.passed is expected, score.explanation
    assert score.value == float(expected)
    assert score.metadata["match_mode"] == mode


def test_the_scorers_arguments_are_the_default_a_case_overrides() -> None:
    calls = run(B, A)
    assert grade(trajectory_match, calls, {"expected_tool_calls": EXPECTED}).passed is True
    strict = grade(trajectory_match, calls, {"expected_tool_calls": EXPECTED}, match_mode="strict")
    assert strict.passed is False
    case = {"expected_tool_calls": EXPECTED, "match_mode": "unordered"}
    assert grade(trajectory_match, calls, case, match_mode="strict").passed is True


def test_the_default_is_superset_in_calls_and_in_arguments() -> None:
    extra = run(tool("log"), tool("geocode", {"city": "Paris", "unit": "c"}), B)
    assert grade(trajectory_match, extra, {"expected_tool_calls": EXPECTED}).passed is True


def test_a_per_tool_argument_mode_overrides_the_cases() -> None:
    calls = run(tool("geocode", {"city": "Rome"}), B)
    case: dict[str, Any] = {"expected_tool_calls": EXPECTED, "arg_match": "exact"}
    assert grade(trajectory_match, calls, case).passed is False
    case["arg_match_by_tool"] = {"geocode": "ignore"}
    assert grade(trajectory_match, calls, case).passed is True
    case["arg_match_by_tool"] = {"search": "ignore"}
    assert grade(trajectory_match, calls, case).passed is False


def test_the_explanation_lists_what_is_missing_and_what_was_unexpected() -> None:
    calls = run(A, tool("delete", {"id": 1}))
    case = {"expected_tool_calls": EXPECTED, "match_mode": "unordered"}
    score = grade(trajectory_match, calls, case)
    assert score.explanation == (
        'unordered: 1 of 2 expected calls matched; missing: search({"limit":5,"q":"x"}); '
        'unexpected: delete({"id":1})'
    )
    assert [(e.quote, e.note) for e in score.evidence] == [
        ('search({"limit":5,"q":"x"})', "expected, not called"),
        ('delete({"id":1})', "called, not expected"),
    ]


def test_strict_names_the_first_call_out_of_place() -> None:
    score = grade(
        trajectory_match, run(B, A), {"expected_tool_calls": EXPECTED, "match_mode": "strict"}
    )
    assert score.explanation == (
        'strict: 2 of 2 expected calls matched; call 1: expected geocode({"city":"Paris"}), '
        'got search({"limit":5,"q":"x"})'
    )


def test_the_pairing_is_a_maximum_matching_not_a_greedy_one() -> None:
    # Tried in order, the first expected call would take the first agent call and leave
    # the second expected call nothing; a maximum matching pairs both.
    expected = [
        {"name": "search", "arguments": {"q": "x"}},
        {"name": "search", "arguments": {"q": "x", "limit": 5}},
    ]
    calls = run(tool("search", {"q": "x", "limit": 5}), tool("search", {"q": "x"}))
    case = {"expected_tool_calls": expected, "match_mode": "unordered", "arg_match": "superset"}
    score = grade(trajectory_match, calls, case)
    assert (score.passed, score.metadata["matched"]) == (True, 2)


def test_an_empty_expected_list_means_no_call_for_the_exact_modes() -> None:
    case: dict[str, Any] = {"expected_tool_calls": [], "match_mode": "strict"}
    assert grade(trajectory_match, run(), case).passed is True
    assert grade(trajectory_match, run(A), case).passed is False
    case["match_mode"] = "superset"
    assert grade(trajectory_match, run(A), case).passed is True


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ({"expected_tool_calls": {"name": "a"}}, "must be a list"),
        ({"expected_tool_calls": [{"arguments": {}}]}, r"\[0\] must be an object with a name"),
        ({"expected_tool_calls": [], "match_mode": "fuzzy"}, "'match_mode' must be one of"),
        ({"expected_tool_calls": [], "arg_match": 3}, "'arg_match' must be one of"),
        ({"expected_tool_calls": [], "arg_match_by_tool": ["a"]}, "must be an object of tool"),
        ({"expected_tool_calls": [], "arg_match_by_tool": {"a": "x"}}, r"arg_match_by_tool\.a"),
    ],
)
def test_a_malformed_case_is_an_input_error_naming_the_assertion(
    case: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        grade(trajectory_match, run(A), case)


@pytest.mark.parametrize(
    "factory", [trajectory_match, tool_call_precision, tool_call_recall, tool_call_f1]
)
def test_matching_scorers_abstain_when_the_case_expects_no_calls(factory: Any) -> None:
    score = grade(factory, run(A), {"require_tools_subset": ["geocode"]})
    assert (score.passed, score.value) == (None, None)
    assert score.explanation == "the case sets no expected_tool_calls"


def _calls(names: str) -> list[ToolCall]:
    return [tool(name, {"v": 1}) for name in names]


def _expected(names: str) -> dict[str, Any]:
    return {"expected_tool_calls": [{"name": n, "arguments": {"v": 1}} for n in names]}


def test_precision_recall_and_f1_equal_a_hand_computation() -> None:
    # expected A B B C, made A B D D B B: matched A once and B twice (3 true positives),
    # so precision 3/6, recall 3/4, F1 2*3/(6+4).
    trajectory, case = run(*_calls("ABDDBB")), _expected("ABBC")
    assert grade(tool_call_precision, trajectory, case).value == 0.5
    assert grade(tool_call_recall, trajectory, case).value == 0.75
    assert grade(tool_call_f1, trajectory, case).value == pytest.approx(0.6)


@pytest.mark.parametrize("seed", range(20))
def test_the_counts_are_multiset_counts(seed: int) -> None:
    rng = random.Random(seed)
    made = "".join(rng.choice("ABCD") for _ in range(rng.randint(1, 12)))
    wanted = "".join(rng.choice("ABCE") for _ in range(rng.randint(1, 12)))
    tp = sum((Counter(made) & Counter(wanted)).values())
    trajectory, case = run(*_calls(made)), _expected(wanted)
    precision = grade(tool_call_precision, trajectory, case).value
    recall = grade(tool_call_recall, trajectory, case).value
    f1 = grade(tool_call_f1, trajectory, case).value
    assert precision == pytest.approx(tp / len(made))
    assert recall == pytest.approx(tp / len(wanted))
    harmonic = 2 * precision * recall / (precision + recall) if tp else 0.0  # type: ignore[operator]
    assert f1 == pytest.approx(harmonic)


def test_the_ratios_use_the_argument_mode() -> None:
    trajectory = run(tool("geocode", {"city": "Rome"}), B)
    case: dict[str, Any] = {"expected_tool_calls": EXPECTED, "arg_match": "exact"}
    assert grade(tool_call_recall, trajectory, case).value == 0.5
    case["arg_match"] = "ignore"
    assert grade(tool_call_recall, trajectory, case).value == 1.0


@pytest.mark.parametrize(
    ("factory", "made", "wanted", "explanation"),
    [
        (tool_call_precision, "", "AB", "the agent made no call"),
        (tool_call_recall, "AB", "", "the case expects no call"),
        (tool_call_f1, "", "", "no call made and none expected"),
    ],
)
def test_an_undefined_ratio_abstains_instead_of_a_silent_zero(
    factory: Any, made: str, wanted: str, explanation: str
) -> None:
    score = grade(factory, run(*_calls(made)), _expected(wanted))
    assert (score.passed, score.value, score.explanation) == (None, None, explanation)


def test_f1_of_no_call_against_expected_calls_is_zero() -> None:
    assert grade(tool_call_f1, run(), _expected("AB")).value == 0.0


@pytest.mark.parametrize(
    ("thresholds", "passed", "band"),
    [
        ({}, None, None),  # no line: informational
        ({"min_tool_call_f1": 0.5}, True, "healthy"),
        ({"min_tool_call_f1": 0.7}, False, "danger"),
        ({"min_tool_call_f1": 0.5, "min_tool_call_f1__healthy": 0.8}, True, "review"),
        ({"min_tool_call_f1": 0.6}, True, "healthy"),  # on the line
    ],
)
def test_f1_is_banded_only_by_the_cases_lines(
    thresholds: dict[str, float], passed: bool | None, band: str | None
) -> None:
    score = grade(tool_call_f1, run(*_calls("ABDDBB")), {**_expected("ABBC"), **thresholds})
    assert (score.passed, score.band) == (passed, band)


def test_match_calls_pairs_each_expected_call_once() -> None:
    actual = [ComparedCall.of("a", {"x": 1}) for _ in range(3)]
    expected = [ComparedCall.of("a", {"x": 1.0}) for _ in range(2)]
    found = match_calls(actual, expected, lambda name: "exact")
    assert found.matched == 2
    assert sorted(found.pairs) == [0, 1]
    assert len(set(found.pairs.values())) == 2
    assert len(found.unexpected()) == 1


@pytest.mark.parametrize("arg", ARGS)
@pytest.mark.parametrize(
    "arguments", [None, "text", [1, 2], {"deep": [[[{"a": None}]]]}, {"b": "y" * 100_000}]
)
def test_any_json_arguments_match_themselves_in_every_argument_mode(
    arguments: Any, arg: str
) -> None:
    case = {
        "expected_tool_calls": [{"name": "t", "arguments": arguments}],
        "match_mode": "strict",
        "arg_match": arg,
    }
    score = grade(trajectory_match, run(tool("t", arguments)), case)
    assert score.passed is True
    assert len(score.explanation) < 2_000


def _random_arguments(rng: random.Random) -> dict[str, int]:
    return {key: rng.randint(0, 1) for key in rng.sample(["a", "b", "c"], rng.randint(0, 3))}


def _matches(arg: str, made: dict[str, int], wanted: dict[str, int]) -> bool:
    """The argument modes, written out by hand on plain dicts."""
    if arg == "ignore":
        return True
    if arg == "exact":
        return made == wanted
    small, large = (made, wanted) if arg == "subset" else (wanted, made)
    return small.items() <= large.items()


@pytest.mark.parametrize("arg", ARGS)
@pytest.mark.parametrize("seed", range(15))
def test_the_pairing_is_as_large_as_scipys_maximum_bipartite_matching(seed: int, arg: Any) -> None:
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import maximum_bipartite_matching  # type: ignore[import-untyped]

    rng = random.Random(seed)
    made = [(rng.choice("xy"), _random_arguments(rng)) for _ in range(rng.randint(0, 14))]
    wanted = [(rng.choice("xy"), _random_arguments(rng)) for _ in range(rng.randint(1, 10))]
    edges = [[int(m[0] == w[0] and _matches(arg, m[1], w[1])) for m in made] for w in wanted]
    reference = maximum_bipartite_matching(csr_matrix(edges, shape=(len(wanted), len(made))))
    found = match_calls(
        [ComparedCall.of(*call) for call in made],
        [ComparedCall.of(*call) for call in wanted],
        lambda name: arg,
    )
    assert found.matched == int((reference >= 0).sum())
    assert all(edges[e][a] for e, a in found.pairs.items())
    assert len(set(found.pairs.values())) == found.matched


def test_a_long_list_of_unexpected_calls_is_named_five_at_a_time() -> None:
    calls = run(A, B, *(tool("noise", {"i": i}) for i in range(50)))
    case = {"expected_tool_calls": EXPECTED, "match_mode": "unordered"}
    score = grade(trajectory_match, calls, case)
    assert score.explanation.endswith('noise({"i":4}) (+45 more)')
    assert len(score.evidence) == 5
    assert score.metadata["unexpected"] == 50
