"""Answer assertions: what the delivered answer must, and must not, say.

- ``must_contain``: every string of the case's ``must_contain`` occurs in the answer;
- ``must_not_contain``: none of ``must_not_contain`` does;
- ``answer_regex``: the answer matches the case's ``answer_regex`` (RE2: linear time
  whatever the pattern, :mod:`arbiter.scoring.patterns`);
- ``max_answer_length``: the answer has at most ``max_answer_length`` characters
  (``max_answer_length__healthy`` adds a review band).

Strings are compared case-folded, in Unicode NFC, with runs of whitespace as one
space; a string assertion may also be a single string. A run that delivered no answer
fails ``must_contain`` and ``answer_regex`` and passes the other two (an empty answer
says nothing forbidden and is short). Each abstains when the case sets no assertion
(an empty list is none).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.scoring.patterns import CompiledPattern, compile_pattern, searchable
from arbiter.scoring.reading import quoted
from arbiter.trajectories.bands import HEALTHY_SUFFIX
from arbiter.trajectories.scorers.calls import string_list
from arbiter.trajectories.scorers.common import assertions, banded, trajectory_scorer

__all__ = ["answer_regex", "max_answer_length", "must_contain", "must_not_contain"]

_MAX_QUOTE = 200


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def _strings(example: Example, key: str) -> list[str] | None:
    """A list-of-strings assertion (a single string allowed), None when absent."""
    return string_list(
        assertions(example), key, expected="a list of non-empty strings", non_empty=True
    )


def _answer(output: Output) -> str:
    assert output.trajectory is not None
    return output.trajectory.final_answer or ""


@trajectory_scorer(name="must_contain", dimension="answer_content", moment="deliver")
def must_contain() -> ScoreFunction:
    """Every string of the case's ``must_contain`` occurs in the answer (case-folded).

    The value is the share found.
    """

    def score(example: Example, output: Output) -> Score:
        wanted = _strings(example, "must_contain")
        if not wanted:
            return Score(explanation="the case sets no must_contain")
        answer = _fold(_answer(output))
        missing = [item for item in wanted if _fold(item) not in answer]
        found = len(wanted) - len(missing)
        if missing:
            shown = ", ".join(quoted(item, 60) for item in missing[:5])
            explanation = f"{found} of {len(wanted)} required string(s) found; missing {shown}"
        else:
            explanation = f"all {len(wanted)} required string(s) found"
        return Score(value=found / len(wanted), passed=not missing, explanation=explanation)

    return score


@trajectory_scorer(name="must_not_contain", dimension="answer_content", moment="deliver")
def must_not_contain() -> ScoreFunction:
    """No string of the case's ``must_not_contain`` occurs in the answer (case-folded).

    The value is the number of forbidden strings found.
    """

    def score(example: Example, output: Output) -> Score:
        forbidden = _strings(example, "must_not_contain")
        if not forbidden:
            return Score(explanation="the case sets no must_not_contain")
        raw = _answer(output)
        answer = _fold(raw)
        present = [item for item in forbidden if _fold(item) in answer]
        if not present:
            return Score(
                value=0.0,
                passed=True,
                explanation=f"none of {len(forbidden)} forbidden string(s) found",
            )
        shown = ", ".join(quoted(item, 60) for item in present[:5])
        return Score(
            value=float(len(present)),
            passed=False,
            explanation=f"forbidden string(s) found: {shown}",
            evidence=[
                Evidence(quote=item[:_MAX_QUOTE], verified=None, note="a forbidden string")
                for item in present[:5]
            ],
        )

    return score


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> CompiledPattern:
    try:
        return compile_pattern(pattern)
    except ValueError as exc:
        raise InputError(f"assertion 'answer_regex': {exc}") from None


@trajectory_scorer(name="answer_regex", dimension="answer_format", moment="deliver")
def answer_regex() -> ScoreFunction:
    """The answer matches the case's ``answer_regex`` somewhere (RE2 syntax, linear time)."""

    def score(example: Example, output: Output) -> Score:
        pattern = assertions(example).get("answer_regex")
        if pattern is None:
            return Score(explanation="the case sets no answer_regex")
        if not isinstance(pattern, str) or not pattern:
            raise InputError(
                f"assertion 'answer_regex' must be a non-empty string, got {pattern!r}"
            )
        compiled = _compiled(pattern)
        answer = _answer(output)
        subject = searchable(answer)
        found = compiled.search(subject)
        if found is None:
            return Score(
                value=0.0,
                passed=False,
                explanation=f"no match of {quoted(pattern, 80)} in {quoted(answer)}",
            )
        matched = str(found.group(0))
        note = f"at character {found.start(0)}"
        verified = True if subject is answer else None
        return Score(
            value=1.0,
            passed=True,
            explanation=f"matches {quoted(pattern, 80)}",
            evidence=[Evidence(quote=matched[:_MAX_QUOTE], verified=verified, note=note)],
        )

    return score


@trajectory_scorer(name="max_answer_length", dimension="answer_format", moment="deliver")
def max_answer_length() -> ScoreFunction:
    """The answer has at most ``max_answer_length`` characters (banded; abstains without it)."""

    def score(example: Example, output: Output) -> Score:
        declared = assertions(example)
        key = "max_answer_length"
        if key not in declared and key + HEALTHY_SUFFIX not in declared:
            return Score(explanation="the case sets no max_answer_length")
        length = len(_answer(output))
        result = banded(length, key, example, higher_is_better=False, unit=" chars")
        result.metadata["length"] = length
        return result

    return score
