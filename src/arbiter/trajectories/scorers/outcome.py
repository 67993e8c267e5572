"""How a run ended and what it delivered: completed, answer_present, clean_termination,
output_sanity.

These apply to every profile class (not to flows, which have their own
``flow_complete``). They need no assertion: every run either ended or did not.
"""

from __future__ import annotations

import re
from collections import Counter

from arbiter.contract import Evidence, Example, LlmCall, Output, Score, ToolCall, Trajectory
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.calls import clip, listed
from arbiter.trajectories.scorers.common import trajectory_scorer

__all__ = ["answer_present", "clean_termination", "completed", "output_sanity"]

_QUOTE = 120
"""Characters of the answer quoted as evidence of one problem."""


def _trajectory(output: Output) -> Trajectory:
    assert output.trajectory is not None  # trajectory_scorer abstains without one
    return output.trajectory


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}


def _quoted(text: str) -> str:
    """A bounded quote of the answer, its control characters written as escapes."""
    return clip(text[: _QUOTE * 2].translate(_CONTROLS), _QUOTE)


@trajectory_scorer(name="completed", dimension="completed", moment="run")
def completed() -> ScoreFunction:
    """The run reports that it completed.

    Reads the trajectory's ``status``: ``completed`` passes; ``error``, ``cancelled``
    and ``incomplete`` fail; ``unknown`` (the source does not say) abstains, unless
    the run recorded an error, which fails it.
    """

    def score(example: Example, output: Output) -> Score:
        trajectory = _trajectory(output)
        status = trajectory.status
        if status == "unknown" and trajectory.error is None:
            return Score(explanation="the source does not say how the run ended")
        passed = status == "completed" and trajectory.error is None
        explanation = f"status {status}"
        if trajectory.error is not None:
            explanation += f"; error: {clip(trajectory.error, _QUOTE)}"
        return Score(value=float(passed), passed=passed, explanation=explanation)

    return score


@trajectory_scorer(name="answer_present", dimension="answer_present", moment="deliver")
def answer_present() -> ScoreFunction:
    """The run delivered a final answer that is not blank."""

    def score(example: Example, output: Output) -> Score:
        answer = _trajectory(output).final_answer
        passed = answer is not None and answer.strip() != ""
        explanation = (
            f"an answer of {len(answer or '')} characters"
            if passed
            else ("no final answer" if answer is None else "the final answer is blank")
        )
        return Score(value=float(passed), passed=passed, explanation=explanation)

    return score


@trajectory_scorer(name="clean_termination", dimension="clean_termination", moment="run")
def clean_termination() -> ScoreFunction:
    """The run ended on a terminal answer, not on an error or a dangling step.

    Fails when the run's status is ``error``, ``cancelled`` or ``incomplete``, the run
    recorded an error, it delivered no (or a blank) answer, or its last step failed
    (a tool or model call with an error). A run whose status is ``unknown`` is judged
    on the rest: a terminal answer with nothing failed at the end is a clean end.
    """

    def score(example: Example, output: Output) -> Score:
        trajectory = _trajectory(output)
        problems: list[str] = []
        if trajectory.status not in ("completed", "unknown"):
            problems.append(f"status {trajectory.status}")
        if trajectory.error is not None:
            problems.append(f"run error: {clip(trajectory.error, _QUOTE)}")
        if trajectory.final_answer is None or not trajectory.final_answer.strip():
            problems.append("no terminal answer")
        last = trajectory.steps[-1] if trajectory.steps else None
        if isinstance(last, ToolCall | LlmCall) and last.error is not None:
            what = f"tool {clip(last.name, 60)}" if isinstance(last, ToolCall) else "model call"
            problems.append(f"the last step ({what}) failed: {clip(last.error, _QUOTE)}")
        passed = not problems
        explanation = "ended on a terminal answer" if passed else "; ".join(problems)
        return Score(value=float(passed), passed=passed, explanation=explanation)

    return score


# Each pattern is a plain alternation or a bounded class run, so a search is linear in
# the answer's length (no nested quantifiers to backtrack over).
_SIGNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a stack trace", re.compile(r"Traceback \(most recent call last\)")),
    ("a model's special token", re.compile(r"<\|[A-Za-z_]{1,40}\|>")),
    ("tool-call markup", re.compile(r"</?tool_call>|</?function_call>|<function=")),
    ("an unfilled template placeholder", re.compile(r"\{\{[^{}\n]{0,80}\}\}|\$\{[^{}\n]{0,80}\}")),
    ("a control character", re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")),
    ("a replacement character (broken encoding)", re.compile("\ufffd")),
)
_PLACEHOLDER_ANSWERS = frozenset({"none", "null", "undefined", "nan", "n/a", "[object object]"})
_REPEATS = 5
"""A line this many times or more, making up half the answer's lines, is a degenerate loop."""


def _repeated_line(answer: str) -> tuple[str, int] | None:
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    if len(lines) < _REPEATS:
        return None
    line, count = Counter(lines).most_common(1)[0]
    return (line, count) if count >= _REPEATS and 2 * count >= len(lines) else None


@trajectory_scorer(name="output_sanity", dimension="output_sanity", moment="deliver")
def output_sanity() -> ScoreFunction:
    """The final answer shows no sign of broken output.

    Looks for a stack trace, a model's special token (``<|im_end|>``), tool-call
    markup, an unfilled template placeholder (``{{name}}``), a control or replacement
    character, an answer that is only a placeholder value (``None``, ``undefined``)
    and one line repeated over half the answer (a generation loop). Abstains when
    there is no answer (``answer_present`` grades that).
    """

    def score(example: Example, output: Output) -> Score:
        answer = _trajectory(output).final_answer
        if answer is None or not answer.strip():
            return Score(explanation="no final answer to check")
        found: list[str] = []
        evidence: list[Evidence] = []
        for what, pattern in _SIGNS:
            match = pattern.search(answer)
            if match is not None:
                found.append(what)
                evidence.append(Evidence(quote=_quoted(match.group(0)), note=what))
        if answer.strip().casefold() in _PLACEHOLDER_ANSWERS:
            found.append("a placeholder value as the whole answer")
            evidence.append(Evidence(quote=_quoted(answer.strip()), note=found[-1]))
        repeated = _repeated_line(answer)
        if repeated is not None:
            line, count = repeated
            found.append(f"one line repeated {count} times")
            evidence.append(Evidence(quote=_quoted(line), note=found[-1]))
        passed = not found
        return Score(
            value=float(len(found)),
            passed=passed,
            explanation="no sign of broken output" if passed else "found " + listed(found),
            evidence=evidence,
            metadata={"problems": found},
        )

    return score
