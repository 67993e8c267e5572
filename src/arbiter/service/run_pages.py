"""What the run pages show, as library functions that stay fast on large runs.

A run's report is recomputed from every stored result, which takes seconds on 100,000
of them; it is computed once per state of the run (results done, status) and kept in
the store (:mod:`arbiter.store.report_repository`). A page of per-example results is
read by key from the store, group by group (failed, undecided, passed; see
:mod:`arbiter.store.result_pages`), and joined to just the examples it shows, through an
index of the dataset's examples by id, so a run of 100,000 results opens as fast as one
of 100, on its last page as on its first.

:class:`ReportKeeper` decides who computes a missing report: a small run's is computed
at once; a large run's on a thread of its own, started once the page is sent, while the
page says the figures are on their way (one computation per run at a time).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from arbiter.contract import Example, Interval, PairResult, Report, RunInfo
from arbiter.errors import ArbiterError
from arbiter.harness.diff import MetricDelta, diff_tallied, scorers_by_name
from arbiter.harness.figures import binary_valued, label_only
from arbiter.harness.pairs import PairRow, pair_rows
from arbiter.service.browse import Listing, ResultFilter, find_run, keyed_page
from arbiter.service.compare import (
    Comparison,
    StoredSide,
    compare_sides,
    positions,
    read_sides,
)
from arbiter.service.runs import load_run, run_note
from arbiter.service.verification import signed_kept_reports
from arbiter.store import Store
from arbiter.store.failures_repository import OutcomeCounts, count_outcomes
from arbiter.store.report_repository import (
    KeptReport,
    examples_by_id,
    index_examples,
    keep_report,
    kept_reports,
    sibling_runs,
)
from arbiter.store.result_pages import ListingSizes, ResultKey

__all__ = [
    "FLIPS_SHOWN",
    "SYNC_LIMIT",
    "CohortChange",
    "CurrentReport",
    "ExampleRow",
    "PageComparison",
    "ReportKeeper",
    "RunView",
    "compare_for_page",
    "current_report",
    "example_page",
    "primary_figure",
    "runs_to_compare",
]

SYNC_LIMIT = 20_000
"""Results up to which a missing report is computed while the page waits."""


@dataclass(frozen=True)
class RunView:
    """A run's header and, when it is ready, its report."""

    info: RunInfo
    """The run's header."""
    report: Report | None
    """The report for the run's current state; None while a large run's is computed."""
    binary_scorers: frozenset[str]
    """Scorers whose every value is 0 or 1 (their mean value is the pass rate)."""
    stale: Report | None = None
    """An older report of the run (fewer results, another status), shown meanwhile."""
    counts: OutcomeCounts | None = None
    """Its results that failed, were undecided and passed, when counted."""


def primary_figure(report: Report) -> tuple[str, Interval]:
    """The figure a run is judged by: mapped (else strict) accuracy for a label-only run,
    else the pass rate of the combined outcome."""
    if label_only(report):
        metrics = report.mapped or report.strict
        if metrics is not None:
            return ("accuracy (mapped)" if report.mapped else "accuracy", metrics.accuracy)
    return "pass rate", report.accuracy


def _fresh(kept: KeptReport | None, info: RunInfo) -> bool:
    return kept is not None and kept.n_done == info.n_done and kept.status == info.status


def _compute(store: Store, info: RunInfo) -> RunView:
    report, binary, counts = _compute_and_keep(store, info)
    return RunView(info, report, binary, counts=counts)


def _compute_and_keep(store: Store, info: RunInfo) -> tuple[Report, frozenset[str], OutcomeCounts]:
    run = load_run(store, info.id)
    binary = frozenset(binary_valued(run.results))
    counts = count_outcomes(store, info.id)
    keep_report(
        store,
        info.id,
        n_done=info.n_done,
        status=info.status,
        report=run.report,
        binary_scorers=binary,
        counts=counts,
    )
    return run.report, binary, counts


@dataclass(frozen=True)
class CurrentReport:
    """A run's header, its report as the run stands, and why it is not complete."""

    info: RunInfo
    """The run's header."""
    report: Report
    """Its report: the kept one, or one computed now (and kept)."""
    note: str | None
    """Why the run is not complete and how to finish it; None when it is."""


def current_report(store: Store, run_id: str, *, viewer: str | None) -> CurrentReport:
    """A run's report from the kept one while the run has not moved on since it was
    kept (no result read); else computed from the results now, and kept for the next
    request, whichever server process answers it.

    Raises:
        StoreError: No such run (or not visible), or it has no result yet.
    """
    info = find_run(store, run_id, viewer=viewer)
    kept = signed_kept_reports(store, kept_reports(store, [info.id])).get(info.id)
    if kept is not None and _fresh(kept, info):
        report = kept.report
    else:
        report = _compute_and_keep(store, info)[0]
    return CurrentReport(info, report, run_note(info))


