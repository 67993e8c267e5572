"""How a run ended and what it delivered: completed, answer_present, clean_termination,
output_sanity."""

from __future__ import annotations

import pytest

from arbiter.contract import Trajectory, TrajectoryStatus
from arbiter.scoring.base import ScorerFactory
from arbiter.trajectories.scorers.outcome import (
    answer_present,
    clean_termination,
    completed,
    output_sanity,
)
from tests.trajectories.scorers.runs import grade, llm, run, tool


@pytest.mark.parametrize(
    ("status", "error", "passed"),
    [
        ("completed", None, True),
        ("error", None, False),
        ("cancelled", None, False),
        ("incomplete", None, False),
        ("unknown", None, None),
        ("unknown", "timed out", False),
        ("completed", "late failure", False),
    ],
)
def test_completed_reads_the_status_and_abstains_when_the_source_does_not_say(
    status: TrajectoryStatus, error: str | None, passed: bool | None
) -> None:
    score = grade(completed, run(status=status, error=error))
    assert score.passed is passed
    if passed is None:
        assert score.explanation == "the source does not say how the run ended"


@pytest.mark.parametrize("factory", [completed, answer_present, clean_termination, output_sanity])
def test_every_outcome_scorer_abstains_without_a_trajectory(factory: ScorerFactory) -> None:
    score = grade(factory, None)
    assert (score.passed, score.explanation) == (None, "the output has no trajectory")


@pytest.mark.parametrize(
    ("answer", "passed", "explanation"),
    [
        ("Paris is 18°C.", True, "an answer of 14 characters"),
        ("   \n", False, "the final answer is blank"),
        (None, False, "no final answer"),
    ],
)
def test_answer_present_needs_a_non_blank_answer(
    answer: str | None, passed: bool, explanation: str
) -> None:
    score = grade(answer_present, run(final_answer=answer))
    assert (score.passed, score.value, score.explanation) == (passed, float(passed), explanation)


@pytest.mark.parametrize(
    ("trajectory", "problem"),
    [
        (run(llm(), status="completed", final_answer="done"), None),
        (run(llm(), final_answer="done"), None),  # unknown status, judged on the rest
        (run(llm(), status="error", final_answer="done"), "status error"),
        (run(llm(), status="completed", final_answer=" "), "no terminal answer"),
        (run(status="completed", final_answer="ok", error="boom"), "run error: boom"),
        (
            run(tool("fetch", error="HTTP 500"), status="completed", final_answer="ok"),
            "the last step (tool fetch) failed: HTTP 500",
        ),
        (
            run(llm(error="overloaded"), final_answer="ok"),
            "the last step (model call) failed: overloaded",
        ),
    ],
)
def test_clean_termination_needs_a_terminal_answer_and_no_failure_at_the_end(
    trajectory: Trajectory, problem: str | None
) -> None:
    score = grade(clean_termination, trajectory)
    assert score.passed is (problem is None)
    if problem is not None:
        assert problem in score.explanation


def test_clean_termination_forgives_a_failure_the_run_recovered_from() -> None:
    trajectory = run(tool("fetch", error="HTTP 500"), tool("fetch"), llm(), final_answer="ok")
    assert grade(clean_termination, trajectory).passed is True


@pytest.mark.parametrize(
    ("answer", "problem", "quote"),
    [
        ("Traceback (most recent call last):\n  File 'x'", "a stack trace", None),
        ("The answer is 4.<|im_end|>", "a model's special token", "<|im_end|>"),
        ('<tool_call>{"name": "x"}</tool_call>', "tool-call markup", "<tool_call>"),
        ("Dear {{customer_name}}, thanks", "an unfilled template placeholder", "{{customer_name}}"),
        ("Total: ${amount}", "an unfilled template placeholder", "${amount}"),
        ("bell\x07here", "a control character", "\\x07"),
        ("caf\ufffd", "a replacement character (broken encoding)", "\ufffd"),
        ("undefined", "a placeholder value as the whole answer", "undefined"),
        ("ok\n" * 6, "one line repeated 6 times", "ok"),
    ],
)
def test_output_sanity_names_each_sign_of_broken_output(
    answer: str, problem: str, quote: str | None
) -> None:
    score = grade(output_sanity, run(final_answer=answer))
    assert score.passed is False
    assert score.metadata["problems"] == [problem]
    if quote is not None:
        assert [e.quote for e in score.evidence] == [quote]


@pytest.mark.parametrize(
    "answer",
    [
        "Paris is 18°C and Rome 24°C.\nBoth are sunny.",
        "Use {braces} and $dollars freely; tabs\tand newlines\nare fine.",
        "yes\nyes\nyes\nyes\nno\nno\nno\nno\nmaybe\nmaybe",  # repeats, but no line dominates
    ],
)
def test_output_sanity_passes_ordinary_answers(answer: str) -> None:
    score = grade(output_sanity, run(final_answer=answer))
    assert (score.passed, score.value) == (True, 0.0)


def test_output_sanity_abstains_without_an_answer_and_bounds_its_quotes() -> None:
    assert grade(output_sanity, run()).passed is None
    huge = "x" * 10_000 + "\n"
    score = grade(output_sanity, run(final_answer=huge * 10))
    assert score.passed is False
    assert all(len(e.quote) <= 120 for e in score.evidence)
