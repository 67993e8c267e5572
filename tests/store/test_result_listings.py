"""Every listing of a run's results read by key gives the pages reading by position gave.

The reference is the paging as it was (``OFFSET`` under each filter, failures first by a
computed rank), copied here; the run mixes passes, failures, abstentions, failed calls,
results of schema 1, repetitions, a gating and a non-gating scorer, a scorer some results
lack and a name that needs quoting. Each listing is read by number (every page), forward
from each page's last key, backward from each page's first key, and forward from the
row the REST cursor names. On SQLite and, when ARBITER_TEST_POSTGRES_URL names a server,
on PostgreSQL.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import and_, case, func, select, update

from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score
from arbiter.service.browse import list_keyed_results
from arbiter.store import Store
from arbiter.store.browse_repository import (
    ResultFilter,
    _failed,
    _scored_ids,
    _sqlite_scored,
)
from arbiter.store.models import ResultRow
from arbiter.store.repository import _pair_result
from arbiter.store.result_pages import (
    ListingSizes,
    ResultKey,
    count_listing,
    key_of_row,
    page_keyed,
    page_results,
)

SIZE = 5
SCORERS = ["exact", 'style "x"', "rare", "missing"]


def _results(n: int) -> tuple[list[PairResult], list[tuple[str, int, bool]]]:
    """The run's results, and the pairs to be stored as of schema 1 (with ``correct``)."""
    rnd = random.Random(21)
    results = []
    legacy = []
    for i in range(n):
        example_id = f"ex-{rnd.randrange(10**5):05d}-{i}"
        for repetition in range(2):
            kind = rnd.choice(["scored", "scored", "scored", "error", "legacy"])
            if kind == "error":
                results.append(
                    PairResult(
                        example_id=example_id,
                        repetition=repetition,
                        passed=False,
                        error_type="Timeout",
                        latency_ms=1.0,
                    )
                )
                continue
            exact = rnd.choice([True, True, False, None])  # gating
            style = rnd.choice([True, False])  # not gating: fails inside passed results
            scores = [Score(name="exact", passed=exact), Score(name='style "x"', passed=style)]
            if rnd.random() < 0.2:
                scores.append(Score(name="rare", passed=rnd.choice([True, False])))
            results.append(
                PairResult(
                    example_id=example_id,
                    repetition=repetition,
                    output=Output(label="a"),
                    scores=scores,
                    passed=exact,
                    latency_ms=1.0,
                )
            )
            if kind == "legacy":
                legacy.append((example_id, repetition, rnd.choice([True, False])))
    return results, legacy


@pytest.fixture
def run_id(store: Store) -> str:
    return seed_mixed(store)


def seed_mixed(store: Store) -> str:
    """A run of 200 results (100 examples, k = 2) of every kind the listings tell apart."""
    results, legacy = _results(100)
    examples = sorted({r.example_id for r in results})
    made = store.create_run(
        dataset=Dataset(
            name="mixed", version="1", examples=[Example(id=e, input={}) for e in examples]
        ),
        system={"kind": "python", "target": "m:f"},
        config=RunConfig(k=2).model_dump(mode="json"),
        n_pairs=len(results),
    )
    store.add_results(made, results)
    with store.engine.begin() as connection:  # schema 1: no scores, no passed, a correct
        for example_id, repetition, correct in legacy:
            connection.execute(
                update(ResultRow)
                .where(
                    ResultRow.run_id == made,
                    ResultRow.example_id == example_id,
                    ResultRow.repetition == repetition,
                )
                .values(scores=None, passed=None, correct=correct)
            )
    return made


def _old_page_results(
    store: Store, run_id: str, where: ResultFilter, *, offset: int, limit: int
) -> tuple[list[PairResult], int]:
    """``page_results`` as it was before keyset paging (by position, rank sorted)."""
    failed = _failed()
    order: list[Any] = [ResultRow.example_id, ResultRow.repetition]
    if where.failures_first:
        rank = case((failed, 0), (ResultRow.passed.is_(None), 1), else_=2)
        order = [rank, *order]
    condition: Any = ResultRow.run_id == run_id
    if where.scorer is not None and store.engine.dialect.name != "sqlite":
        ids = _scored_ids(store, run_id, where.scorer, where.failing, order)
        chosen = ids[offset : offset + limit]
        with store.session() as session:
            rows = {
                r.id: r for r in session.scalars(select(ResultRow).where(ResultRow.id.in_(chosen)))
            }
        return [_pair_result(rows[i]) for i in chosen], len(ids)
    if where.scorer is not None:
        condition = and_(condition, _sqlite_scored(where.scorer, where.failing))
    elif where.failing:
        condition = and_(condition, failed)
    with store.session() as session:
        total = session.scalar(select(func.count()).select_from(ResultRow).where(condition))
        rows_page = session.scalars(
            select(ResultRow).where(condition).order_by(*order).offset(offset).limit(limit)
        ).all()
        return [_pair_result(r) for r in rows_page], int(total or 0)


