"""Turn the stored results of a run into a ``Report`` — pure, no I/O."""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any, TypeVar, cast, overload

import numpy as np

from arbiter.contract import (
    Band,
    ClassificationMetrics,
    CohortMetrics,
    Completeness,
    Example,
    Interval,
    LatencySummary,
    ModelCalls,
    PairResult,
    Report,
    RunStatus,
    Score,
    ScorerSection,
    ScorerSpec,
)
from arbiter.harness.compact import ResultColumns
from arbiter.scoring.metrics import apply_label_map, classification_metrics, map_label
from arbiter.stats import bootstrap_cis, wilson_interval

__all__ = ["build_report", "example_outcomes", "per_example_outcomes"]

K = TypeVar("K")


def per_example_outcomes(
    examples: Sequence[Example], results: Sequence[PairResult]
) -> dict[str, list[bool | None]]:
    """For each example with at least one result, its outcome per repetition, in order."""
    by_example: dict[str, dict[int, bool | None]] = {}
    for r in results:
        by_example.setdefault(r.example_id, {})[r.repetition] = r.passed
    return {
        e.id: [reps[i] for i in sorted(reps)] for e in examples if (reps := by_example.get(e.id))
    }


def example_outcomes(outcomes: Mapping[K, Sequence[bool | None]]) -> dict[K, bool | None]:
    """One outcome per example: False if a repetition failed, True if all passed, else None."""
    summary: dict[K, bool | None] = {}
    for example_id, reps in outcomes.items():
        # Membership compares by equality, exact for bool and None (no other values).
        if False in reps:
            summary[example_id] = False
        elif None in reps:
            summary[example_id] = None
        else:
            summary[example_id] = True
    return summary


