"""A run's results a page at a time, under any filter and order of
:class:`~arbiter.store.browse_repository.ResultFilter`, as cheap far down the run as at
its top: keyset paging on ``(example_id, repetition)`` within each group.

Reading a page by position (``OFFSET``) makes the database walk every result before it,
and ordering failures first by a computed rank makes it sort every result of the
listing: several tenths of a second a page on 100,000 results. Here a listing is one
group (by example) or three (failures first: failed, undecided, passed, as
:mod:`arbiter.store.failures_repository` draws them), each read in example order straight
off the ``(run_id, example_id, repetition)`` index. A page that follows another starts
right after the previous page's last result (``after``), or ends right before the next
page's first (``before``); a page asked for by number alone is read from whichever end
of its group is nearer, so the last pages are as cheap as the first.

The groups' sizes (the listing's total, and where a numbered page falls) are counted in
one SQL aggregate over the run, grouped by outcome; with a scorer filter that aggregate
reads every row's scores, so :class:`ListingSizes` keeps them per state of the run:
results are only ever added, so a run's results are the same while their count is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    and_,
    case,
    func,
    literal_column,
    select,
    true,
    tuple_,
)
from sqlalchemy.orm import Session, aliased

from arbiter.contract import PairResult
from arbiter.store.browse_repository import ResultFilter, _failed, scored_clause
from arbiter.store.failures_repository import OutcomeCounts, _groups
from arbiter.store.models import MAX_ID_CHARS, ResultRow
from arbiter.store.repository import Store, _pair_result

__all__ = [
    "KeyedResult",
    "ListingSizes",
    "ResultKey",
    "count_listing",
    "key_of_row",
    "page_failures_first_keyed",
    "page_keyed",
    "page_results",
    "sizes_from_counts",
]


@dataclass(frozen=True)
class ResultKey:
    """Where a result sits in a listing's order: its group, example, repetition."""

    group: int
    """Failures first: 0 failed, 1 undecided, 2 passed; by example: 0."""
    example_id: str
    """The example."""
    repetition: int
    """The repetition."""

    def token(self) -> str:
        """The key as a query parameter's value (``group.repetition.example_id``)."""
        return f"{self.group}.{self.repetition}.{self.example_id}"

    @classmethod
    def parse(cls, token: str | None) -> ResultKey | None:
        """The key a :meth:`token` gave; None for anything else (a page then reads by
        position)."""
        if not token:
            return None
        group, _, rest = token.partition(".")
        repetition, _, example_id = rest.partition(".")
        if group not in ("0", "1", "2") or not repetition.isdigit() or len(repetition) > 9:
            return None
        if not example_id or len(example_id) > MAX_ID_CHARS:
            return None
        return cls(int(group), example_id, int(repetition))


@dataclass(frozen=True)
class KeyedResult:
    """A result with its place in the order."""

    result: PairResult
    """The stored result."""
    key: ResultKey
    """Its key (what the next or previous page starts from)."""
    row_id: int = 0
    """Its row in the store (a REST cursor names it: :func:`key_of_row`)."""


def _rank() -> ColumnElement[int]:
    """A result's group failures first (0 failed, 1 undecided, 2 passed), as
    :func:`~arbiter.store.failures_repository._groups` splits them."""
    # Literal numbers, not bound ones: PostgreSQL groups by it only if both read alike.
    zero, one, two = (literal_column(str(n), Integer) for n in range(3))
    return case((_failed(), zero), (ResultRow.passed.is_(None), one), else_=two)


def _conditions(
    where: ResultFilter, scored: ColumnElement[bool] | None
) -> list[ColumnElement[bool]]:
    """Each group's condition, in the listing's order."""
    if scored is None and where.failing:
        chosen: ColumnElement[bool] = _failed()
    else:
        chosen = true() if scored is None else scored
    if not where.failures_first:
        return [chosen]
    if scored is None and where.failing:  # only failures: the first group alone
        return [_groups()[0]]
    return [and_(group, chosen) for group in _groups()]


