"""What a running run keeps of each result for its report, once the store has it whole.

A run's report is computed at its end from every result (:func:`~arbiter.harness.report.
build_report`); kept whole, a result with its output and its scores' explanations weighs
about 3 KB, which is 3 GB for a million pairs, and even a compact copy of each (a
PairResult of shared parts) is about 400 bytes. The report reads only a result's
example, repetition, outcome, error, latency, whether it had an output and, of each of
the run's scorers, the score's name, value, answer, expected value, outcome, band, error
and model calls. :class:`ResultColumns` keeps just that, one column per field: numbers in
typed arrays (a few bytes a pair), an error's type and message only where there was one,
and per scorer a reference to a shared compact score (every ``label`` pass of one answer
is one object), so a pair weighs about 40 bytes with one scorer. The store keeps the
whole result.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from arbiter.contract import Example, PairResult, Score

__all__ = ["ResultColumns", "RunPairs", "score_of"]

MAX_SHARED = 65_536
"""Distinct scores shared at most; past that each is its own."""

_SCORE_FIELDS = {"name", "value", "answer", "expected", "passed", "band", "error", "model"}

_PASSED = {True: 1, False: 0, None: -1}
OUTCOMES: tuple[bool | None, ...] = (False, True, None)
"""An outcome by its stored code (``OUTCOMES[code]``: 1 True, 0 False, -1 None)."""


def score_of(result: PairResult, name: str, index: int) -> Score | None:
    """``result.score(name)``, looked for first at ``index``: a pair's scores follow the
    run's scorers, so the ``index``-th scorer's is there unless the pair was stored by
    a run with other scorers."""
    scores = result.scores
    if index < len(scores) and scores[index].name == name:
        return scores[index]
    return result.score(name)


class ResultColumns:
    """The results of a run as its report reads them, one column per field.

    Results are added in any order (as they arrive); a result of an example outside
    ``examples`` is counted (:attr:`added`) but not kept, as the report leaves it out.

    Args:
        examples: The examples in scope, in dataset order (only their ids are kept).
        scorers: The labels of the run's scorers, in order.

    Examples:
        >>> from arbiter.contract import Output
        >>> columns = ResultColumns([Example(id="a", input={})], ["label"])
        >>> columns.add(PairResult(example_id="a", repetition=0, output=Output.coerce("yes"),
        ...     scores=[Score(name="label", passed=True, explanation="long text")],
        ...     passed=True, latency_ms=1.0))
        >>> (len(columns), columns.scores[0][0].passed, columns.scores[0][0].explanation)
        (1, True, '')
    """

    def __init__(self, examples: Sequence[Example], scorers: Sequence[str]) -> None:
        self.position = {example.id: index for index, example in enumerate(examples)}
        """Each example's place in the dataset order, by id."""
        self.scorers = list(scorers)
        self.positions = array("q")
        """Per kept pair: its example's place."""
        self.repetitions = array("q")
        self.passed = array("b")
        """Per kept pair: its outcome's code (see :data:`OUTCOMES`)."""
        self.answered = array("b")
        """Per kept pair: 1 when it had an output."""
        self.latencies = array("d")
        self.errors: dict[int, tuple[str, str]] = {}
        """The type and message of each kept pair with an error, by its row."""
        self.scores: list[list[Score | None]] = [[] for _ in self.scorers]
        """Per scorer, per kept pair: its compact score (None: none)."""
        self.added = 0
        """Results added, kept or not."""
        self._shared: dict[tuple[Any, ...], Score] = {}

    def __len__(self) -> int:
        """Pairs kept."""
        return len(self.positions)

    def extend(self, results: Iterable[PairResult]) -> None:
        """:meth:`add` each of ``results``."""
        for result in results:
            self.add(result)

    def add(self, result: PairResult) -> None:
        """Keep what the report reads of ``result``."""
        self.added += 1
        position = self.position.get(result.example_id)
        if position is None:
            return
        row = len(self.positions)
        self.positions.append(position)
        self.repetitions.append(result.repetition)
        self.passed.append(_PASSED[result.passed])
        self.answered.append(0 if result.output is None else 1)
        self.latencies.append(result.latency_ms)
        if result.error_type:
            self.errors[row] = (
                sys.intern(result.error_type),
                result.error_message or "",
            )
        for index, name in enumerate(self.scorers):
            score = score_of(result, name, index)
            self.scores[index].append(None if score is None else self._compact(score))

    def _compact(self, score: Score) -> Score:
        """``score`` as the report reads it, shared with earlier alike ones."""
        model = None if score.model is None else score.model.model_dump_json()
        key = (
            score.name,
            score.value,
            score.answer,
            score.expected,
            score.passed,
            score.band,
            score.error,
            model,
        )
        found = self._shared.get(key)
        if found is not None:
            return found
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
        if len(self._shared) < MAX_SHARED:
            self._shared[key] = kept
        return kept


class RunPairs(Sequence[tuple[Example, int]]):
    """Every (example, repetition) pair of a run, made as they are read: a list of a
    million runs' pairs would hold a million tuples for the whole run."""

    def __init__(self, examples: Sequence[Example], k: int) -> None:
        self.examples, self.k = examples, k

    def __len__(self) -> int:
        return len(self.examples) * self.k

    def __iter__(self) -> Iterator[tuple[Example, int]]:
        for example in self.examples:
            for repetition in range(self.k):
                yield example, repetition

    @overload
    def __getitem__(self, index: int) -> tuple[Example, int]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Example, int]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Example, int] | list[tuple[Example, int]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.examples[index // self.k], index % self.k