def build_report(
    examples: Sequence[Example],
    results: Sequence[PairResult] | ResultColumns,
    *,
    dataset_name: str,
    dataset_hash: str,
    system: str,
    k: int,
    seed: int = 0,
    scorers: Sequence[ScorerSpec] = (),
    run_id: str | None = None,
    elapsed_seconds: float | None = None,
    status: RunStatus = "completed",
    completeness: Completeness | None = None,
) -> Report:
    """Compute every figure of a run from its per-pair results.

    Pairs are ordered by (example order in the dataset, repetition) before anything is
    computed, so the report does not depend on the order results completed in.

    The figures are folded over arrays of the pairs (a few bytes each), never over a
    Python object per pair or per example: at a million pairs those held hundreds of MB.
    ``examples`` is read once, in order (it may decode each example as it is read).

    Args:
        examples: The examples in scope, in dataset order.
        results: One result per completed (example, repetition) pair, or what a running
            run kept of them (:class:`~arbiter.harness.compact.ResultColumns` over these
            examples and the labels of ``scorers``).
        dataset_name: Name to show.
        dataset_hash: Content hash of the dataset.
        system: Short description of the system under test.
        k: Repetitions per example.
        seed: Seed of the bootstrap resampling.
        scorers: The run's scorers, in order (their sections follow it).
        run_id: Id of the stored run, if any.
        elapsed_seconds: Wall time spent running, for throughput.
        status: Where the run is (only a completed run passes a gate).
        completeness: Pairs with a result over pairs expected.

    Raises:
        ValueError: No result is of an example in scope, or ``results`` were kept for
            other scorers.
    """
    labels = [spec.label for spec in scorers]
    places = _Places()
    if isinstance(results, ResultColumns):
        columns = results
        if columns.scorers != labels:
            raise ValueError(f"the results were kept for scorers {columns.scorers}, not {labels}")
        if not len(columns):
            raise ValueError("the run has no results to report on")
        places.scan(examples)
    else:
        # The columns' index of ids is made in the same pass as the places are read.
        recording = _Recording(examples, places)
        columns = ResultColumns(recording, labels)
        if not recording.done:
            places = _Places()
            places.scan(examples)
        columns.extend(results)
        if not len(columns):
            raise ValueError("the run has no results to report on")
    pairs = _Pairs(columns, places)

    sections = {
        spec.label: _section(spec, columns, index, pairs, seed)
        for index, spec in enumerate(scorers)
    }
    label_section = sections.get("label")
    label_map = _label_map(label_section.spec) if label_section else None

    outcome = np.frombuffer(columns.passed, dtype=np.int8)
    examples_of = _ExampleOutcomes(pairs, outcome[pairs.rows])
    decided = examples_of.decided
    all_passed = examples_of.all_passed[decided].astype(float)
    # float64 division of two small integers is Python's int / int, correctly rounded.
    mean_passed = examples_of.trues[decided] / examples_of.settled[decided]
    n_examples = len(examples_of.places)
    n_decided = int(np.count_nonzero(decided))

    errors = Counter(error_type for error_type, _ in columns.errors.values())
    latencies = np.frombuffer(columns.latencies, dtype=np.float64)[pairs.rows]
    latency = LatencySummary(
        p50_ms=float(np.percentile(latencies, 50)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        mean_ms=float(latencies.mean()),
    )
    del latencies
    n = len(pairs.rows)
    true_pairs = int(np.count_nonzero(outcome == 1))
    decided_pairs = int(np.count_nonzero(outcome != -1))
    throughput = n / elapsed_seconds if elapsed_seconds else None
    pass_hat_k, pass_at_1 = _bootstraps([all_passed, mean_passed], seed)
    model = _summed(s.model for s in sections.values())

    return Report(
        run_id=run_id,
        status=status,
        completeness=completeness,
        dataset=dataset_name,
        dataset_hash=dataset_hash,
        system=system,
        k=k,
        n_examples=n_examples,
        seed=seed,
        label_map=label_map,
        scorers=list(scorers),
        sections=sections,
        accuracy=_wilson(true_pairs, decided_pairs),
        undecided=n - decided_pairs,
        strict=label_section.classification if label_section else None,
        mapped=label_section.mapped if label_section else None,
        pass_hat_k=pass_hat_k,
        pass_at_1=pass_at_1,
        undecided_examples=n_examples - n_decided,
        cohorts=_cohorts(examples_of, pairs),
        errors_by_type=dict(sorted(errors.items())),
        error_examples=_first_messages(columns, pairs),
        error_rate=sum(errors.values()) / n,
        latency=latency,
        examples_per_second=throughput,
        model=model,
    )


_Array = np.ndarray[Any, Any]


class _Places:
    """What the report reads of each example in scope, by its place in the dataset order:
    its cohort and its reference label, as codes into lists of the distinct ones (-1:
    none), so a million examples cost 8 MB, not a million Python objects."""

    def __init__(self) -> None:
        self.cohorts = array("i")
        self.cohort_names: list[str] = []
        self.references = array("i")
        self.reference_names: list[str] = []
        self._codes: tuple[dict[str, int], dict[str, int]] = ({}, {})

    def add(self, example: Example) -> None:
        """Read the next example's cohort and reference label."""
        self.cohorts.append(_code(example.cohort, self._codes[0], self.cohort_names))
        reference = example.reference_label
        self.references.append(_code(reference, self._codes[1], self.reference_names))

    def scan(self, examples: Iterable[Example]) -> None:
        """Read every example of ``examples``, in order."""
        for example in examples:
            self.add(example)

    def codes(self, size: int) -> tuple[_Array, _Array]:
        """The cohort and reference codes of places ``0 .. size - 1`` (a place past the
        examples read has none)."""
        cohorts = np.full(max(size, len(self.cohorts)), -1, dtype=np.int32)
        references = cohorts.copy()
        cohorts[: len(self.cohorts)] = np.frombuffer(self.cohorts, dtype=np.intc)
        references[: len(self.references)] = np.frombuffer(self.references, dtype=np.intc)
        return cohorts, references


def _code(text: str | None, codes: dict[str, int], names: list[str]) -> int:
    """``text``'s index in ``names``, added there if new; -1 for None."""
    if text is None:
        return -1
    code = codes.get(text)
    if code is None:
        code = codes[text] = len(names)
        names.append(text)
    return code


class _Recording(Sequence[Example]):
    """``examples``, whose iteration reads each example into ``places`` as it passes
    (:attr:`done` once it went through them all), so building the columns of a list of
    results and reading the places are one pass."""

    def __init__(self, examples: Sequence[Example], places: _Places) -> None:
        self._examples, self._places = examples, places
        self.done = False

    def __len__(self) -> int:
        return len(self._examples)

    @overload
    def __getitem__(self, index: int) -> Example: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Example]: ...
    def __getitem__(self, index: int | slice) -> Example | Sequence[Example]:
        return self._examples[index]

    def __iter__(self) -> Iterator[Example]:
        if self.done or len(self._places.cohorts):
            yield from self._examples  # read already: a second pass records nothing
            return
        add = self._places.add
        for example in self._examples:
            add(example)
            yield example
        self.done = True


