"""What a running run keeps of each result for its report, once the store has it whole.

A run's report is computed at its end from every result (:func:`~arbiter.harness.report.
build_report`), so the driver keeps them all; kept whole, a result with its output and
its scores' explanations weighs about 3 KB, which is 3 GB for a million pairs. The report
reads only a result's ids, outcome, error, latency and, of each score, its name, value,
answer, expected value, outcome, band, error and model calls; it asks of the output only
whether there was one. :class:`ReportInputs` keeps just that: the output as one shared
placeholder, and scores that are alike (every ``label`` pass of one answer) as one
shared object, so a kept result weighs about 400 bytes. The store keeps the whole result.
"""

from __future__ import annotations

from typing import Any

from arbiter.contract import Output, PairResult, Score

__all__ = ["ReportInputs"]

MAX_SHARED = 65_536
"""Distinct scores (and lists of them) shared at most; past that each is its own."""

_OUTPUT_PLACEHOLDER = Output.coerce("")
"""Stands for every output: the report asks only whether a pair had one."""

_RESULT_FIELDS = set(PairResult.model_fields)
_SCORE_FIELDS = {"name", "value", "answer", "expected", "passed", "band", "error", "model"}


class ReportInputs:
    """Compacts results to what a report reads of them (see the module's docstring).

    Examples:
        >>> from arbiter.contract import Example
        >>> kept = ReportInputs()
        >>> full = PairResult(example_id="a", repetition=0, output=Output.coerce("yes"),
        ...     scores=[Score(name="label", passed=True, explanation="long text")],
        ...     passed=True, latency_ms=1.0)
        >>> small = kept.compact(full)
        >>> (small.passed, small.scores[0].passed, small.scores[0].explanation)
        (True, True, '')
    """

    def __init__(self) -> None:
        self._scores: dict[tuple[Any, ...], Score] = {}
        self._lists: dict[tuple[int, ...], list[Score]] = {}

    def compact(self, result: PairResult) -> PairResult:
        """``result`` as its report reads it, sharing what is alike with earlier ones."""
        picked = [self._score(score) for score in result.scores]
        scores = [score for score, _ in picked]
        key = tuple(id(score) for score in scores)
        shared = self._lists.get(key)
        if shared is None:
            shared = scores
            # Only a list of shared scores has a key that stays theirs (ids are reused).
            if len(self._lists) < MAX_SHARED and all(kept for _, kept in picked):
                self._lists[key] = scores
        return PairResult.model_construct(
            _RESULT_FIELDS,
            example_id=result.example_id,
            repetition=result.repetition,
            output=None if result.output is None else _OUTPUT_PLACEHOLDER,
            scores=shared,
            passed=result.passed,
            error_type=result.error_type,
            error_message=result.error_message,
            latency_ms=result.latency_ms,
            attempts=result.attempts,
        )

    def _score(self, score: Score) -> tuple[Score, bool]:
        """The compact score, and whether it is the shared one (kept here)."""
        key = _score_key(score)
        found = self._scores.get(key)
        if found is not None:
            return found, True
        kept = Score.model_construct(
            _SCORE_FIELDS,
            name=score.name,
            value=score.value,
            answer=score.answer,
            expected=score.expected,
            passed=score.passed,
            band=score.band,
            error=score.error,
            model=score.model,
        )
        if len(self._scores) >= MAX_SHARED:
            return kept, False
        self._scores[key] = kept
        return kept, True


def _score_key(score: Score) -> tuple[Any, ...]:
    model = None if score.model is None else score.model.model_dump_json()
    return (
        score.name,
        score.value,
        score.answer,
        score.expected,
        score.passed,
        score.band,
        score.error,
        model,
    )
