"""What a column cannot hold is refused before anything is written, on every database.

PostgreSQL enforces the lengths of its varchar columns and SQLite does not: a 250-character
example id used to pass on SQLite and, on PostgreSQL, fail the first result's write after
the run and its dataset were stored, leaving a half-written run behind.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from arbiter.contract import Dataset, Example
from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.models import MAX_ID_CHARS, DatasetRow, RunRow


def _dataset(*ids: str, name: str = "limits", version: str = "1") -> Dataset:
    examples = [Example(id=i, input={}, expected_label="x") for i in ids]
    return Dataset(name=name, version=version, examples=examples)


def _rows(store: Store) -> tuple[int, int]:
    with store.session() as session:
        runs = session.scalar(select(func.count()).select_from(RunRow))
        datasets = session.scalar(select(func.count()).select_from(DatasetRow))
    return int(runs or 0), int(datasets or 0)


@pytest.mark.parametrize(
    ("dataset", "name", "message"),
    [
        (
            _dataset("ok", "a" * (MAX_ID_CHARS + 50)),
            None,
            "dataset 'limits': example 2 has an id of 250 characters",
        ),
        (_dataset("ok", name="n" * 201), None, "the name has 201 characters"),
        (_dataset("ok", version="v" * 101), None, "the version has 101 characters"),
        (_dataset("ok"), "r" * 201, "the run name has 201 characters"),
    ],
)
def test_too_long_for_its_column_is_refused_before_any_write(
    store: Store, dataset: Dataset, name: str | None, message: str
) -> None:
    with pytest.raises(InputError, match=message) as caught:
        store.create_run(dataset=dataset, system={}, config={}, n_pairs=2, name=name)
    assert caught.value.exit_code == 3
    assert _rows(store) == (0, 0)


def test_an_id_of_the_longest_length_is_stored_and_read_back(store: Store) -> None:
    from arbiter.contract import Output, PairResult

    longest = "z" * MAX_ID_CHARS
    run_id = store.create_run(dataset=_dataset(longest), system={}, config={}, n_pairs=1)
    store.add_results(
        run_id,
        [PairResult(example_id=longest, repetition=0, output=Output(label="x"), latency_ms=1.0)],
    )
    assert [r.example_id for r in store.results(run_id)] == [longest]
