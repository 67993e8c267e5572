"""Compare two stored runs: what changed, and what makes the comparison weaker than it looks.

A comparison reads of each run its header and per-example figures the database counts
(:mod:`arbiter.store.compare_repository`: one short row per example and scorer), the
examples' order from the dataset's index, and then whole only the results of the flipped
examples it shows, so two runs of 100,000 results compare in a second or so instead of
being read whole. The figures are those :func:`arbiter.harness.diff.diff_runs` makes of
the whole results (:func:`compare_loaded`, kept for runs already read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from arbiter.contract import PairResult, RunInfo, ScorerSpec
from arbiter.errors import StoreError
from arbiter.harness.comparability import comparability_notes, scorer_notes
from arbiter.harness.diff import (
    RunDiff,
    RunTallies,
    ScorerMap,
    diff_runs,
    diff_tallied,
    flips_to_show,
    scorers_by_name,
    tally_results,
    with_flip_texts,
)
from arbiter.harness.pairs import expected_text
from arbiter.harness.runner import stored_scorers
from arbiter.service.runs import StoredRun, incomplete_note, run_note
from arbiter.store import Store
from arbiter.store.compare_repository import (
    counted_in_sql,
    dataset_scope,
    results_of,
    run_figures,
)
from arbiter.store.report_repository import examples_by_id, index_examples

__all__ = [
    "Comparison",
    "StoredSide",
    "common_scorers",
    "compare_infos",
    "compare_loaded",
    "compare_runs",
    "compare_sides",
    "positions",
    "read_side",
    "read_sides",
    "run_scorers",
]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared, with what makes the comparison weaker than it looks."""

    diff: RunDiff
    """The outcome and each common scorer compared over the examples in common."""
    warnings: list[str] = field(default_factory=list)
    """Different datasets, k, label maps or scorers; incomplete runs; nothing in common."""


def compare_runs(
    store: Store, run_a: str, run_b: str, *, flip_texts: int | None = None
) -> Comparison:
    """Diff two stored runs example by example, saying what makes them incomparable.

    Args:
        store: The store.
        run_a: The reference run (a unique id prefix is enough).
        run_b: The other run.
        flip_texts: Read the texts (answers, reference, reason) of the first this many
            flips of each list; the others carry their example id alone. None: all.

    Raises:
        StoreError: A run does not exist or has no result.
    """
    return compare_infos(store, store.get_run(run_a), store.get_run(run_b), flip_texts=flip_texts)


def compare_loaded(a: StoredRun, b: StoredRun) -> Comparison:
    """Diff two runs already read from the store whole (see :func:`compare_runs`)."""
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
    notes = (incomplete_note(a), incomplete_note(b))
    return _with_warnings(diff, a.info, b.info, a.report.scorers, b.report.scorers, notes)


def _with_warnings(
    diff: RunDiff,
    a: RunInfo,
    b: RunInfo,
    scorers_a: Sequence[ScorerSpec],
    scorers_b: Sequence[ScorerSpec],
    notes: tuple[str | None, str | None],
) -> Comparison:
    if a.id == b.id:
        same = "A and B are the same run: every figure is compared with itself, nothing can differ"
        warnings = [same]
    else:
        warnings = [note for note in notes if note is not None]
        warnings += comparability_notes(a, b)
        warnings += scorer_notes(scorers_a, scorers_b)
    if diff.n_common == 0:
        warnings.append("the runs have no example in common: there is nothing to compare")
    return Comparison(diff=diff, warnings=warnings)


@dataclass(frozen=True)
class StoredSide:
    """One run of a comparison as read without its results."""

    info: RunInfo
    """The run's header."""
    scorers: list[ScorerSpec]
    """Its scorers, as its report lists them."""
    tallies: RunTallies
    """Its results counted per example."""
    scope: list[tuple[str, str | None]]
    """Its examples in scope (id, cohort), in dataset order."""


def run_scorers(info: RunInfo) -> list[ScorerSpec]:
    """A stored run's scorers as its report lists them (``label`` for older runs)."""
    config = info.run_config
    return list(config.scorers) or [s.spec for s in stored_scorers(config)]