class _Pairs:
    """The kept pairs in report order (by example place, then repetition; a stable sort,
    as sorting the results by the same key was), with their examples' places."""

    def __init__(self, columns: ResultColumns, places: _Places) -> None:
        self.positions = np.frombuffer(columns.positions, dtype=np.int64)
        self.repetitions = np.frombuffer(columns.repetitions, dtype=np.int64)
        self.rows: _Array = np.lexsort((self.repetitions, self.positions))
        """The rows of the columns, in report order."""
        self.places: _Array = self.positions[self.rows]
        """Each pair's example's place, in report order (ascending)."""
        self.starts = _starts(self.places)
        """Where each example's pairs start in report order."""
        self.answered: _Array = np.frombuffer(columns.answered, dtype=np.int8)[self.rows] != 0
        size = int(self.places[-1]) + 1
        self.cohorts, self.references = places.codes(size)
        """Per place: its example's cohort and reference label (codes into the names)."""
        self.cohort_names, self.reference_names = places.cohort_names, places.reference_names


def _starts(sorted_keys: _Array) -> _Array:
    """Where each run of equal keys starts in ``sorted_keys`` (not empty)."""
    changes = np.empty(len(sorted_keys), dtype=bool)
    changes[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=changes[1:])
    return np.flatnonzero(changes)


class _ExampleOutcomes:
    """Per example with a result (ascending place), what its repetitions' outcomes
    (``outcome``: codes of :data:`OUTCOMES` in report order) add up to, as
    :func:`per_example_outcomes` and :func:`example_outcomes` give it: one outcome per
    repetition (of a repetition given twice, the later), False if one failed, else None
    if one is unknown, else True."""

    def __init__(self, pairs: _Pairs, outcome: _Array) -> None:
        reps = pairs.repetitions[pairs.rows]
        last = np.ones(len(outcome), dtype=bool)
        last[:-1] = (pairs.places[1:] != pairs.places[:-1]) | (reps[1:] != reps[:-1])
        del reps
        places, outcome = pairs.places[last], outcome[last]
        starts = _starts(places)
        self.places: _Array = places[starts]
        self.trues: _Array = np.add.reduceat((outcome == 1).astype(np.int64), starts)
        falses = np.add.reduceat((outcome == 0).astype(np.int64), starts)
        unknown = np.logical_or.reduceat(outcome == -1, starts)
        self.settled: _Array = self.trues + falses
        """Repetitions with an outcome."""
        self.decided: _Array = (falses > 0) | ~unknown
        self.all_passed: _Array = (falses == 0) & ~unknown