def count_listing(store: Store, run_id: str, where: ResultFilter) -> tuple[int, list[int]]:
    """The run's results counted, and the size of each group of the listing ``where``
    names, in one statement (so both describe one state of the run): one pass over the
    run's rows, the scorer's test read once a row.

    Returns:
        How many results the run holds, and the groups' sizes in the listing's order.
    """
    scored = scored_clause(store, run_id, where)
    other = aliased(ResultRow)  # not correlated with the outer rows: the whole run
    everything = (
        select(func.count()).select_from(other).where(other.run_id == run_id).scalar_subquery()
    )
    if scored is None and not where.failing and not where.failures_first:
        query = select(everything)  # every result, by example: the index alone counts
    else:
        chosen = scored if scored is not None else (_failed() if where.failing else true())
        sums: list[ColumnElement[Any]]
        if not where.failures_first:
            sums = [func.count()]
        elif scored is None and where.failing:
            sums = [func.count()]  # the failures alone
        else:  # the scorer's test read once a row, in the WHERE
            sums = [func.sum(case((group, 1), else_=0)) for group in _groups()]
        query = select(everything, *sums).where(ResultRow.run_id == run_id, chosen)
    with store.guard(f"count the results of run {run_id}"), store.session() as session:
        row = session.execute(query).one()
    total = int(row[0] or 0)
    sizes = [int(v or 0) for v in row[1:]]
    return total, sizes or [total]


def sizes_from_counts(where: ResultFilter, counts: OutcomeCounts) -> list[int] | None:
    """The groups' sizes of a listing without a scorer filter, from the run's outcome
    counts; None for a listing by scorer (they do not tell)."""
    if where.scorer is not None:
        return None
    if not where.failures_first:
        return [counts.failed if where.failing else counts.total]
    if where.failing:
        return [counts.failed]
    return [counts.failed, counts.undecided, counts.passed]


class ListingSizes:
    """The groups' sizes of listings, kept per run, its count of results and the filter.

    A run's results are only added, never changed, so its count of results says which
    state its listings' sizes describe; a page of a listing counted for this state is
    then read without counting again. The most recent ``capacity`` listings are kept.
    """

    def __init__(self, capacity: int = 256) -> None:
        """Args: capacity: listings kept."""
        self.capacity = capacity
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, int, ResultFilter], list[int]] = OrderedDict()

    def sizes(self, store: Store, run_id: str, n_done: int, where: ResultFilter) -> list[int]:
        """The sizes of ``where``'s groups over the run as it holds ``n_done`` results:
        kept ones, else counted now (and kept under the count they were made for)."""
        with self._lock:
            found = self._kept.get((run_id, n_done, where))
            if found is not None:
                self._kept.move_to_end((run_id, n_done, where))
                return list(found)
        everything, sizes = count_listing(store, run_id, where)
        with self._lock:
            self._kept[(run_id, everything, where)] = list(sizes)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
        return sizes


def key_of_row(store: Store, run_id: str, row_id: int, where: ResultFilter) -> ResultKey | None:
    """The key in ``where``'s order of the run's result stored as row ``row_id``; None
    when the run holds no such row (a page then reads by position)."""
    group = _rank() if where.failures_first else literal_column("0", Integer)
    query = select(ResultRow.example_id, ResultRow.repetition, group).where(
        ResultRow.id == row_id, ResultRow.run_id == run_id
    )
    with store.guard(f"read the results of run {run_id}"), store.session() as session:
        found = session.execute(query).first()
    if found is None:
        return None
    example_id, repetition, rank = found
    return ResultKey(int(rank), example_id, int(repetition))


def _read(
    session: Session,
    run_id: str,
    group: int,
    where: ColumnElement[bool],
    *,
    descending: bool,
    skip: int,
    take: int,
) -> list[KeyedResult]:
    order = [ResultRow.example_id, ResultRow.repetition]
    query = select(ResultRow).where(ResultRow.run_id == run_id, where)
    query = query.order_by(*(c.desc() for c in order) if descending else order)
    rows = session.scalars(query.offset(skip or None).limit(take)).all()
    read_rows = [
        KeyedResult(_pair_result(r), ResultKey(group, r.example_id, r.repetition), r.id)
        for r in rows
    ]
    return read_rows[::-1] if descending else read_rows


