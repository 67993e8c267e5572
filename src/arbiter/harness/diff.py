"""Compare two runs example by example: what flipped, and how each figure moved."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, Field

from arbiter.contract import PairResult, RunInfo
from arbiter.stats import paired_bootstrap_diff

__all__ = ["Flip", "MetricDelta", "RunDiff", "comparability_notes", "diff_runs"]


class Flip(BaseModel):
    """An example whose verdict (correct on every repetition or not) changed."""

    example_id: str
    """The example."""
    expected: str
    """Its expected label."""
    label_a: str | None
    """First-repetition label in run A (None: the call failed)."""
    label_b: str | None
    """First-repetition label in run B."""


class MetricDelta(BaseModel):
    """How one figure moved from run A to run B, over the paired examples."""

    name: str
    """Figure name."""
    a: float
    """Value in run A."""
    b: float
    """Value in run B."""
    delta: float
    """b − a."""
    low: float
    """Lower end of the paired-bootstrap 95% interval of the change."""
    high: float
    """Upper end of the interval."""


class RunDiff(BaseModel):
    """Everything that changed between two runs."""

    run_a: str
    """Id of run A (the reference)."""
    run_b: str
    """Id of run B."""
    n_common: int
    """Examples present in both runs."""
    only_in_a: list[str] = Field(default_factory=list)
    """Examples run only in A."""
    only_in_b: list[str] = Field(default_factory=list)
    """Examples run only in B."""
    fixed: list[Flip] = Field(default_factory=list)
    """Wrong in A, right in B."""
    broken: list[Flip] = Field(default_factory=list)
    """Right in A, wrong in B."""
    deltas: list[MetricDelta] = Field(default_factory=list)
    """Accuracy and pass^k, with intervals."""


def diff_runs(
    run_a: str,
    results_a: Sequence[PairResult],
    run_b: str,
    results_b: Sequence[PairResult],
    expected: Mapping[str, str],
    *,
    seed: int = 0,
) -> RunDiff:
    """Pair two runs' results by example id and report flips and metric deltas.

    Args:
        run_a: Id of the reference run.
        results_a: Its results.
        run_b: Id of the other run.
        results_b: Its results.
        expected: Expected label per example id.
        seed: Seed of the paired bootstrap.
    """
    grouped_a = _group(results_a)
    grouped_b = _group(results_b)
    common = [i for i in grouped_a if i in grouped_b]
    diff = RunDiff(
        run_a=run_a,
        run_b=run_b,
        n_common=len(common),
        only_in_a=sorted(set(grouped_a) - set(grouped_b)),
        only_in_b=sorted(set(grouped_b) - set(grouped_a)),
    )
    for example_id in common:
        right_a = all(r.correct for r in grouped_a[example_id])
        right_b = all(r.correct for r in grouped_b[example_id])
        if right_a == right_b:
            continue
        flip = Flip(
            example_id=example_id,
            expected=expected.get(example_id, "?"),
            label_a=grouped_a[example_id][0].label,
            label_b=grouped_b[example_id][0].label,
        )
        (diff.fixed if right_b else diff.broken).append(flip)
    if common:
        for name, measure in (("accuracy", _mean_correct), ("pass^k", _all_correct)):
            a = np.array([measure(grouped_a[i]) for i in common])
            b = np.array([measure(grouped_b[i]) for i in common])
            delta, low, high = paired_bootstrap_diff(a, b, seed=seed)
            diff.deltas.append(
                MetricDelta(
                    name=name,
                    a=float(a.mean()),
                    b=float(b.mean()),
                    delta=delta,
                    low=low,
                    high=high,
                )
            )
    return diff


def comparability_notes(a: RunInfo, b: RunInfo) -> list[str]:
    """What makes two runs' figures not directly comparable, one line each."""
    notes = []
    if a.dataset_hash != b.dataset_hash:
        notes.append(
            f"the runs used different datasets ({a.dataset_name} {a.dataset_hash[:12]} "
            f"vs {b.dataset_name} {b.dataset_hash[:12]})"
        )
    config_a, config_b = a.run_config, b.run_config
    if config_a.k != config_b.k:
        notes.append(f"the runs used different k ({config_a.k} vs {config_b.k}): pass^k differs")
    if (config_a.label_map or None) != (config_b.label_map or None):
        notes.append(
            "the runs used different label maps: their mapped figures mean different things"
        )
    return notes


def _group(results: Sequence[PairResult]) -> dict[str, list[PairResult]]:
    grouped: dict[str, list[PairResult]] = {}
    for r in sorted(results, key=lambda r: r.repetition):
        grouped.setdefault(r.example_id, []).append(r)
    return grouped


def _mean_correct(results: Sequence[PairResult]) -> float:
    return sum(r.correct for r in results) / len(results)


def _all_correct(results: Sequence[PairResult]) -> float:
    return float(all(r.correct for r in results))
