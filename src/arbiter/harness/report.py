"""Turn the stored results of a run into a ``Report`` — pure, no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from arbiter.contract import (
    ClassificationMetrics,
    CohortMetrics,
    Completeness,
    Example,
    Interval,
    LatencySummary,
    PairResult,
    Report,
    RunStatus,
)
from arbiter.harness.metrics import apply_label_map, classification_metrics, map_label
from arbiter.stats import bootstrap_cis, wilson_interval

__all__ = ["build_report", "is_correct", "per_example_correct"]


def is_correct(expected: str, label: str | None, label_map: Mapping[str, str] | None) -> bool:
    """Whether a predicted label counts as right, after the label map if one is given."""
    if label is None:
        return False
    if label_map:
        return map_label(label, label_map) == map_label(expected, label_map)
    return label == expected


def per_example_correct(
    examples: Sequence[Example], results: Sequence[PairResult]
) -> dict[str, list[bool]]:
    """For each example with at least one result, its correctness per repetition, in order."""
    by_example: dict[str, dict[int, bool]] = {}
    for r in results:
        by_example.setdefault(r.example_id, {})[r.repetition] = r.correct
    return {
        e.id: [reps[i] for i in sorted(reps)] for e in examples if (reps := by_example.get(e.id))
    }


def build_report(
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    dataset_name: str,
    dataset_hash: str,
    system: str,
    k: int,
    seed: int = 0,
    label_map: Mapping[str, str] | None = None,
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
        results: One result per completed (example, repetition) pair.
        dataset_name: Name to show.
        dataset_hash: Content hash of the dataset.
        system: Short description of the system under test.
        k: Repetitions per example.
        seed: Seed of the bootstrap resampling.
        label_map: Mapping for the mapped figures, applied to both sides.
        run_id: Id of the stored run, if any.
        elapsed_seconds: Wall time spent running, for throughput.
        status: Where the run is (only a completed run passes a gate).
        completeness: Pairs with a result over pairs expected.
    """
    position = {e.id: i for i, e in enumerate(examples)}
    expected = {e.id: e.expected_label for e in examples}
    ordered = sorted(
        (r for r in results if r.example_id in position),
        key=lambda r: (position[r.example_id], r.repetition),
    )
    if not ordered:
        raise ValueError("the run has no results to report on")
    y_true = [expected[r.example_id] for r in ordered]
    y_pred = [r.label for r in ordered]

    strict = classification_metrics(y_true, y_pred)
    mapped: ClassificationMetrics | None = None
    if label_map:
        mapped = classification_metrics(
            apply_label_map(y_true, label_map),  # type: ignore[arg-type]
            apply_label_map(y_pred, label_map),
        )

    correct = per_example_correct(examples, ordered)
    all_correct = np.array([all(v) for v in correct.values()], dtype=float)
    mean_correct = np.array([sum(v) / len(v) for v in correct.values()], dtype=float)

    cohorts: dict[str, CohortMetrics] = {}
    by_cohort: dict[str, list[str]] = {}
    for e in examples:
        if e.cohort is not None and e.id in correct:
            by_cohort.setdefault(e.cohort, []).append(e.id)
    for cohort in sorted(by_cohort):
        ids = by_cohort[cohort]
        flat = [c for i in ids for c in correct[i]]
        cohorts[cohort] = CohortMetrics(
            n=len(ids),
            accuracy=_wilson(sum(flat), len(flat)),
            pass_k=sum(all(correct[i]) for i in ids) / len(ids),
        )

    errors = Counter(r.error_type for r in ordered if r.error_type)
    latencies = np.array([r.latency_ms for r in ordered], dtype=float)
    latency = LatencySummary(
        p50_ms=float(np.percentile(latencies, 50)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        mean_ms=float(latencies.mean()),
    )
    throughput = len(ordered) / elapsed_seconds if elapsed_seconds else None
    pass_hat_k, pass_at_1 = _bootstraps([all_correct, mean_correct], seed)

    return Report(
        run_id=run_id,
        status=status,
        completeness=completeness,
        dataset=dataset_name,
        dataset_hash=dataset_hash,
        system=system,
        k=k,
        n_examples=len(correct),
        seed=seed,
        label_map=dict(label_map) if label_map else None,
        strict=strict,
        mapped=mapped,
        pass_hat_k=pass_hat_k,
        pass_at_1=pass_at_1,
        cohorts=cohorts,
        errors_by_type=dict(sorted(errors.items())),
        error_examples=_first_messages(ordered),
        error_rate=sum(errors.values()) / len(ordered),
        latency=latency,
        examples_per_second=throughput,
    )


def _wilson(successes: int, n: int) -> Interval:
    low, high = wilson_interval(successes, n)
    return Interval(estimate=successes / n if n else 0.0, low=low, high=high, method="wilson", n=n)


def _bootstraps(samples: list[np.ndarray[Any, Any]], seed: int) -> list[Interval]:
    """Bootstrap intervals of the means of samples of one length, on shared draws."""
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


def _first_messages(results: Sequence[PairResult]) -> dict[str, str]:
    first: dict[str, str] = {}
    for r in results:
        if r.error_type and r.error_type not in first:
            first[r.error_type] = r.error_message or ""
    return dict(sorted(first.items()))
