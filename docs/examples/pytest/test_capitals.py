"""Evaluations as tests, for docs/pytest.md: `pytest docs/examples/pytest`.

The quiz and its dataset are those of docs/ci.md; paths in the marker are relative to
this file. QUIZ_VERSION picks the system under test (v1 by default, v2 answers the
largest city instead of six capitals).
"""

import os

import pytest

import arbiter

VERSION = os.environ.get("QUIZ_VERSION", "v1")
QUIZ = f"../ci/quiz_app.py:{VERSION}"


@pytest.mark.arbiter(dataset="../ci/capitals.jsonl", scorers=["normalized"], k=3)
def test_the_quiz_knows_its_capitals(arbiter_eval):
    result = arbiter_eval(QUIZ)
    assert result.pass_rate.low >= 0.8  # the interval's lower end: luck does not pass


@pytest.mark.arbiter(dataset="../ci/capitals.jsonl", scorers=["normalized"])
def test_no_regression_against_main(arbiter_eval):
    arbiter_eval(QUIZ).assert_no_regression(baseline="main")


@pytest.mark.arbiter(dataset="../ci/capitals.jsonl")
def test_each_capital(arbiter_example):
    from quiz_answers import answer

    arbiter.assert_output(
        answer(arbiter_example.input), scorer="normalized", expected=arbiter_example.expected
    )