def _cohorts(examples_of: _ExampleOutcomes, pairs: _Pairs) -> dict[str, CohortMetrics]:
    """Per cohort (sorted by name), the figures of its examples with a result."""
    codes = pairs.cohorts[examples_of.places]
    inside = codes >= 0
    codes = codes[inside]
    size = len(pairs.cohort_names)

    def summed(per_example: _Array | None) -> list[int]:
        weights = None if per_example is None else per_example[inside]
        # Float sums of integers below 2**53 are exact.
        return [int(c) for c in np.bincount(codes, weights=weights, minlength=size)]

    n = summed(None)
    trues, settled = summed(examples_of.trues), summed(examples_of.settled)
    decided, passed = summed(examples_of.decided), summed(examples_of.all_passed)
    return {
        name: CohortMetrics(
            n=n[code],
            accuracy=_wilson(trues[code], settled[code]),
            pass_k=passed[code] / decided[code] if decided[code] else 0.0,
        )
        for name, code in sorted((name, code) for code, name in enumerate(pairs.cohort_names))
        if n[code]
    }


class _Scores:
    """A scorer's scores of the kept pairs: per pair (in report order) a code into
    :attr:`distinct`, the distinct score objects (-1: no score), and per distinct score
    the fields the section counts, each with one more entry at the end for "no score" so
    that a code of -1 reads it. Scores are shared objects (a run's ``label`` passes of
    one answer are one), so the section folds a few distinct scores, not a million."""

    def __init__(self, column: Sequence[Score | None], rows: _Array) -> None:
        index: dict[int, int] = {}
        distinct: list[Score] = []
        codes = array("i")
        append = codes.append
        for score in column:
            if score is None:
                append(-1)
                continue
            code = index.get(id(score))
            if code is None:
                code = index[id(score)] = len(distinct)
                distinct.append(score)
            append(code)
        del index
        self.distinct = distinct
        self.codes: _Array = np.frombuffer(codes, dtype=np.intc)[rows]
        self.scored: _Array = self.codes >= 0
        self.passed = self.field(lambda s: _PASSED_CODE[s.passed], np.int8, 0)
        self.errored = self.field(lambda s: s.error is not None, bool, False)

    def field(self, read: Callable[[Score], Any], dtype: Any, missing: Any) -> _Array:
        """``read`` of each distinct score, then ``missing`` (for "no score")."""
        return np.array([*(read(s) for s in self.distinct), missing], dtype=dtype)

    def per_pair(self, read: Callable[[Score], Any], dtype: Any, missing: Any) -> _Array:
        """``read`` of each pair's score (``missing`` where it has none), in report order."""
        return self.field(read, dtype, missing)[self.codes]


_PASSED_CODE = {True: 1, False: 0, None: -1}


def _section(
    spec: ScorerSpec, columns: ResultColumns, index: int, pairs: _Pairs, seed: int
) -> ScorerSection:
    """The figures of the run's ``index``-th scorer over the run's pairs (failed calls
    count as failed)."""
    scores = _Scores(columns.scores[index], pairs.rows)
    scored, errored = scores.scored, scores.errored[scores.codes]
    # No score: failed if the pair has no output, else a result stored before this
    # scorer existed (an abstention).
    outcome = np.where(
        scored, scores.passed[scores.codes], np.where(pairs.answered, np.int8(-1), np.int8(0))
    )
    n_errored = int(np.count_nonzero(errored))
    abstained = int(np.count_nonzero((outcome == -1) & ~errored))
    passed = int(np.count_nonzero(outcome == 1))
    failed = int(np.count_nonzero(outcome == 0))
    uses = np.bincount(scores.codes[scored], minlength=len(scores.distinct))
    bands: Counter[Band] = Counter()
    for score, used in zip(scores.distinct, uses.tolist(), strict=True):
        if score.band is not None:
            bands[score.band] += used

    unknown = np.logical_or.reduceat(outcome == -1, pairs.starts)
    failing = np.logical_or.reduceat(outcome == 0, pairs.starts)
    decided = ~failing[failing | ~unknown]
    pass_hat_k = None
    if len(decided):
        (pass_hat_k,) = _bootstraps([decided.astype(float)], seed)
    del outcome, unknown, failing, decided

    y_true, y_pred = _categories(spec, scores, pairs)
    classification, mapped = _classifications(spec, y_true, y_pred)
    del y_true, y_pred

    value = None
    # A mean of values that are all 0 or 1 is the pass rate again: only measures get one.
    # Every distinct score is some pair's: asking them is asking every pair.
    if any(s.value is not None and s.value not in (0.0, 1.0) for s in scores.distinct):
        valued = scored & scores.per_pair(lambda s: s.value is not None, bool, False)
        flat = [scores.distinct[code].value for code in scores.codes[valued].tolist()]
        value = _mean_value(cast(list[float], flat), _starts(pairs.places[valued]), seed)
    with_model = scored & scores.per_pair(lambda s: s.model is not None, bool, False)
    model = _summed(scores.distinct[code].model for code in scores.codes[with_model].tolist())
    return ScorerSection(
        name=spec.label,
        spec=spec,
        n=len(pairs.rows),
        passed=passed,
        failed=failed,
        abstained=abstained,
        errored=n_errored,
        pass_rate=_wilson(passed, passed + failed) if passed + failed else None,
        pass_hat_k=pass_hat_k,
        classification=classification,
        mapped=mapped,
        value=value,
        bands=dict(sorted(bands.items())),
        model=model,
    )