def _ids(results: list[PairResult]) -> list[tuple[str, int]]:
    return [(r.example_id, r.repetition) for r in results]


WHERE = [
    ResultFilter(failing=failing, scorer=scorer, failures_first=first)
    for scorer in [None, *SCORERS]
    for failing in (False, True)
    for first in (False, True)
]


@pytest.mark.parametrize("where", WHERE, ids=str)
def test_every_listing_read_by_key_gives_the_old_pages(
    store: Store, run_id: str, where: ResultFilter
) -> None:
    _, old_total = _old_page_results(store, run_id, where, offset=0, limit=1)
    old = [
        _ids(_old_page_results(store, run_id, where, offset=o, limit=SIZE)[0])
        for o in range(0, old_total, SIZE)
    ]
    everything, sizes = count_listing(store, run_id, where)
    assert everything == 200
    assert sum(sizes) == old_total
    if where.scorer != "missing":
        assert old_total > SIZE  # the listing spans pages

    def keyed(offset: int, **key: ResultKey | None) -> list[tuple[ResultKey, tuple[str, int]]]:
        page, total = page_keyed(store, run_id, where, sizes, offset=offset, limit=SIZE, **key)
        assert total == old_total
        return [(k.key, (k.result.example_id, k.result.repetition)) for k in page]

    numbered = [[i for _, i in keyed(o)] for o in range(0, old_total, SIZE)]
    assert numbered == old
    assert [
        _ids(page_results(store, run_id, where, offset=o, limit=SIZE)[0])
        for o in range(0, old_total, SIZE)
    ] == old
    forward, after = [], None
    for _ in old:
        page = keyed(0, after=after)
        forward.append([i for _, i in page])
        after = page[-1][0]
    assert forward == old
    assert after is None or keyed(0, after=after) == []
    if old:
        before = keyed(SIZE * (len(old) - 1))[0][0]
        for number in reversed(range(len(old) - 1)):
            page = keyed(0, before=before)
            assert [i for _, i in page] == old[number]
            before = page[0][0]
        assert keyed(0, before=before) == []


@pytest.mark.parametrize("where", WHERE[::3], ids=str)
def test_a_listing_paged_from_the_row_a_cursor_names_gives_the_old_pages(
    store: Store, run_id: str, where: ResultFilter
) -> None:
    _, total = _old_page_results(store, run_id, where, offset=0, limit=1)
    old = _ids(_old_page_results(store, run_id, where, offset=0, limit=1000)[0])
    sizes = ListingSizes()
    seen: list[tuple[str, int]] = []
    row: int | None = None
    offset = 0
    while True:
        page = list_keyed_results(
            store, run_id, where, viewer=None, offset=offset, limit=SIZE, after_row=row, sizes=sizes
        )
        assert page.total == total
        if not page.items:
            break
        seen += [(k.result.example_id, k.result.repetition) for k in page.items]
        row, offset = page.items[-1].row_id, offset + SIZE
        assert key_of_row(store, run_id, row, where) == page.items[-1].key
    assert seen == old


def test_a_row_of_another_run_names_no_key(store: Store, run_id: str) -> None:
    with store.session() as session:
        row = session.scalar(select(ResultRow.id).where(ResultRow.run_id == run_id).limit(1))
    assert row is not None
    assert key_of_row(store, run_id, row, ResultFilter()) is not None
    assert key_of_row(store, "no-such-run", row, ResultFilter()) is None


def test_kept_sizes_are_those_of_the_run_as_it_holds_its_results(store: Store, run_id: str) -> None:
    sizes = ListingSizes(capacity=2)
    where = ResultFilter(failing=True, scorer="exact", failures_first=True)
    counted = sizes.sizes(store, run_id, 200, where)
    assert counted == count_listing(store, run_id, where)[1]
    store.add_results(
        run_id,
        [
            PairResult(
                example_id="late",
                repetition=0,
                output=Output(label="a"),
                scores=[Score(name="exact", passed=False)],
                passed=False,
                latency_ms=1.0,
            )
        ],
    )
    assert sizes.sizes(store, run_id, 200, where) == counted  # the state of 200 results
    grown = sizes.sizes(store, run_id, 201, where)
    assert grown == [counted[0] + 1, *counted[1:]]
