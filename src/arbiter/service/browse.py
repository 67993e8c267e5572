"""Browsing what is stored, as a viewer may see it: runs, results, verdicts, annotations.

The REST API and the pages call these same functions. A ``viewer`` is the id of the
API key asking (it sees the records it made) or None (an admin key, an open server:
everything). A record the viewer may not see reads exactly like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from arbiter.contract import Annotation, PairResult, RunInfo
from arbiter.errors import StoreError
from arbiter.judges.calibration import CalibrationReport, calibrate, pairs_from_annotations
from arbiter.service.annotations import list_annotations
from arbiter.service.compare import Comparison, compare_runs
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from arbiter.store.browse_repository import (
    ResultFilter,
    RunFilter,
    StoredVerdict,
    load_verdict,
    page_runs,
    page_verdicts,
    utc_run_info,
)
from arbiter.store.failures_repository import OutcomeCounts
from arbiter.store.ownership_repository import is_visible, visible_id
from arbiter.store.result_pages import (
    KeyedResult,
    ListingSizes,
    ResultKey,
    count_listing,
    key_of_row,
    page_keyed,
    sizes_from_counts,
)

__all__ = [
    "Listing",
    "ResultFilter",
    "RunFilter",
    "StoredVerdict",
    "calibrate_visible",
    "compare_visible_runs",
    "find_run",
    "find_verdict",
    "keyed_page",
    "list_keyed_results",
    "list_results",
    "list_runs",
    "list_verdicts",
    "list_visible_annotations",
    "run_report",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Listing(Generic[T]):
    """One page of a list: its items, the list's length, where the page starts."""

    items: list[T]
    """The page's items, in the list's order."""
    total: int
    """How many items the whole list holds."""
    offset: int
    """The position of the first item."""
    limit: int
    """The most items a page holds."""

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None when this is the last."""
        after = self.offset + self.limit
        return after if after < self.total else None


def list_runs(
    store: Store, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50
) -> Listing[RunInfo]:
    """A page of offline runs, newest first, under ``where`` (its viewer included)."""
    runs, total = page_runs(store, where or RunFilter(), offset=offset, limit=limit)
    return Listing(runs, total, offset, limit)


def find_run(store: Store, run_id: str, *, viewer: str | None) -> RunInfo:
    """A run's header, if ``viewer`` may see it (a unique id prefix is enough).

    Raises:
        StoreError: No such run, more than one match, or one the viewer may not see.
    """
    return utc_run_info(store.get_run(visible_id(store, "run", run_id, viewer)))


def run_report(store: Store, run_id: str, *, viewer: str | None) -> StoredRun:
    """A run with its report recomputed from its results.

    Raises:
        StoreError: No such run (or not visible), or it has no result yet.
    """
    info = find_run(store, run_id, viewer=viewer)
    return replace(load_run(store, info.id), info=info)


def list_results(
    store: Store,
    run_id: str,
    where: ResultFilter | None = None,
    *,
    viewer: str | None,
    offset: int = 0,
    limit: int = 50,
) -> Listing[PairResult]:
    """A page of one run's per-example results (only failures, one scorer's, ...).

    Raises:
        StoreError: No such run, or not visible.
    """
    keyed = list_keyed_results(store, run_id, where, viewer=viewer, offset=offset, limit=limit)
    return Listing([k.result for k in keyed.items], keyed.total, offset, limit)


def list_keyed_results(
    store: Store,
    run_id: str,
    where: ResultFilter | None = None,
    *,
    viewer: str | None,
    offset: int = 0,
    limit: int = 50,
    after: ResultKey | None = None,
    before: ResultKey | None = None,
    after_row: int | None = None,
    sizes: ListingSizes | None = None,
    counts: OutcomeCounts | None = None,
) -> Listing[KeyedResult]:
    """A page of one run's results with each one's key, read by key when one is given
    (:mod:`arbiter.store.result_pages`): as cheap on the last page of 100,000 as on the
    first.

    Args:
        store: The store.
        run_id: The run (a unique prefix is enough).
        where: Which results, in which order.
        viewer: Who asks.
        offset: Position of the page's first result (where it is read from unless a key
            is given).
        limit: Most results on the page.
        after: The page starts right after this result.
        before: The page ends right before this result (when ``after`` is None).
        after_row: The page starts right after the run's result stored as this row (when
            ``after`` is None); a row the run does not hold is ignored.
        sizes: Where the listing's group sizes are kept per state of the run; None: they
            are counted for this page.
        counts: The run's outcome counts as it stands, when known (a listing without a
            scorer filter then needs no count).

    Raises:
        StoreError: No such run, or not visible.
    """
    info = find_run(store, run_id, viewer=viewer)
    return keyed_page(
        store,
        info,
        where or ResultFilter(),
        offset=offset,
        limit=limit,
        after=after,
        before=before,
        after_row=after_row,
        sizes=sizes,
        counts=counts,
    )


def keyed_page(
    store: Store,
    info: RunInfo,
    where: ResultFilter,
    *,
    offset: int,
    limit: int,
    after: ResultKey | None = None,
    before: ResultKey | None = None,
    after_row: int | None = None,
    sizes: ListingSizes | None = None,
    counts: OutcomeCounts | None = None,
) -> Listing[KeyedResult]:
    """:func:`list_keyed_results` of a run already found (its visibility checked)."""
    found = sizes_from_counts(where, counts) if counts is not None else None
    if found is None:
        if sizes is not None:
            found = sizes.sizes(store, info.id, info.n_done, where)
        else:
            found = count_listing(store, info.id, where)[1]
    if after is None and before is None and after_row is not None:
        after = key_of_row(store, info.id, after_row, where)
    page, total = page_keyed(
        store, info.id, where, found, offset=offset, limit=limit, after=after, before=before
    )
    return Listing(page, total, offset, limit)


def compare_visible_runs(store: Store, run_a: str, run_b: str, *, viewer: str | None) -> Comparison:
    """Two runs compared (see :func:`arbiter.service.compare.compare_runs`), both visible.

    Raises:
        StoreError: A run does not exist, is not visible, or has no result.
    """
    a = find_run(store, run_a, viewer=viewer)
    b = find_run(store, run_b, viewer=viewer)
    return compare_runs(store, a.id, b.id)


def find_verdict(store: Store, verdict_id: int, *, viewer: str | None) -> StoredVerdict:
    """A stored jury verdict with its case and critiques.

    Raises:
        StoreError: No such verdict, or one the viewer may not see.
    """
    found = load_verdict(store, verdict_id)
    if found is None or not is_visible(store, "verdict", str(verdict_id), viewer):
        raise StoreError(f"no verdict with id {verdict_id}")  # a page shows it: no store URL
    return found


def list_verdicts(
    store: Store, *, viewer: str | None, offset: int = 0, limit: int = 50
) -> Listing[StoredVerdict]:
    """A page of stored jury verdicts, newest first."""
    verdicts, total = page_verdicts(store, viewer=viewer, offset=offset, limit=limit)
    return Listing(verdicts, total, offset, limit)


def list_visible_annotations(
    store: Store,
    *,
    viewer: str | None,
    item: str | None = None,
    dimension: str | None = None,
    judge: str | None = None,
    latest: bool = True,
) -> list[Annotation]:
    """The annotations ``viewer`` may see (its own; None: everyone's), oldest first."""
    return list_annotations(
        store,
        item=item,
        dimension=dimension,
        judge=judge,
        owner=viewer,
        everyone=viewer is None,
        latest=latest,
    )


def calibrate_visible(
    store: Store,
    *,
    viewer: str | None,
    judge: str | None = None,
    dimension: str | None = None,
    n_resamples: int = 2000,
) -> CalibrationReport:
    """Each judge's agreement with the humans (kappa, agreement, n, status) per dimension,
    over the latest annotations and the votes ``viewer`` may see."""
    from arbiter.service.votes import with_vote_pairs

    annotations = list_visible_annotations(store, viewer=viewer, dimension=dimension, judge=judge)
    pairs, excluded = pairs_from_annotations(annotations)
    pairs = with_vote_pairs(pairs, store, viewer=viewer, judge=judge, dimension=dimension)
    return calibrate(pairs, n_resamples=n_resamples, excluded=excluded)
