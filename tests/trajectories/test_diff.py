"""Trajectory diff: the LCS alignment of tool calls, the rows between, flipped verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contract import Score, ToolCall
from arbiter.trajectories import diff as diff_module
from arbiter.trajectories.diff import align, call_key, diff_calls, flipped_verdicts


def _lcs_length(a: str, b: str) -> int:
    """The textbook quadratic table, as the reference."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def _call(name: str, error: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, error=error)


@given(st.text(alphabet="abc", max_size=30), st.text(alphabet="abc", max_size=30))
def test_alignment_is_a_longest_common_subsequence(a: str, b: str) -> None:
    pairs = align(a, b)
    assert len(pairs) == _lcs_length(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert [i for i, _ in pairs] == sorted({i for i, _ in pairs})
    assert [j for _, j in pairs] == sorted({j for _, j in pairs})


def test_alignment_of_long_sequences_needs_no_deep_recursion() -> None:
    a = ["x", "y"] * 1_500
    b = ["y", "x"] * 1_500
    assert len(align(a, b)) == 2_999


def test_call_key_ignores_key_order_of_arguments() -> None:
    assert call_key(_call("get", a=1, b=2)) == call_key(
        ToolCall(name="get", arguments={"b": 2, "a": 1})
    )


def test_rows_pair_changed_arguments_and_show_inserted_and_removed_calls() -> None:
    a = [_call("get_order", id="1"), _call("refund", amount=25), _call("notify")]
    b = [_call("get_order", id="1"), _call("lookup_policy"), _call("refund", amount=30)]
    rows = diff_calls(a, b).rows
    shown = [(r.kind, r.a.name if r.a else None, r.b.name if r.b else None) for r in rows]
    assert shown == [
        ("same", "get_order", "get_order"),
        ("added", None, "lookup_policy"),
        ("changed", "refund", "refund"),
        ("removed", "notify", None),
    ]


@pytest.mark.parametrize(
    ("a", "b", "kinds"),
    [
        (["get", "put"], ["get", "put"], ["same", "same"]),
        (["get"], ["get", "put"], ["same", "added"]),
        (["get", "put"], ["put"], ["removed", "same"]),
        ([], ["get"], ["added"]),
        (["get"], ["put"], ["replaced"]),
    ],
)
def test_rows_by_tool_names(a: list[str], b: list[str], kinds: list[str]) -> None:
    rows = diff_calls([_call(n) for n in a], [_call(n) for n in b]).rows
    assert [row.kind for row in rows] == kinds


def test_same_tool_with_other_arguments_is_changed_side_by_side() -> None:
    (row,) = diff_calls([_call("refund", amount=25)], [_call("refund", amount=30)]).rows
    assert row.kind == "changed"
    assert row.a is not None
    assert row.a.arguments == '{"amount": 25}'
    assert row.b is not None
    assert row.b.arguments == '{"amount": 30}'


def test_a_failed_call_keeps_its_error_in_the_row() -> None:
    (row,) = diff_calls([_call("put", error="422")], []).rows
    assert row.kind == "removed"
    assert row.a is not None
    assert row.a.error == "422"


def test_calls_past_the_bound_are_paired_by_position(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diff_module, "MAX_ALIGNED_CALLS", 2)
    a = [_call(n) for n in ("a", "b", "c", "d")]
    b = [_call(n) for n in ("a", "b", "x", "d")]
    result = diff_calls(a, b)
    assert result.positional_from == 2
    assert [row.kind for row in result.rows] == ["same", "same", "replaced", "same"]


def test_huge_arguments_are_clipped_in_the_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diff_module, "MAX_SHOWN_ARGUMENTS", 10)
    (row,) = diff_calls([_call("put", text="x" * 100)], []).rows
    assert row.a is not None
    assert len(row.a.arguments) == 10
    assert row.a.arguments.endswith("…")


def test_flips_name_broken_fixed_and_band_changes() -> None:
    a = [
        Score(name="completed", passed=True),
        Score(name="cost", passed=True, band="healthy"),
        Score(name="required_tools", passed=False),
        Score(name="answer_regex"),
    ]
    b = [
        Score(name="completed", passed=False),
        Score(name="cost", passed=True, band="review"),
        Score(name="required_tools", passed=True),
        Score(name="answer_regex"),
    ]
    flips = {flip.name: flip.direction for flip in flipped_verdicts(a, b)}
    assert flips == {"completed": "broken", "cost": "changed", "required_tools": "fixed"}


def test_a_scorer_on_one_side_only_is_compared_with_an_abstention() -> None:
    (flip,) = flipped_verdicts([], [Score(name="reward", passed=False)])
    assert (flip.a_passed, flip.b_passed) == (None, False)
