"""Paged reads of results: SQLite's JSON1 filter by scorer agrees with the portable one."""

from __future__ import annotations

import pytest

from arbiter.contract import Dataset, Example, Output, PairResult, Score
from arbiter.store import Store
from arbiter.store.browse_repository import ResultFilter, _scored_ids
from arbiter.store.models import ResultRow
from arbiter.store.result_pages import page_results


def _result(i: int) -> PairResult:
    # exact: fails every third, abstains every fifth; casefold: passes all but every seventh
    exact = Score(name="exact", passed=None if i % 5 == 0 else i % 3 != 0, value=1.0)
    casefold = Score(name='case\'fold "x"', passed=i % 7 != 0, value=1.0)
    scores = [exact, casefold] if i % 4 else [casefold]  # every fourth lacks exact
    passed = all(s.passed is not False for s in scores)
    return PairResult(
        example_id=f"e{i:03d}",
        repetition=0,
        output=Output(id=str(i), text="t"),
        scores=scores,
        passed=passed,
        latency_ms=1.0,
    )


@pytest.fixture
def run_id(store: Store) -> str:
    data = Dataset(name="d", version="1", examples=[Example(id="e", input={}, expected_label="a")])
    made = store.create_run(dataset=data, system={"kind": "python"}, config={}, n_pairs=60)
    store.add_results(made, [_result(i) for i in range(60)])
    return made


@pytest.mark.parametrize("scorer", ["exact", 'case\'fold "x"', "missing"])
@pytest.mark.parametrize("failing", [False, True])
@pytest.mark.parametrize("failures_first", [False, True])
def test_the_scorer_filter_in_sql_matches_the_portable_one(
    store: Store, run_id: str, scorer: str, failing: bool, failures_first: bool
) -> None:
    where = ResultFilter(failing=failing, scorer=scorer, failures_first=failures_first)
    results, total = page_results(store, run_id, where, offset=0, limit=500)
    order = [ResultRow.example_id, ResultRow.repetition]
    portable = _scored_ids(store, run_id, scorer, failing, order)
    assert total == len(portable) == len(results)
    assert sorted(r.example_id for r in results) == sorted(
        f"e{i:03d}"
        for i in range(60)
        if any(s.name == scorer and (not failing or s.passed is False) for s in _result(i).scores)
    )


def test_pages_tile_the_filtered_results(store: Store, run_id: str) -> None:
    where = ResultFilter(failing=True, failures_first=True)
    _, total = page_results(store, run_id, where, offset=0, limit=1)
    seen = []
    for offset in range(0, total, 7):
        page, _ = page_results(store, run_id, where, offset=offset, limit=7)
        seen += [r.example_id for r in page]
    assert len(seen) == len(set(seen)) == total
    assert total == sum(1 for i in range(60) if not _result(i).passed)
