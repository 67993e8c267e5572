"""Turn the stored results of a run into a ``Report`` — pure, no I/O."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

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
from arbiter.harness.compact import OUTCOMES, ResultColumns
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
    if isinstance(results, ResultColumns):
        columns = results
        if columns.scorers != labels:
            raise ValueError(f"the results were kept for scorers {columns.scorers}, not {labels}")
    else:
        columns = ResultColumns(examples, labels)
        columns.extend(results)
    if not len(columns):
        raise ValueError("the run has no results to report on")
    # A stable sort, as sorting the results by the same key was.
    order: list[int] = np.lexsort((columns.repetitions, columns.positions)).tolist()
    positions = columns.positions
    passed = [OUTCOMES[columns.passed[row]] for row in order]

    sections = {
        spec.label: _section(spec, columns, index, order, examples, seed)
        for index, spec in enumerate(scorers)
    }
    label_section = sections.get("label")
    label_map = _label_map(label_section.spec) if label_section else None

    by_example: dict[int, dict[int, bool | None]] = {}
    for row, outcome in zip(order, passed, strict=True):
        by_example.setdefault(positions[row], {})[columns.repetitions[row]] = outcome
    # In dataset order already: the rows are ordered by their example's place.
    outcomes = {place: [reps[i] for i in sorted(reps)] for place, reps in by_example.items()}
    del by_example
    decided_pairs = [outcome for outcome in passed if outcome is not None]
    per_example = example_outcomes(outcomes)
    decided = [i for i, outcome in per_example.items() if outcome is not None]
    all_passed = np.array([per_example[i] is True for i in decided], dtype=float)
    mean_passed = np.array([_share(outcomes[i]) for i in decided], dtype=float)

    cohorts: dict[str, CohortMetrics] = {}
    by_cohort: dict[str, list[int]] = {}
    for place, e in enumerate(examples):
        if e.cohort is not None and place in outcomes:
            by_cohort.setdefault(e.cohort, []).append(place)
    for cohort in sorted(by_cohort):
        ids = by_cohort[cohort]
        flat = [c is True for i in ids for c in outcomes[i] if c is not None]
        settled = [per_example[i] for i in ids if per_example[i] is not None]
        cohorts[cohort] = CohortMetrics(
            n=len(ids),
            accuracy=_wilson(sum(flat), len(flat)),
            pass_k=sum(c is True for c in settled) / len(settled) if settled else 0.0,
        )

    errors = Counter(error_type for error_type, _ in columns.errors.values())
    latencies = np.frombuffer(columns.latencies, dtype=np.float64)[order]
    latency = LatencySummary(
        p50_ms=float(np.percentile(latencies, 50)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        mean_ms=float(latencies.mean()),
    )
    n = len(order)
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
        n_examples=len(outcomes),
        seed=seed,
        label_map=label_map,
        scorers=list(scorers),
        sections=sections,
        accuracy=_wilson(sum(decided_pairs), len(decided_pairs)),
        undecided=n - len(decided_pairs),
        strict=label_section.classification if label_section else None,
        mapped=label_section.mapped if label_section else None,
        pass_hat_k=pass_hat_k,
        pass_at_1=pass_at_1,
        undecided_examples=len(outcomes) - len(decided),
        cohorts=cohorts,
        errors_by_type=dict(sorted(errors.items())),
        error_examples=_first_messages(columns, order),
        error_rate=sum(errors.values()) / n,
        latency=latency,
        examples_per_second=throughput,
        model=model,
    )


def _section(
    spec: ScorerSpec,
    columns: ResultColumns,
    index: int,
    order: Sequence[int],
    examples: Sequence[Example],
    seed: int,
) -> ScorerSection:
    """The figures of the run's ``index``-th scorer over the run's pairs (``order``:
    the rows of ``columns`` in report order; failed calls count as failed)."""
    name = spec.label
    column = columns.scores[index]
    scores = [column[row] for row in order]
    places = [columns.positions[row] for row in order]
    expected_of = _expected_categories(spec, places, scores, examples)
    passed = failed = abstained = errored = 0
    bands: Counter[Band] = Counter()
    # Outcomes are folded as they come, not listed per example: containers built per
    # pair live through the report, and the cyclic collector walks them again and again.
    settled: dict[int, bool | None] = {}
    values: dict[int, list[float]] = {}
    y_true: list[str] = []
    y_pred: list[str | None] = []
    answered = columns.answered
    for row, place, score in zip(order, places, scores, strict=True):
        outcome: bool | None
        if score is None:
            outcome = False if not answered[row] else None
            if outcome is None:
                abstained += 1  # a result stored before this scorer existed
        else:
            outcome = score.passed
            if score.error is not None:
                errored += 1
            elif outcome is None:
                abstained += 1
            if score.band is not None:
                bands[score.band] += 1
            if score.value is not None:
                values.setdefault(place, []).append(score.value)
        if outcome is True:
            passed += 1
        elif outcome is False:
            failed += 1
        settled[place] = _combined(settled.get(place, True), outcome)
        expected = score.expected if score is not None else None
        if expected is None:
            expected = expected_of.get(place)
        if expected is not None and (score is None or score.error is None):
            y_true.append(expected)
            y_pred.append(score.answer if score is not None else None)

    classification, mapped = _classifications(spec, y_true, y_pred)

    decided = [outcome for outcome in settled.values() if outcome is not None]
    pass_hat_k = None
    if decided:
        (pass_hat_k,) = _bootstraps([np.array(decided, dtype=float)], seed)
    value = None
    # A mean of values that are all 0 or 1 is the pass rate again: only measures get one.
    if values and any(v not in (0.0, 1.0) for vs in values.values() for v in vs):
        value = _mean_value([v for vs in values.values() for v in vs], values, seed)
    return ScorerSection(
        name=name,
        spec=spec,
        n=len(order),
        passed=passed,
        failed=failed,
        abstained=abstained,
        errored=errored,
        pass_rate=_wilson(passed, passed + failed) if passed + failed else None,
        pass_hat_k=pass_hat_k,
        classification=classification,
        mapped=mapped,
        value=value,
        bands=dict(sorted(bands.items())),
        model=_summed(s.model for s in scores if s is not None),
    )


def _combined(outcome: bool | None, repetition: bool | None) -> bool | None:
    """An example's outcome with one more repetition's, as :func:`example_outcomes`
    settles them: a failure wins, then an unknown; True is the start."""
    if outcome is False or repetition is False:
        return False
    if outcome is None or repetition is None:
        return None
    return True


def _expected_categories(
    spec: ScorerSpec,
    places: Sequence[int],
    scores: Sequence[Score | None],
    examples: Sequence[Example],
) -> dict[int, str]:
    """Per example (by its place), the category its answers are compared with, for
    pairs with no score (``scores`` holds the scorer's score of each pair, ``places``
    each pair's example).

    A failed call has no score, yet it counts against the scorer's classification report
    (a wrong answer, as scikit-learn counts a label outside the matrix): its expected
    category is the one the scorer gave the example's other repetitions, or for
    ``label`` the example's own label.
    """
    found = {
        place: s.expected
        for place, s in zip(places, scores, strict=True)
        if s is not None and s.expected
    }
    if spec.name == "label":
        for place, example in enumerate(examples):
            reference = example.reference_label
            if reference is not None:
                found.setdefault(place, reference)
    return found


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
    fine = [(t, p) for t, p in zip(y_true, y_pred, strict=True) if t not in coarse]
    strict = classification_metrics([t for t, _ in fine], [p for _, p in fine]) if fine else None
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


def _share(reps: Sequence[bool | None]) -> float:
    settled = [r for r in reps if r is not None]
    return sum(settled) / len(settled)


def _wilson(successes: int, n: int) -> Interval:
    low, high = wilson_interval(successes, n)
    return Interval(estimate=successes / n if n else 0.0, low=low, high=high, method="wilson", n=n)


def _mean_value(flat: list[float], values: Mapping[Any, list[float]], seed: int) -> Interval | None:
    """The mean of per-example mean values with its bootstrap interval.

    None when a value is infinite (no mean to speak of). Values are scaled by the
    largest magnitude first so that sums of values near the float maximum cannot
    overflow into an infinite or undefined interval.
    """
    scale = max(abs(v) for v in flat)
    if not math.isfinite(scale):
        return None
    scale = scale if scale > 1.0 else 1.0
    means = np.array([sum(v / scale for v in vs) / len(vs) for vs in values.values()])
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


def _first_messages(columns: ResultColumns, order: Sequence[int]) -> dict[str, str]:
    """The message of each error type's first pair, in report order."""
    first: dict[str, str] = {}
    errors = columns.errors
    if errors:
        for row in order:
            found = errors.get(row)
            if found is not None and found[0] not in first:
                first[found[0]] = found[1]
    return dict(sorted(first.items()))