def _categories(
    spec: ScorerSpec, scores: _Scores, pairs: _Pairs
) -> tuple[list[str], list[str | None]]:
    """The expected and the given category of each pair the scorer's classification
    report counts, in report order.

    A pair's expected category is its score's, else the last one the scorer gave the
    example's other repetitions, or for ``label`` the example's own label. A failed call
    has no score, yet it counts against the classification report (a wrong answer, as
    scikit-learn counts a label outside the matrix); an errored score does not count.
    """
    names = list(pairs.reference_names) if spec.name == "label" else []
    known = {name: code for code, name in enumerate(names)}
    # Per pair: its score's expected category, as a code into names (-1: none).
    given = scores.field(lambda s: _code(s.expected, known, names), np.int32, -1)[scores.codes]
    if spec.name == "label":
        fallback = pairs.references.copy()
    else:
        fallback = np.full(len(pairs.references), -1, dtype=np.int32)
    # The pairs whose (non-empty) expected category stands for their example's others.
    standing = np.flatnonzero(scores.per_pair(lambda s: bool(s.expected), bool, False))
    if len(standing):
        places = pairs.places[standing]
        last = np.ones(len(standing), dtype=bool)
        last[:-1] = places[1:] != places[:-1]
        fallback[places[last]] = given[standing[last]]
        del places, last
    del standing
    category = np.where(given >= 0, given, fallback[pairs.places])
    del given, fallback
    counted = (category >= 0) & ~scores.errored[scores.codes]
    y_true: list[str] = np.array(names, dtype=object)[category[counted]].tolist()
    del category
    answers = scores.field(lambda s: s.answer, object, None)
    y_pred: list[str | None] = answers[scores.codes[counted]].tolist()
    return y_true, y_pred


def _label_map(spec: ScorerSpec) -> dict[str, str] | None:
    mapping = spec.args.get("label_map") if spec.name == "label" else None
    return dict(mapping) if isinstance(mapping, dict) and mapping else None


CATEGORY_MAP_ARGUMENT = "category_map"
"""A scorer argument of this name (a dict of answer to category) gives the scorer's
section a mapped view, as ``label_map`` does for ``label``: the jury's ACCEPT → clean,
REVISE and REJECT → defective makes its mapped view the detection figures."""


def _category_map(spec: ScorerSpec) -> dict[str, str] | None:
    """The map of a scorer's mapped view: ``label``'s label map, else its category map."""
    if spec.name == "label":
        return _label_map(spec)
    mapping = spec.args.get(CATEGORY_MAP_ARGUMENT)
    if not isinstance(mapping, dict) or not mapping:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        return None
    return dict(mapping)


