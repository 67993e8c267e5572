"""A dataset is stored as the one JSON value it always was, its text made example by
example: byte for byte what the JSON column wrote, so every reader of it is unchanged."""

from __future__ import annotations

import gc
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import BindParameter, text

from arbiter.contract import Dataset, Example
from arbiter.store import Store
from arbiter.store.models import DatasetRow
from arbiter.store.report_repository import examples_by_id
from arbiter.store.repository import _TEXT_PIECES

DATASETS = {
    "empty-optional": [Example(id="a", input={})],
    "unicode": [
        Example(id="é-1", input={"q": '日本語 🙂 "quoted" \\ back'}, expected_label="ja"),
        Example(id="é-2", input={"q": "\u2028\t\n"}, cohort="ü", metadata={"ñ": "ø"}),
    ],
    "nested": [
        Example(
            id="n",
            input={"b": [1, 2.5, None, {"c": {"d": []}}], "a": True},
            expected={"k": [True, None]},
            output=[1, "two"],
            metadata={"source": {"file": "x.jsonl", "line": 3}},
        )
    ],
    "more-than-a-piece": [
        Example(id=f"p-{i}", input={"q": "x", "i": i}, expected="x")
        for i in range(_TEXT_PIECES // 2 + 7)  # two examples' pieces each: several joins
    ],
}


def _stored_text(store: Store, content_hash: str) -> str:
    column = "examples" if store.engine.dialect.name == "sqlite" else "examples::text"
    with store.engine.connect() as connection:
        found = connection.execute(
            text(f"SELECT {column} FROM datasets WHERE content_hash = :h"), {"h": content_hash}
        ).scalar_one()
    assert isinstance(found, str)
    return found


def _save_as_before(store: Store, dataset: Dataset) -> None:
    """How 0.5 stored a dataset: the list of every example's dump, through the ORM."""
    with store.session() as session, session.begin():
        session.add(
            DatasetRow(
                content_hash=dataset.content_hash,
                name=dataset.name,
                version=dataset.version,
                n_examples=len(dataset.examples),
                examples=[e.model_dump(mode="json") for e in dataset.examples],
                created_at=datetime.now(UTC),
            )
        )


@pytest.mark.parametrize("examples", DATASETS.values(), ids=DATASETS.keys())
def test_stored_text_is_what_the_json_column_wrote(store: Store, examples: list[Example]) -> None:
    dataset = Dataset(name="d", version="2", examples=examples)
    store.save_dataset(dataset)
    ours = _stored_text(store, dataset.content_hash)
    assert ours == json.dumps([e.model_dump(mode="json") for e in examples])
    with store.engine.begin() as connection:
        connection.execute(text("DELETE FROM datasets"))
    _save_as_before(store, dataset)
    assert _stored_text(store, dataset.content_hash) == ours


@pytest.mark.parametrize("examples", DATASETS.values(), ids=DATASETS.keys())
def test_stored_dataset_loads_back_equal(store: Store, examples: list[Example]) -> None:
    dataset = Dataset(name="d", version="2", examples=examples)
    assert store.save_dataset(dataset) == dataset.content_hash
    loaded = store.load_dataset(dataset.content_hash)
    assert (loaded.name, loaded.version, loaded.examples) == ("d", "2", examples)
    assert loaded.content_hash == dataset.content_hash


def test_dataset_stored_before_loads_back_equal(store: Store) -> None:
    dataset = Dataset(examples=DATASETS["nested"] + DATASETS["unicode"])
    _save_as_before(store, dataset)
    assert store.save_dataset(dataset) == dataset.content_hash  # already there: kept
    assert store.load_dataset(dataset.content_hash).examples == dataset.examples


def test_examples_are_picked_by_id_out_of_the_stored_text(store: Store) -> None:
    dataset = Dataset(examples=DATASETS["unicode"] + DATASETS["nested"])
    store.save_dataset(dataset)
    found = examples_by_id(store, dataset.content_hash, ["n", "é-2"])
    assert found == {"n": DATASETS["nested"][0], "é-2": DATASETS["unicode"][1]}


def test_the_store_keeps_no_copy_of_a_saved_dataset_text(store: Store) -> None:
    """The text is bound when the insert runs: a statement holding it as a value would
    stay in SQLAlchemy's cache of compiled statements, a whole dataset for the store's life."""
    dataset = Dataset(examples=DATASETS["more-than-a-piece"])
    store.save_dataset(dataset)
    gc.collect()
    size = len(_stored_text(store, dataset.content_hash))
    held = [
        o
        for o in gc.get_objects()
        if isinstance(o, BindParameter) and isinstance(o.value, str) and len(o.value) >= size
    ]
    assert held == []
