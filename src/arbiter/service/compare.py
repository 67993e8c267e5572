"""Compare two stored runs: what changed, and what makes the comparison weaker than it looks."""

from __future__ import annotations

from dataclasses import dataclass, field

from arbiter.harness.comparability import comparability_notes, scorer_notes
from arbiter.harness.diff import RunDiff, diff_runs
from arbiter.service.runs import StoredRun, incomplete_note, load_run
from arbiter.store import Store

__all__ = ["Comparison", "compare_loaded", "compare_runs"]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared, with what makes the comparison weaker than it looks."""

    diff: RunDiff
    """The outcome and each common scorer compared over the examples in common."""
    warnings: list[str] = field(default_factory=list)
    """Different datasets, k, label maps or scorers; incomplete runs; nothing in common."""


def compare_runs(store: Store, run_a: str, run_b: str) -> Comparison:
    """Diff two stored runs example by example, saying what makes them incomparable.

    Raises:
        StoreError: A run does not exist or has no result.
    """
    return compare_loaded(load_run(store, run_a), load_run(store, run_b))


def compare_loaded(a: StoredRun, b: StoredRun) -> Comparison:
    """Diff two runs already read from the store (see :func:`compare_runs`)."""
    if a.info.id == b.info.id:
        same = "A and B are the same run: every figure is compared with itself, nothing can differ"
        warnings = [same]
    else:
        warnings = [note for run in (a, b) if (note := incomplete_note(run)) is not None]
    if a.info.id != b.info.id:
        warnings += comparability_notes(a.info, b.info)
        warnings += scorer_notes(a.report.scorers, b.report.scorers)
    diff = diff_runs(
        a.info.id,
        a.results,
        b.info.id,
        b.results,
        examples=[*a.examples, *b.examples],
        scorers_a=a.report.scorers,
        scorers_b=b.report.scorers,
        seed=a.config.seed,
    )
    if diff.n_common == 0:
        warnings.append("the runs have no example in common: there is nothing to compare")
    return Comparison(diff=diff, warnings=warnings)
