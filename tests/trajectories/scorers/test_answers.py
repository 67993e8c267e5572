"""Answer assertions: required and forbidden strings, a pattern, a length."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Trajectory
from arbiter.errors import InputError
from arbiter.scoring.base import ScorerFactory
from arbiter.trajectories.scorers.answers import (
    answer_regex,
    max_answer_length,
    must_contain,
    must_not_contain,
)
from tests.trajectories.scorers.case_runs import score_run


def answered(text: str | None) -> Trajectory:
    return Trajectory(final_answer=text)


@pytest.mark.parametrize(
    ("wanted", "value", "passed"),
    [
        (["paris", "EIFFEL  tower"], 1.0, True),  # case and runs of spaces folded
        ("Paris", 1.0, True),  # a single string
        (["paris", "london"], 0.5, False),
        (["Ｐａｒｉｓ"], 0.0, False),  # NFC does not fold full-width letters
    ],
)
def test_must_contain_needs_every_string_case_folded(
    wanted: Any, value: float, passed: bool
) -> None:
    score = score_run(
        must_contain, answered("The Eiffel\nTower is in PARIS."), {"must_contain": wanted}
    )
    assert (score.value, score.passed) == (value, passed)


def test_must_contain_fails_a_run_without_an_answer() -> None:
    score = score_run(must_contain, answered(None), {"must_contain": ["x"]})
    assert score.passed is False


@pytest.mark.parametrize(
    ("forbidden", "value", "passed"),
    [(["password"], 0.0, True), (["SECRET", "token", "key"], 2.0, False)],
)
def test_must_not_contain_fails_on_any_forbidden_string(
    forbidden: list[str], value: float, passed: bool
) -> None:
    score = score_run(
        must_not_contain, answered("The secret key is 42."), {"must_not_contain": forbidden}
    )
    assert (score.value, score.passed) == (value, passed)


@pytest.mark.parametrize(
    ("pattern", "passed"),
    [(r"^\d{3}-\d{4}$", False), (r"\d{3}-\d{4}", True), (r"(?i)call us", True)],
)
def test_answer_regex_searches_the_answer(pattern: str, passed: bool) -> None:
    score = score_run(answer_regex, answered("Call us at 555-1234."), {"answer_regex": pattern})
    assert score.passed is passed
    if passed:
        assert score.evidence[0].quote in "Call us at 555-1234."


def test_answer_regex_runs_a_catastrophic_pattern_in_linear_time() -> None:
    # (a+)+$ backtracks exponentially in Python's re; RE2 answers at once.
    score = score_run(answer_regex, answered("a" * 100_000 + "!"), {"answer_regex": "(a+)+$"})
    assert score.passed is False


@pytest.mark.parametrize(
    ("assertions", "message"),
    [
        ({"answer_regex": "(?<=x)y"}, "not RE2 syntax"),
        ({"answer_regex": 3}, "must be a non-empty string"),
    ],
)
def test_a_bad_answer_regex_is_an_input_error(assertions: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        score_run(answer_regex, answered("x"), assertions)


@pytest.mark.parametrize(
    ("assertions", "band"),
    [
        ({"max_answer_length": 20}, "healthy"),
        ({"max_answer_length": 5}, "danger"),
        ({"max_answer_length": 20, "max_answer_length__healthy": 8}, "review"),
    ],
)
def test_max_answer_length_bands_the_length_in_characters(
    assertions: dict[str, Any], band: str
) -> None:
    score = score_run(max_answer_length, answered("ten chars!"), assertions)
    assert (score.value, score.band, score.passed) == (10, band, band != "danger")


@pytest.mark.parametrize(
    "factory", [must_contain, must_not_contain, answer_regex, max_answer_length]
)
def test_each_answer_scorer_abstains_without_its_assertion(factory: ScorerFactory) -> None:
    score = score_run(factory, answered("anything"), {"must": "x"})
    assert (score.passed, score.band) == (None, None)
    assert "sets no" in score.explanation


@pytest.mark.parametrize(
    "assertions", [{"must_contain": [""]}, {"must_contain": [1]}, {"must_contain": {"a": 1}}]
)
def test_a_string_assertion_that_is_not_strings_is_an_input_error(
    assertions: dict[str, Any],
) -> None:
    with pytest.raises(InputError, match="'must_contain' must be a list of non-empty strings"):
        score_run(must_contain, answered("x"), assertions)


@pytest.mark.parametrize(
    ("factory", "key"), [(must_contain, "must_contain"), (must_not_contain, "must_not_contain")]
)
def test_an_empty_string_list_asserts_nothing(factory: ScorerFactory, key: str) -> None:
    assert score_run(factory, answered("anything"), {key: []}).passed is None
