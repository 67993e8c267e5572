"""The examples of a run worth a look: failed, undecided, or not passed by some scorer.

An example is listed when one of its repetitions is not a clean pass: the call failed,
or a scorer failed, abstained or errored on it (a reported-only scorer's failure
included). An abstention is listed as an abstention, never as a failure.

The worst come first:

1. by outcome: examples with a failed repetition, then undecided ones (no gating scorer
   decided), then those that passed the gating scorers but not every scorer;
2. then by the share of repetitions that failed, highest first;
3. then by the failures of gating scorers summed over repetitions (a failed call counts
   as a failure of every gating scorer), then by the other verdicts that are not a pass
   (abstentions, scorer errors, failures of reported-only scorers);
4. then in dataset order.

Texts are clipped here so the list stays bounded in every format; they are escaped
where they are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from arbiter import escape
from arbiter.contract import Evidence, Example, PairResult, Report
from arbiter.harness.pairs import Outcome, PairRow, Verdict, pair_rows, verdict_of

__all__ = [
    "ExampleOutcome",
    "FailingExample",
    "FailingRepetition",
    "Failures",
    "ScorerVerdict",
    "find_failures",
]

ExampleOutcome = Literal["failed", "unknown", "passed"]
"""An example's outcome over its repetitions: failed if one failed, passed if all passed,
else unknown (undecided: no gating scorer decided a repetition, and none failed)."""

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
    explanation: str = ""
    """Its explanation (clipped)."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Its quotes, verified or not (each clipped, at most ten)."""
    evidence_total: int = 0
    """How many quotes it gave, kept or not."""
    error: str | None = None
    """What the scorer raised, when it errored (clipped)."""

    @property
    def reason(self) -> str:
        """Why, in a line: its error, else its explanation, else ``expected 'x', got 'y'``
        for a category it failed (as :func:`arbiter.harness.pairs.reason_of`)."""
        if self.error is not None:
            return self.error
        if self.explanation:
            return self.explanation
        if self.verdict == "fail" and self.expected is not None:
            return f"expected {self.expected!r}, got {self.answer!r}"
        return ""


class FailingRepetition(BaseModel):
    """One repetition of a listed example that was not a clean pass."""

    repetition: int
    """0-based repetition index."""
    outcome: Outcome
    """passed, failed, unknown, or error (the call failed)."""
    output: str | None = None
    """What the system answered (text, else label; clipped); None when the call failed."""
    output_chars: int = 0
    """Length of the whole output in characters, to tell a clipped one."""
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
    gating_count = sum(gating.values())
    candidates: list[tuple[_Rank, list[PairRow]]] = []
    for position, rows in enumerate(by_example.values()):
        if not all(row.clean for row in rows):
            candidates.append((_rank(rows, position, gating, gating_count), rows))
    candidates.sort(key=lambda pair: pair[0])
    chosen = candidates if limit is None else candidates[:limit]
    return Failures(
        run_id=report.run_id,
        examples_total=len(by_example),
        listed_total=len(candidates),
        examples=[_listed(rows, gating, max_chars) for _, rows in chosen],
    )


_Rank = tuple[int, Fraction, int, int, int]
"""Sort key of a listed example: smaller is worse."""


def _rank(rows: Sequence[PairRow], position: int, gating: dict[str, bool], n_gating: int) -> _Rank:
    failed_reps = sum(row.outcome in ("failed", "error") for row in rows)
    failures = others = 0
    for row in rows:
        if row.outcome == "error":
            failures += n_gating or 1
        for s in row.scores:
            if s.passed is False and gating.get(s.name, True):
                failures += 1
            elif not s.passed:
                others += 1
    outcome = _example_outcome(rows)
    return (_SEVERITY[outcome], -Fraction(failed_reps, len(rows)), -failures, -others, position)


def _listed(rows: Sequence[PairRow], gating: dict[str, bool], max_chars: int) -> FailingExample:
    first = rows[0]
    return FailingExample(
        example_id=first.example_id,
        cohort=first.cohort,
        expected=_clip(first.expected, max_chars),
        outcome=_example_outcome(rows),
        repetitions=[_repetition(row, gating, max_chars) for row in rows if not row.clean],
        clean_repetitions=[row.repetition for row in rows if row.clean],
    )


def _example_outcome(rows: Sequence[PairRow]) -> ExampleOutcome:
    if any(row.outcome in ("failed", "error") for row in rows):
        return "failed"
    return "passed" if all(row.outcome == "passed" for row in rows) else "unknown"


def _clip(text: str | None, limit: int) -> str | None:
    return None if text is None else escape.clip(text, limit)


def _repetition(row: PairRow, gating: dict[str, bool], max_chars: int) -> FailingRepetition:
    output = row.answer
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
                evidence_total=len(s.evidence),
                error=_clip(s.error, max_chars),
            )
            for s in row.scores
        ],
    )