class ReportKeeper:
    """Hands out runs' reports: kept ones at once, missing ones computed and kept.

    One keeper lives with the app (``app.state``); it remembers only which large runs are
    being computed right now.
    """

    def __init__(self, sync_limit: int = SYNC_LIMIT) -> None:
        """Args: sync_limit: results up to which a missing report is computed at once."""
        self.sync_limit = sync_limit
        self.listing_sizes = ListingSizes()
        """The sizes of the runs' listings (by scorer, failing, ...), per state of a run."""
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}

    def view(self, store: Store, run_id: str, *, viewer: str | None) -> RunView:
        """The run's header and report (see :class:`RunView`).

        Raises:
            StoreError: No such run, or one ``viewer`` may not see.
        """
        info = find_run(store, run_id, viewer=viewer)
        return self.views(store, [info])[0]

    def views(self, store: Store, infos: Sequence[RunInfo]) -> list[RunView]:
        """A view of each run, in order; missing reports of small runs computed now."""
        # A signed run's kept report is shown only while it equals the signed one.
        kept = signed_kept_reports(store, kept_reports(store, [info.id for info in infos]))
        views = []
        for info in infos:
            found = kept.get(info.id)
            if found is not None and _fresh(found, info):
                views.append(
                    RunView(
                        info,
                        found.report,
                        frozenset(found.binary_scorers),
                        counts=found.counts,
                    )
                )
            elif info.n_done == 0:
                views.append(RunView(info, None, frozenset()))
            elif info.n_done <= self.sync_limit:
                views.append(_compute(store, info))
            else:
                self._start(store, info)
                views.append(
                    RunView(info, None, frozenset(), found.report if found is not None else None)
                )
        return views

    def computing(self, run_id: str) -> bool:
        """Whether the report of ``run_id`` is being computed on a thread now."""
        with self._lock:
            return run_id in self._running

    def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until a computation of ``run_id``'s report started here has ended (one not
        started yet is started now)."""
        self.start_pending()
        with self._lock:
            thread = self._running.get(run_id)
        if thread is not None and thread.ident is not None:
            thread.join(timeout)

    def start_pending(self) -> None:
        """Start the computations :meth:`views` asked for (after the page is sent, so the
        page is not slowed by them)."""
        # Started under the lock: two requests ending at once would otherwise both start
        # one thread (Python then fails the second start with a KeyError on the thread).
        with self._lock:
            for thread in [t for t in self._running.values() if t.ident is None]:
                thread.start()

    def _start(self, store: Store, info: RunInfo) -> None:
        """Ask for the report of ``info`` to be computed (see :meth:`start_pending`)."""
        with self._lock:
            if info.id in self._running:
                return

            def work() -> None:
                try:
                    index_examples(store, info.dataset_hash)  # the table's examples first
                    _compute(store, info)
                except ArbiterError:  # the next visit tries again, and says why
                    pass
                finally:
                    with self._lock:
                        self._running.pop(info.id, None)

            thread = threading.Thread(target=work, name=f"report-{info.id}", daemon=True)
            self._running[info.id] = thread


def runs_to_compare(
    store: Store, info: RunInfo, *, viewer: str | None, limit: int = 5
) -> list[tuple[str, str | None]]:
    """Other runs of the same dataset ``viewer`` may see, newest first, as (id, name)."""
    return sibling_runs(store, info.id, info.dataset_hash, viewer=viewer, limit=limit)


@dataclass(frozen=True)
class ExampleRow:
    """One row of the per-example table: the pair as shown, and its example."""

    row: PairRow
    """The pair: outcome, output, expected, every scorer's score."""
    example: Example | None
    """The example (input, expected, metadata); None if the dataset lacks it."""
    result: PairResult
    """The stored result (latency, attempts, raw output)."""
    key: str | None = None
    """Where the row sits in its listing, as the ``after`` / ``before`` of the page that
    follows or precedes it."""