def read_side(
    store: Store,
    info: RunInfo,
    scorers: Sequence[str],
    *,
    cohorts: bool = False,
    scope: list[tuple[str, str | None]] | None = None,
) -> StoredSide:
    """A run's header, scorers, tallies (for ``scorers``) and examples in scope.

    Args:
        store: The store.
        info: The run.
        scorers: The scorers to count.
        cohorts: Read the examples' cohorts too (else None).
        scope: Its examples in scope, when read already (another run of the dataset).

    Raises:
        StoreError: The run has no result yet, or its dataset is not stored.
    """
    if info.n_done == 0:
        raise StoreError(f"run {info.id} has no results yet")
    specs = run_scorers(info)
    if counted_in_sql(store):
        figures = run_figures(store, info.id, scorers)
        tallies = RunTallies(figures.outcome, figures.scorers)
    else:  # a database the SQL does not speak: counted here from the whole results
        grouped: dict[str, list[PairResult]] = {}
        for r in sorted(store.results(info.id), key=lambda r: r.repetition):
            grouped.setdefault(r.example_id, []).append(r)
        tallies = tally_results(grouped, scorers)
    return StoredSide(info, specs, tallies, scope or _scope(store, info, cohorts))


def _scope(store: Store, info: RunInfo, cohorts: bool) -> list[tuple[str, str | None]]:
    limit = info.run_config.limit
    index_examples(store, info.dataset_hash)
    scope = dataset_scope(store, info.dataset_hash, limit, cohorts=cohorts)
    if scope is None:  # not indexed (an index kept by another request failed): read it
        examples = store.load_dataset(info.dataset_hash).examples
        scope = [(e.id, e.cohort) for e in (examples[:limit] if limit else examples)]
    return scope


def common_scorers(a: RunInfo, b: RunInfo) -> list[str]:
    """The names of the scorers two runs share, in A's order."""
    names_b = set(scorers_by_name(run_scorers(b)))
    return [name for name in scorers_by_name(run_scorers(a)) if name in names_b]


def positions(a: StoredSide, b: StoredSide) -> dict[str, int]:
    """Each example's place in A's examples, then B's (the first listing wins)."""
    position: dict[str, int] = {}
    for scope in (a.scope,) if b.scope is a.scope else (a.scope, b.scope):
        for example_id, _ in scope:
            position.setdefault(example_id, len(position))
    return position


def compare_infos(
    store: Store, a: RunInfo, b: RunInfo, *, flip_texts: int | None = None
) -> Comparison:
    """:func:`compare_runs` of two runs' headers."""
    side_a, side_b = read_sides(store, a, b)
    return compare_sides(store, side_a, side_b, flip_texts=flip_texts)


def read_sides(
    store: Store, a: RunInfo, b: RunInfo, *, cohorts: bool = False
) -> tuple[StoredSide, StoredSide]:
    """Both runs of a comparison read (once when they are the same run; their examples
    once when they ran the same ones); ``cohorts``: with the examples' cohorts."""
    names = common_scorers(a, b)
    side_a = read_side(store, a, names, cohorts=cohorts)
    if b.id == a.id:
        return side_a, side_a
    same = (b.dataset_hash, b.run_config.limit) == (a.dataset_hash, a.run_config.limit)
    side_b = read_side(store, b, names, cohorts=cohorts, scope=side_a.scope if same else None)
    return side_a, side_b


def compare_sides(
    store: Store, a: StoredSide, b: StoredSide, *, flip_texts: int | None = None
) -> Comparison:
    """:func:`compare_runs` of two runs read with :func:`read_sides`."""
    specs_a, specs_b = scorers_by_name(a.scorers), scorers_by_name(b.scorers)
    diff = diff_tallied(
        a.info.id,
        a.tallies,
        b.info.id,
        b.tallies,
        position=positions(a, b),
        scorers_a=specs_a,
        scorers_b=specs_b,
        seed=a.info.run_config.seed,
    )
    diff = _flip_texts(store, diff, a, b, specs_a, specs_b, flip_texts)
    notes = (run_note(a.info), run_note(b.info))
    return _with_warnings(diff, a.info, b.info, a.scorers, b.scorers, notes)


def _flip_texts(
    store: Store,
    diff: RunDiff,
    a: StoredSide,
    b: StoredSide,
    specs_a: ScorerMap,
    specs_b: ScorerMap,
    limit: int | None,
) -> RunDiff:
    """``diff`` with the texts of its first ``limit`` flips per list, read for those
    examples alone."""
    shown = flips_to_show(diff, limit)
    if not shown:
        return diff
    results_a = results_of(store, a.info.id, shown)
    results_b = results_a if b.info.id == a.info.id else results_of(store, b.info.id, shown)
    references: dict[str, str | None] = {}
    left = list(shown)
    for side in (a, b):
        in_scope = {example_id for example_id, _ in side.scope}
        wanted = [i for i in left if i in in_scope]
        found = examples_by_id(store, side.info.dataset_hash, wanted)
        references.update((i, expected_text(e)) for i, e in found.items())
        left = [i for i in left if i not in references]
    return with_flip_texts(diff, results_a, results_b, references, specs_a, specs_b, limit=limit)