def _classifications(
    spec: ScorerSpec, y_true: list[str], y_pred: list[str | None]
) -> tuple[ClassificationMetrics | None, ClassificationMetrics | None]:
    """The strict classification report and the mapped one (None where there is none).

    With a category map, an expected value that is a category (a value of the map, not
    a key) was only known at that level (a case labelled defective, not with its
    verdict): it counts in the mapped view alone.
    """
    if not y_true:
        return None, None
    mapping = _category_map(spec)
    if not mapping:
        return classification_metrics(y_true, y_pred), None
    coarse = set() if spec.name == "label" else set(mapping.values()) - set(mapping)
    fine_true, fine_pred = y_true, y_pred
    if coarse:  # two lists, not a tuple per pair (64 MB at a million pairs)
        fine_true = [t for t in y_true if t not in coarse]
        fine_pred = [p for t, p in zip(y_true, y_pred, strict=True) if t not in coarse]
    strict = classification_metrics(fine_true, fine_pred) if fine_true else None
    mapped_true = [t if t in coarse else map_label(t, mapping) for t in y_true]
    return strict, classification_metrics(mapped_true, apply_label_map(y_pred, mapping))


def _summed(calls: Iterable[ModelCalls | None]) -> ModelCalls | None:
    """The sum of the model calls given; None when there are none.

    Summed from zero, so that even one entry goes through ``ModelCalls.__add__``: a cost
    is known only when every billed call was priced, and calls answered from the cache
    cost nothing.
    """
    total: ModelCalls | None = None
    for one in calls:
        if one is not None:
            total = (total or ModelCalls()) + one
    return total


def _wilson(successes: int, n: int) -> Interval:
    low, high = wilson_interval(successes, n)
    return Interval(estimate=successes / n if n else 0.0, low=low, high=high, method="wilson", n=n)


def _mean_value(flat: list[float], starts: _Array, seed: int) -> Interval | None:
    """The mean of per-example mean values with its bootstrap interval (``flat``: the
    values in report order, ``starts``: where each example's start there).

    None when a value is infinite (no mean to speak of). Values are scaled by the
    largest magnitude first so that sums of values near the float maximum cannot
    overflow into an infinite or undefined interval.
    """
    scale = max(abs(v) for v in flat)
    if not math.isfinite(scale):
        return None
    scale = scale if scale > 1.0 else 1.0
    bounds = [*starts.tolist(), len(flat)]
    # Python's sum, value after value: the same float as ever, to the last bit.
    means = np.array([sum(v / scale for v in flat[a:b]) / (b - a) for a, b in pairwise(bounds)])
    (interval,) = _bootstraps([means], seed)
    if scale == 1.0:
        return interval
    return interval.model_copy(
        update={
            "estimate": interval.estimate * scale,
            "low": interval.low * scale,
            "high": interval.high * scale,
        }
    )


def _bootstraps(samples: list[np.ndarray[Any, Any]], seed: int) -> list[Interval]:
    """Bootstrap intervals of the means of samples of one length, on shared draws."""
    if not len(samples[0]):
        return [Interval(estimate=0.0, low=0.0, high=1.0, method="bootstrap", n=0) for _ in samples]
    return [
        Interval(
            estimate=float(values.mean()),
            low=float(low),
            high=float(high),
            method="bootstrap",
            n=len(values),
        )
        for values, (low, high) in zip(samples, bootstrap_cis(samples, seed=seed), strict=True)
    ]


def _first_messages(columns: ResultColumns, pairs: _Pairs) -> dict[str, str]:
    """The message of each error type's first pair, in report order."""
    errors = columns.errors
    if not errors:
        return {}
    rows = np.fromiter(errors, dtype=np.int64, count=len(errors))
    # Report order is a stable sort by (place, repetition): the row breaks ties.
    rows = rows[np.lexsort((rows, pairs.repetitions[rows], pairs.positions[rows]))]
    first: dict[str, str] = {}
    for row in rows.tolist():
        error_type, message = errors[row]
        if error_type not in first:
            first[error_type] = message
    return dict(sorted(first.items()))