def example_page(
    store: Store,
    view: RunView,
    where: ResultFilter,
    *,
    viewer: str | None,
    offset: int,
    limit: int,
    after: str | None = None,
    before: str | None = None,
    sizes: ListingSizes | None = None,
) -> Listing[ExampleRow]:
    """One page of a run's per-example table, joined to the examples it shows.

    Every listing (failures first or by example, all, failing, one scorer's) reads the
    run's groups one after the other, a page that follows another from the key of its
    neighbour's last row (``after``) or first (``before``), a page asked for by position
    from the nearer end of its group (:mod:`arbiter.store.result_pages`).

    Args:
        store: The store.
        view: The run.
        where: Which results, in which order.
        viewer: Who asks.
        offset: Position of the page's first row (what the page says it shows; where it
            is read from unless a key is given).
        limit: Most rows on the page.
        after: A page's start: the key (:attr:`ExampleRow.key`) of the row before it. A
            key that does not parse is ignored.
        before: Its end: the key of the row after it (when ``after`` is None).
        sizes: Where the listing's group sizes are kept per state of the run (a scorer's
            listing otherwise counts them over every row's scores for each page).

    Raises:
        StoreError: No such run, or one ``viewer`` may not see.
    """
    info = view.info
    keyed = keyed_page(
        store,
        info,
        where,
        offset=offset,
        limit=limit,
        after=ResultKey.parse(after),
        before=ResultKey.parse(before),
        sizes=sizes,
        counts=view.counts,
    )
    results = Listing([k.result for k in keyed.items], keyed.total, offset, limit)
    keys = [k.key.token() for k in keyed.items]
    examples = examples_by_id(store, info.dataset_hash, [r.example_id for r in results.items])
    rows = []
    for result, key in zip(results.items, keys, strict=True):
        example = examples.get(result.example_id)
        stand_in = example or Example(id=result.example_id, input={})
        shown = pair_rows([stand_in], [result])
        if shown:
            rows.append(ExampleRow(shown[0], example, result, key))
    return Listing(rows, results.total, results.offset, results.limit)


@dataclass(frozen=True)
class CohortChange:
    """One cohort in two runs: each run's figure, and the change over its paired examples."""

    name: str
    """The cohort (untrusted text)."""
    a: Interval | None
    """Its pass rate (accuracy) in run A, with the interval; None: not in A."""
    b: Interval | None
    """The same in run B."""
    change: MetricDelta | None
    """B minus A over the cohort's examples in both, with the paired-bootstrap interval."""
    broken: int
    """Examples of the cohort passed in A and failed in B."""
    fixed: int
    """Examples of the cohort failed in A and passed in B."""


FLIPS_SHOWN = 200
"""Flips of each list the compare page shows with their texts."""


@dataclass(frozen=True)
class PageComparison:
    """Two runs compared for the compare page: the comparison, both runs, each cohort."""

    comparison: Comparison
    """As :func:`arbiter.service.compare.compare_runs` makes it, the texts of the first
    :attr:`flip_texts` flips of each list read."""
    a: RunInfo
    """Run A (the reference)."""
    b: RunInfo
    """Run B."""
    cohorts: list[CohortChange]
    """Each cohort of either run, by name."""
    flip_texts: int = FLIPS_SHOWN
    """Flips of each list shown with their texts (the others name their example alone)."""


def _cohort_changes(
    a: StoredSide, b: StoredSide, report_a: Report, report_b: Report
) -> list[CohortChange]:
    cohort_of = {i: c for side in (a, b) for i, c in side.scope if c is not None}
    members: dict[str, set[str]] = {}
    for example_id, cohort in cohort_of.items():
        members.setdefault(cohort, set()).add(example_id)
    position = positions(a, b)
    specs_a, specs_b = scorers_by_name(a.scorers), scorers_by_name(b.scorers)
    changes = []
    for name in sorted({*report_a.cohorts, *report_b.cohorts}):
        diff = diff_tallied(
            a.info.id,
            a.tallies,
            b.info.id,
            b.tallies,
            position=position,
            scorers_a=specs_a,
            scorers_b=specs_b,
            seed=a.info.run_config.seed,
            only=members.get(name, set()),
            outcome_only=True,
        )
        in_a, in_b = report_a.cohorts.get(name), report_b.cohorts.get(name)
        changes.append(
            CohortChange(
                name=name,
                a=in_a.accuracy if in_a is not None else None,
                b=in_b.accuracy if in_b is not None else None,
                change=diff.deltas[0] if diff.deltas else None,
                broken=len(diff.broken),
                fixed=len(diff.fixed),
            )
        )
    return changes


def compare_for_page(store: Store, run_a: str, run_b: str, *, viewer: str | None) -> PageComparison:
    """Two visible runs compared as :func:`~arbiter.service.compare.compare_runs` does
    (from per-example figures counted in SQL, the texts of the first :data:`FLIPS_SHOWN`
    flips of each list read), with the change of every cohort; each run's figure per
    cohort comes from its report, kept as the run stands (computed and kept if not).

    Raises:
        StoreError: A run does not exist, is not visible, or has no result.
    """
    info_a = find_run(store, run_a, viewer=viewer)
    info_b = find_run(store, run_b, viewer=viewer)
    side_a, side_b = read_sides(store, info_a, info_b, cohorts=True)
    comparison = compare_sides(store, side_a, side_b, flip_texts=FLIPS_SHOWN)
    report_a = current_report(store, info_a.id, viewer=viewer).report
    report_b = (
        report_a
        if info_b.id == info_a.id
        else current_report(store, info_b.id, viewer=viewer).report
    )
    cohorts = _cohort_changes(side_a, side_b, report_a, report_b)
    return PageComparison(comparison, info_a, info_b, cohorts)
