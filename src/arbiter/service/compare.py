"""Compare two stored runs: what changed, and what makes the comparison weaker than it looks."""

from __future__ import annotations

from dataclasses import dataclass, field

from arbiter.harness.diff import RunDiff, comparability_notes, diff_runs
from arbiter.service.runs import incomplete_note, load_run
from arbiter.store import Store

__all__ = ["Comparison", "compare_runs"]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared, with what makes the comparison weaker than it looks."""

    diff: RunDiff
    """Flips and metric deltas over the examples in common."""
    warnings: list[str] = field(default_factory=list)
    """Different datasets, k or label maps; incomplete runs; nothing in common."""


def compare_runs(store: Store, run_a: str, run_b: str) -> Comparison:
    """Diff two stored runs example by example, saying what makes them incomparable.

    Raises:
        StoreError: A run does not exist or has no result.
    """
    a, b = load_run(store, run_a), load_run(store, run_b)
    warnings = [note for run in (a, b) if (note := incomplete_note(run)) is not None]
    warnings += comparability_notes(a.info, b.info)
    expected = {
        e.id: e.expected_label for e in [*a.examples, *b.examples] if e.expected_label is not None
    }
    diff = diff_runs(a.info.id, a.results, b.info.id, b.results, expected, seed=a.config.seed)
    if diff.n_common == 0:
        warnings.append("the runs have no example in common: there is nothing to compare")
    return Comparison(diff=diff, warnings=warnings)
