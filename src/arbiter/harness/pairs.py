"""The per-example table of a run: one row per (example, repetition) pair, with what each
scorer said of it. CSV, HTML and the failure list are views of these rows.

The rows hold untrusted text as it came (outputs, explanations, dataset fields): each
format escapes and bounds it where it lands.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from arbiter.contract import Example, Output, PairResult, Score

__all__ = [
    "Outcome",
    "PairRow",
    "Verdict",
    "expected_text",
    "pair_rows",
    "reason_of",
    "select_rows",
    "shown_outcome",
    "verdict_of",
]

Outcome = Literal["passed", "failed", "unknown", "error"]
"""A pair's outcome: ``error`` when the call failed, ``unknown`` when no gating scorer decided."""

Verdict = Literal["pass", "fail", "abstain", "error"]
"""What one scorer said of one pair: ``error`` when the scorer itself raised."""

_MAX_JSON = 10_000
"""Characters kept of a JSON reference or raw output rendered as text."""


class PairRow(BaseModel):
    """One (example, repetition) pair as the per-example table shows it."""

    example_id: str
    """The example."""
    repetition: int
    """0-based repetition index."""
    cohort: str | None = None
    """The example's cohort."""
    expected: str | None = None
    """What a right answer looks like: the expected label, else the reference as JSON."""
    output_label: str | None = None
    """The label the system answered, if any."""
    output_text: str | None = None
    """The text the system answered, if any."""
    outcome: Outcome
    """The pair's outcome over the run's gating scorers."""
    error: str | None = None
    """``Type: message`` when the call failed."""
    scores: list[Score] = Field(default_factory=list)
    """What each scorer said, in the run's order; empty when the call failed."""

    def score(self, name: str) -> Score | None:
        """The score of the scorer named ``name``, if it scored this pair."""
        return next((s for s in self.scores if s.name == name), None)

    @property
    def answer(self) -> str | None:
        """What the system said, as a reader wants it: the text, else the label."""
        return self.output_text if self.output_text is not None else self.output_label

    @property
    def clean(self) -> bool:
        """Whether every scorer of the run passed this pair (reported-only ones too)."""
        return self.outcome == "passed" and bool(self.scores) and all(s.passed for s in self.scores)


def shown_outcome(outcome: str) -> str:
    """An outcome in a reader's words: ``unknown`` is shown as ``undecided`` (no gating
    scorer decided), the word the report's headline uses; the others as they are."""
    return "undecided" if outcome == "unknown" else outcome


def verdict_of(score: Score) -> Verdict:
    """A score as one word: pass, fail, abstain, or error (the scorer raised)."""
    if score.error is not None:
        return "error"
    if score.passed is None:
        return "abstain"
    return "pass" if score.passed else "fail"


def reason_of(score: Score) -> str:
    """Why a scorer decided as it did, in a line: its error, else its explanation, else for
    a failed category ``expected 'x', got 'y'``; empty when it said nothing."""
    if score.error is not None:
        return score.error
    if score.explanation:
        return score.explanation
    if score.passed is False and score.expected is not None:
        return f"expected {score.expected!r}, got {score.answer!r}"
    return ""


def expected_text(example: Example) -> str | None:
    """The example's reference as text: its label, a string ``expected``, else compact JSON."""
    if example.reference_label is not None:
        return example.reference_label
    if example.expected is None:
        return None
    return _compact(example.expected)


def _output_text(output: Output | None) -> str | None:
    """The text answered; for an output with neither text nor label, its raw JSON."""
    if output is None:
        return None
    if output.text is not None or output.label is not None or output.raw is None:
        return output.text
    return _compact(output.raw)


def _compact(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= _MAX_JSON else text[: _MAX_JSON - 1] + "…"


def _outcome(result: PairResult) -> Outcome:
    if result.output is None:
        return "error"
    if result.passed is None:
        return "unknown"
    return "passed" if result.passed else "failed"


def pair_rows(examples: Sequence[Example], results: Sequence[PairResult]) -> list[PairRow]:
    """Every pair of the run, in dataset order then repetition order.

    Results of examples outside ``examples`` (out of the run's scope) are left out.
    """
    position = {e.id: i for i, e in enumerate(examples)}
    ordered = sorted(
        (r for r in results if r.example_id in position),
        key=lambda r: (position[r.example_id], r.repetition),
    )
    rows = []
    for result in ordered:
        example = examples[position[result.example_id]]
        output = result.output
        error = None
        if output is None:
            error = f"{result.error_type or 'Error'}: {result.error_message or ''}".rstrip(": ")
        rows.append(
            PairRow(
                example_id=result.example_id,
                repetition=result.repetition,
                cohort=example.cohort,
                expected=expected_text(example),
                output_label=output.label if output is not None else None,
                output_text=_output_text(output),
                outcome=_outcome(result),
                error=error,
                scores=result.scores,
            )
        )
    return rows


def select_rows(rows: Sequence[PairRow], only: Sequence[str] | None) -> list[PairRow]:
    """The rows of the examples in ``only``, in that order (each example's repetitions in
    order); None: every row as it is."""
    if only is None:
        return list(rows)
    rank = {example_id: i for i, example_id in enumerate(only)}
    return sorted((r for r in rows if r.example_id in rank), key=lambda r: rank[r.example_id])
