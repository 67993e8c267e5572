"""The examples of a run worth a look: failed, undecided, or not passed by some scorer.

An example is listed when one of its repetitions is not a clean pass: the call failed,
or a scorer failed, abstained or errored on it (a reported-only scorer's failure
included). The worst come first: examples whose outcome failed, then undecided ones,
then those that passed the gating scorers but not every scorer; within each, the most
failed repetitions first, then dataset order. Texts are clipped here so the list stays
bounded in every format; they are escaped where they are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from arbiter import escape
from arbiter.contract import Evidence, Example, PairResult, Report
from arbiter.harness.pairs import Outcome, PairRow, Verdict, pair_rows, reason_of, verdict_of

__all__ = [
    "ExampleOutcome",
    "FailingExample",
    "FailingRepetition",
    "Failures",
    "ScorerVerdict",
    "find_failures",
]

ExampleOutcome = Literal["failed", "unknown", "passed"]
"""An example's outcome over its repetitions: failed if one failed, passed if all passed."""

_MAX_EVIDENCE = 10
"""Quotes kept per score."""
_SEVERITY: dict[ExampleOutcome, int] = {"failed": 0, "unknown": 1, "passed": 2}


class ScorerVerdict(BaseModel):
    """What one scorer said of one repetition."""

    name: str
    """The scorer's name in the run."""
    verdict: Verdict
    """pass, fail, abstain or error."""
    gating: bool = True
    """Whether the scorer takes part in the outcome."""
    value: float | None = None
    """Its value, when it measures one."""
    answer: str | None = None
    """The category it read, when it reads one."""
    expected: str | None = None
    """The category it expected."""
    reason: str = ""
    """Why, in a line: its error, else its explanation, else ``expected 'x', got 'y'``
    for a category it failed (clipped)."""
    explanation: str = ""
    """Its explanation (clipped)."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Its quotes, verified or not (clipped, at most ten)."""
    error: str | None = None
    """What the scorer raised, when it errored."""


class FailingRepetition(BaseModel):
    """One repetition of a listed example that was not a clean pass."""

    repetition: int
    """0-based repetition index."""
    outcome: Outcome
    """passed, failed, unknown, or error (the call failed)."""
    output: str | None = None
    """What the system answered (text, else label; clipped); None when the call failed."""
    output_chars: int = 0
    """Length of the whole output, to tell a clipped one."""
    error: str | None = None
    """``Type: message`` of the failed call."""
    scores: list[ScorerVerdict] = Field(default_factory=list)
    """Every scorer's verdict on it, in the run's order."""


class FailingExample(BaseModel):
    """An example with at least one repetition that was not a clean pass."""

    example_id: str
    """The example."""
    cohort: str | None = None
    """Its cohort."""
    expected: str | None = None
    """Its reference as text (clipped)."""
    outcome: ExampleOutcome
    """Its outcome over every repetition."""
    repetitions: list[FailingRepetition]
    """The repetitions that were not a clean pass, in order."""
    clean_repetitions: list[int] = Field(default_factory=list)
    """The repetitions every scorer passed."""

    @property
    def failing_scorers(self) -> list[str]:
        """Scorers that failed or errored on a repetition, in the run's order."""
        names: list[str] = []
        for rep in self.repetitions:
            for s in rep.scores:
                if s.verdict in ("fail", "error") and s.name not in names:
                    names.append(s.name)
        return names


class Failures(BaseModel):
    """The examples of a run worth a look, worst first, bounded."""

    run_id: str | None
    """The run."""
    examples_total: int
    """Examples with a result."""
    listed_total: int
    """Examples that qualify for the list."""
    examples: list[FailingExample]
    """The first ``limit`` of them."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def left_out(self) -> int:
        """Qualifying examples beyond the limit."""
        return self.listed_total - len(self.examples)


def find_failures(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    limit: int | None = 20,
    max_chars: int = 1_000,
) -> Failures:
    """The examples worth a look, worst first.

    Args:
        report: The run's report (its scorers say which gate).
        examples: The examples in scope, in dataset order.
        results: The run's pair results.
        limit: Most examples listed; None: all.
        max_chars: Longest output, explanation, quote or error kept, in characters.
    """
    gating = {spec.label: spec.gating for spec in report.scorers}
    by_example: dict[str, list[PairRow]] = {}
    for row in pair_rows(examples, results):
        by_example.setdefault(row.example_id, []).append(row)
    candidates: list[tuple[tuple[int, int, int], FailingExample]] = []
    for position, (example_id, rows) in enumerate(by_example.items()):
        dirty = [row for row in rows if not _clean(row)]
        if not dirty:
            continue
        outcome = _example_outcome(rows)
        listed = FailingExample(
            example_id=example_id,
            cohort=rows[0].cohort,
            expected=_clip(rows[0].expected, max_chars),
            outcome=outcome,
            repetitions=[_repetition(row, gating, max_chars) for row in dirty],
            clean_repetitions=[row.repetition for row in rows if _clean(row)],
        )
        failed_reps = sum(row.outcome in ("failed", "error") for row in rows)
        candidates.append(((_SEVERITY[outcome], -failed_reps, position), listed))
    candidates.sort(key=lambda pair: pair[0])
    chosen = candidates if limit is None else candidates[:limit]
    return Failures(
        run_id=report.run_id,
        examples_total=len(by_example),
        listed_total=len(candidates),
        examples=[listed for _, listed in chosen],
    )


def _clean(row: PairRow) -> bool:
    return row.outcome == "passed" and bool(row.scores) and all(s.passed for s in row.scores)


def _example_outcome(rows: Sequence[PairRow]) -> ExampleOutcome:
    if any(row.outcome in ("failed", "error") for row in rows):
        return "failed"
    return "passed" if all(row.outcome == "passed" for row in rows) else "unknown"


def _clip(text: str | None, limit: int) -> str | None:
    return None if text is None else escape.clip(text, limit)


def _repetition(row: PairRow, gating: dict[str, bool], max_chars: int) -> FailingRepetition:
    output = row.output_text if row.output_text is not None else row.output_label
    return FailingRepetition(
        repetition=row.repetition,
        outcome=row.outcome,
        output=_clip(output, max_chars),
        output_chars=len(output or ""),
        error=_clip(row.error, max_chars),
        scores=[
            ScorerVerdict(
                name=s.name,
                verdict=verdict_of(s),
                gating=gating.get(s.name, True),
                value=s.value,
                answer=_clip(s.answer, max_chars),
                expected=_clip(s.expected, max_chars),
                reason=escape.clip(reason_of(s), max_chars),
                explanation=escape.clip(s.explanation, max_chars),
                evidence=[
                    e.model_copy(
                        update={
                            "quote": escape.clip(e.quote, max_chars),
                            "note": escape.clip(e.note, max_chars),
                        }
                    )
                    for e in s.evidence[:_MAX_EVIDENCE]
                ],
                error=_clip(s.error, max_chars),
            )
            for s in row.scores
        ],
    )
