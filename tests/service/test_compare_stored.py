"""compare_runs reads per-example figures counted in SQL, not the runs' whole results, and
makes the very comparison diff_runs makes of the whole results: the same deltas, the same
seeded paired-bootstrap intervals, the same flips in the same order, the same warnings.

On SQLite and, when ARBITER_TEST_POSTGRES_URL names a server, on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, null

from arbiter.contract import Dataset, Output, PairResult, RunConfig, Score
from arbiter.errors import StoreError
from arbiter.service.compare import Comparison, compare_loaded, compare_runs
from arbiter.service.runs import load_run
from arbiter.store import Store
from arbiter.store.models import ResultRow
from tests.service.compare_runs_data import SCORERS_A, SCORERS_B, examples, seed_run


def _whole(store: Store, run_a: str, run_b: str) -> Comparison:
    """The comparison as made before: both runs read whole, then diff_runs."""
    return compare_loaded(load_run(store, run_a), load_run(store, run_b))


def _assert_same(store: Store, run_a: str, run_b: str) -> Comparison:
    expected = _whole(store, run_a, run_b)
    found = compare_runs(store, run_a, run_b)
    assert found.diff.model_dump() == expected.diff.model_dump()
    assert found.warnings == expected.warnings
    return found


@pytest.mark.parametrize("seeds", [(1, 2), (3, 4), (5, 6)])
def test_runs_of_one_dataset_compare_as_their_whole_results_do(
    store: Store, seeds: tuple[int, int]
) -> None:
    data = Dataset(name="shared", version="1", examples=examples(90))
    run_a = seed_run(store, data, SCORERS_A, seed=seeds[0], run_seed=seeds[0])
    run_b = seed_run(store, data, SCORERS_B, seed=seeds[1])
    found = _assert_same(store, run_a, run_b)
    # The data reach every path: flips both ways per scorer, abstentions, a measured value,
    # examples of one side only, a scorer of one side only.
    assert found.diff.broken
    assert found.diff.fixed
    assert all(s.abstained for s in found.diff.scorers if s.name != "label")
    assert found.diff.only_in_a or found.diff.only_in_b
    assert found.diff.scorers_only_in_b == ["regex"]
    f1 = next(s for s in found.diff.scorers if s.name == "f1_tokens")
    assert "mean value" in [d.name for d in f1.deltas]
    assert any(f.reason.startswith("the call failed") for f in found.diff.broken + found.diff.fixed)
    _assert_same(store, run_b, run_a)


def test_runs_of_other_datasets_and_a_limit_compare_as_their_whole_results_do(
    store: Store,
) -> None:
    data_a = Dataset(name="first", version="1", examples=examples(80))
    later = examples(60)[20:] + examples(30, salt="-b")
    data_b = Dataset(name="second", version="2", examples=list(reversed(later)))
    run_a = seed_run(store, data_a, SCORERS_A, seed=11, limit=70, k=1)
    run_b = seed_run(store, data_b, SCORERS_B, seed=12)
    found = _assert_same(store, run_a, run_b)
    assert found.diff.only_in_a
    assert found.diff.only_in_b
    assert any("dataset" in w for w in found.warnings)
    _assert_same(store, run_b, run_a)


def test_a_run_compared_with_itself_reads_the_same_as_before(store: Store) -> None:
    data = Dataset(name="shared", version="1", examples=examples(40))
    run_id = seed_run(store, data, SCORERS_A, seed=21)
    found = _assert_same(store, run_id, run_id)
    assert found.diff.broken == found.diff.fixed == []


def _legacy_rows(store: Store, run_id: str, data: Dataset) -> None:
    """Results as a store of schema 1 holds them: no scores, a label and ``correct``."""
    rows: list[dict[str, Any]] = []
    for i, example in enumerate(data.examples):
        row: dict[str, Any] = {
            "run_id": run_id,
            "example_id": example.id,
            "repetition": 0,
            "label": None if i % 7 == 0 else ("yes" if i % 2 else "no"),
            "correct": i % 3 != 0,
            "error_type": "Timeout" if i % 11 == 0 else None,
            "error_message": None,
            "latency_ms": 1.0,
            "attempts": 1,
            "completed_at": datetime.now(UTC),
            # SQL NULL on some rows, JSON null on the others: both read as no scores.
            "scores": null() if i % 2 else None,
            "output": None,
            "passed": None,
        }
        rows.append(row)
    with store.engine.begin() as connection:
        for row in rows:
            connection.execute(insert(ResultRow.__table__), [row])  # type: ignore[arg-type]


def test_results_of_schema_1_compare_as_their_whole_results_do(store: Store) -> None:
    data = Dataset(name="old", version="1", examples=examples(40))
    legacy = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "m:old"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=len(data.examples),
    )
    _legacy_rows(store, legacy, data)
    current = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "m:new"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=len(data.examples),
    )
    store.add_results(
        current,
        [
            PairResult(
                example_id=e.id,
                repetition=0,
                output=Output(label="yes"),
                scores=[Score(name="label", passed=i % 2 == 0, value=float(i % 2 == 0))],
                passed=i % 2 == 0,
                latency_ms=1.0,
            )
            for i, e in enumerate(data.examples)
        ],
    )
    found = _assert_same(store, legacy, current)
    assert found.diff.broken
    assert found.diff.fixed
    _assert_same(store, current, legacy)


def test_only_the_first_flips_are_read_with_their_texts(store: Store) -> None:
    data = Dataset(name="shared", version="1", examples=examples(90))
    run_a = seed_run(store, data, SCORERS_A, seed=31)
    run_b = seed_run(store, data, SCORERS_A, seed=32)
    whole = compare_runs(store, run_a, run_b)
    capped = compare_runs(store, run_a, run_b, flip_texts=2)
    assert len(whole.diff.broken) > 2
    for flips, full in [
        (capped.diff.broken, whole.diff.broken),
        (capped.diff.fixed, whole.diff.fixed),
    ]:
        assert flips[:2] == full[:2]
        assert [f.example_id for f in flips] == [f.example_id for f in full]
        assert all(f.answer_a is f.answer_b is f.expected is None for f in flips[2:])
    assert capped.diff.deltas == whole.diff.deltas


def test_a_comparison_never_reads_a_run_whole(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = Dataset(name="shared", version="1", examples=examples(30))
    run_a = seed_run(store, data, SCORERS_A, seed=41)
    run_b = seed_run(store, data, SCORERS_A, seed=42)

    def whole(self: Store, run_id: str) -> list[PairResult]:
        raise AssertionError(f"run {run_id} read whole")

    monkeypatch.setattr(Store, "results", whole)
    monkeypatch.setattr(Store, "load_dataset", lambda self, h: pytest.fail("dataset read"))
    assert compare_runs(store, run_a, run_b).diff.n_common > 0


def test_a_run_without_results_is_refused_as_before(store: Store) -> None:
    data = Dataset(name="shared", version="1", examples=examples(5))
    done = seed_run(store, data, SCORERS_A, seed=51)
    empty = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "m:f"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=5,
    )
    with pytest.raises(StoreError, match=f"run {empty} has no results yet"):
        compare_runs(store, done, empty)
