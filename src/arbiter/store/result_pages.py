"""A run's results failures first, a page at a time, as cheap far down the run as at its
top: keyset paging on ``(example_id, repetition)`` within each group.

:func:`arbiter.store.failures_repository.page_failures_first` reads a page by position
(``OFFSET``): the database walks every result before it, so the last page of 100,000
costs several times the first. Here a page that follows another starts right after the
previous page's last result (``after``), or ends right before the next page's first
(``before``), straight off the ``(run_id, example_id, repetition)`` index; a page asked
for by number alone is read from whichever end of its group is nearer, so the last pages
are as cheap as the first.

Groups are those of :mod:`arbiter.store.failures_repository`: failed, undecided, passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, select, tuple_

from arbiter.contract import PairResult
from arbiter.store.failures_repository import OutcomeCounts, _groups
from arbiter.store.models import MAX_ID_CHARS, ResultRow
from arbiter.store.repository import Store, _pair_result

__all__ = ["KeyedResult", "ResultKey", "page_failures_first_keyed"]


@dataclass(frozen=True)
class ResultKey:
    """Where a result sits in the failures-first order: its group, example, repetition."""

    group: int
    """0 failed, 1 undecided, 2 passed."""
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
    """One page of the run's results: failures, then undecided, then passed.

    Args:
        store: The store.
        run_id: The run.
        counts: The run's outcome counts (:func:`~arbiter.store.failures_repository.
            count_outcomes`), for the groups' bounds.
        failing_only: Only the failures.
        offset: Position of the page's first result (read by position when neither key
            is given).
        limit: Most results on the page.
        after: The page starts right after this result.
        before: The page ends right before this result (when ``after`` is None).

    Returns:
        The page, and how many results the listing holds.
    """
    sizes = [counts.failed] if failing_only else [counts.failed, counts.undecided, counts.passed]
    groups = list(zip(range(len(sizes)), _groups(), sizes, strict=False))
    page: list[KeyedResult] = []
    with store.guard(f"read the results of run {run_id}"), store.session() as session:

        def read(
            group: int, where: ColumnElement[bool], *, descending: bool, skip: int, take: int
        ) -> list[KeyedResult]:
            order = [ResultRow.example_id, ResultRow.repetition]
            query = select(ResultRow).where(ResultRow.run_id == run_id, where)
            query = query.order_by(*(c.desc() for c in order) if descending else order)
            rows = session.scalars(query.offset(skip or None).limit(take)).all()
            read_rows = [
                KeyedResult(_pair_result(r), ResultKey(group, r.example_id, r.repetition))
                for r in rows
            ]
            return read_rows[::-1] if descending else read_rows

        position = tuple_(ResultRow.example_id, ResultRow.repetition)
        if after is not None:
            for group, where, _ in groups:
                if group < after.group or len(page) >= limit:
                    continue
                if group == after.group:
                    where = and_(where, position > tuple_(after.example_id, after.repetition))
                page += read(group, where, descending=False, skip=0, take=limit - len(page))
        elif before is not None:
            for group, where, _ in reversed(groups):
                if group > before.group or len(page) >= limit:
                    continue
                if group == before.group:
                    where = and_(where, position < tuple_(before.example_id, before.repetition))
                page = read(group, where, descending=True, skip=0, take=limit - len(page)) + page
        else:
            start = offset
            for group, where, size in groups:
                if len(page) >= limit:
                    break
                if start >= size:
                    start -= size
                    continue
                take = min(limit - len(page), size - start)
                if start > size // 2:  # nearer the group's end: read back from it
                    page += read(group, where, descending=True, skip=size - start - take, take=take)
                else:
                    page += read(group, where, descending=False, skip=start, take=take)
                start = 0
    return page, sum(sizes)