def page_keyed(
    store: Store,
    run_id: str,
    where: ResultFilter,
    sizes: Sequence[int],
    *,
    offset: int,
    limit: int,
    after: ResultKey | None = None,
    before: ResultKey | None = None,
) -> tuple[list[KeyedResult], int]:
    """One page of the listing ``where`` names: the results :func:`~arbiter.store.
    result_pages.page_results` would list at ``offset``, read by key.

    Args:
        store: The store.
        run_id: The run.
        where: Which results, in which order.
        sizes: The size of each group (:func:`count_listing`, :func:`sizes_from_counts`,
            :class:`ListingSizes`); a group of size 0 is not read.
        offset: Position of the page's first result (read by position when neither key
            is given).
        limit: Most results on the page.
        after: The page starts right after this result.
        before: The page ends right before this result (when ``after`` is None).

    Returns:
        The page, and how many results the listing holds.
    """
    conditions = _conditions(where, scored_clause(store, run_id, where))
    groups = [(g, c, n) for g, (c, n) in enumerate(zip(conditions, sizes, strict=True)) if n > 0]
    page: list[KeyedResult] = []
    position = tuple_(ResultRow.example_id, ResultRow.repetition)
    with store.guard(f"read the results of run {run_id}"), store.session() as session:
        if after is not None:
            for group, condition, _ in groups:
                if group < after.group or len(page) >= limit:
                    continue
                if group == after.group:
                    start = tuple_(after.example_id, after.repetition)
                    condition = and_(condition, position > start)
                page += _read(
                    session,
                    run_id,
                    group,
                    condition,
                    descending=False,
                    skip=0,
                    take=limit - len(page),
                )
        elif before is not None:
            for group, condition, _ in reversed(groups):
                if group > before.group or len(page) >= limit:
                    continue
                if group == before.group:
                    end = tuple_(before.example_id, before.repetition)
                    condition = and_(condition, position < end)
                read = _read(
                    session,
                    run_id,
                    group,
                    condition,
                    descending=True,
                    skip=0,
                    take=limit - len(page),
                )
                page = read + page
        else:
            start_at = offset
            for group, condition, size in groups:
                if len(page) >= limit:
                    break
                if start_at >= size:
                    start_at -= size
                    continue
                take = min(limit - len(page), size - start_at)
                if start_at > size // 2:  # nearer the group's end: read back from it
                    skip, descending = size - start_at - take, True
                else:
                    skip, descending = start_at, False
                page += _read(
                    session,
                    run_id,
                    group,
                    condition,
                    descending=descending,
                    skip=skip,
                    take=take,
                )
                start_at = 0
    return page, sum(sizes)


def page_failures_first_keyed(
    store: Store,
    run_id: str,
    counts: OutcomeCounts,
    *,
    failing_only: bool,
    offset: int,
    limit: int,
    after: ResultKey | None = None,
    before: ResultKey | None = None,
) -> tuple[list[KeyedResult], int]:
    """One page of the run's results: failures, then undecided, then passed
    (:func:`page_keyed` with the groups' sizes from the run's outcome counts)."""
    where = ResultFilter(failing=failing_only, failures_first=True)
    sizes = sizes_from_counts(where, counts)
    assert sizes is not None  # no scorer: the counts tell
    return page_keyed(
        store, run_id, where, sizes, offset=offset, limit=limit, after=after, before=before
    )


def page_results(
    store: Store, run_id: str, where: ResultFilter, *, offset: int, limit: int
) -> tuple[list[PairResult], int]:
    """One page of a run's results under ``where``, and how many results match.

    The groups are counted in one SQL aggregate and the page is read from the nearer end
    of its group (:func:`page_keyed`); only the page's rows are read whole.
    """
    _, sizes = count_listing(store, run_id, where)
    page, total = page_keyed(store, run_id, where, sizes, offset=offset, limit=limit)
    return [k.result for k in page], total
