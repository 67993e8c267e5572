"""Layer 3, consistency: neighbours' labels against the item's, with the embedded store."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import pytest

from arbiter.contract import ConsistencyResult, Prediction
from arbiter.errors import InputError, ProviderUnavailable
from arbiter.online.consistency import canonical_text, field_text, score_consistency
from arbiter.vectors.base import VectorItem
from arbiter.vectors.stores import EmbeddedVectorStore

THRESHOLD = 0.9


def at(similarity: float) -> list[float]:
    """A unit vector whose cosine with [1, 0] is ``similarity``."""
    return [similarity, math.sqrt(1.0 - similarity**2)]


class TableEmbedder:
    """A deterministic embedder: each text maps to a fixed vector; every text is kept."""

    name = "table"
    dimension = 2

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table = table or {}
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [self.table.get(text, [1.0, 0.0]) for text in texts]


class DownEmbedder:
    """An embedder whose server is down."""

    name = "down"
    dimension = 2

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ProviderUnavailable("ollama nomic-embed-text: unreachable at http://ollama:11434")


def prediction(label: str = "high", id: str = "p-1") -> Prediction:
    return Prediction(id=id, label=label, raw_output={"text": "query", "status": label})


async def seeded(*neighbours: tuple[str, float, str | None]) -> EmbeddedVectorStore:
    store = EmbeddedVectorStore()
    items = [
        VectorItem(id=id, vector=at(sim), metadata={} if label is None else {"label": label})
        for id, sim, label in neighbours
    ]
    if items:
        await store.upsert("transactions", items)
    return store


async def score(
    store: EmbeddedVectorStore, item: Prediction | None = None, **options: Any
) -> ConsistencyResult:
    """Score ``item`` against ``store`` with the defaults of these tests, overridable."""
    defaults: dict[str, Any] = {"embedder": TableEmbedder(), "namespace": "transactions"}
    return await score_consistency(
        item or prediction(), store=store, threshold=THRESHOLD, **{**defaults, **options}
    )


async def test_agrees_with_the_majority_label_above_threshold() -> None:
    store = await seeded(("a", 0.99, "high"), ("b", 0.95, "high"), ("c", 0.92, "low"))
    result = await score(store)
    assert result.agrees is True
    assert [(n.id, n.label) for n in result.neighbours] == [
        ("a", "high"),
        ("b", "high"),
        ("c", "low"),
    ]
    assert [n.similarity for n in result.neighbours] == pytest.approx([0.99, 0.95, 0.92])
    assert result.threshold == THRESHOLD


async def test_disagrees_when_another_label_holds_the_majority() -> None:
    store = await seeded(("a", 0.99, "low"), ("b", 0.97, "low"), ("c", 0.96, "high"))
    assert (await score(store)).agrees is False


async def test_neighbours_below_threshold_are_reported_but_do_not_vote() -> None:
    store = await seeded(("a", 0.95, "high"), ("b", 0.85, "low"), ("c", 0.80, "low"))
    result = await score(store)
    assert result.agrees is True
    assert [n.id for n in result.neighbours] == ["a", "b", "c"]


async def test_no_neighbour_above_threshold_is_unknown_not_agreement() -> None:
    store = await seeded(("a", 0.5, "high"), ("b", 0.3, "high"))
    result = await score(store)
    assert result.agrees is None
    assert len(result.neighbours) == 2


async def test_an_empty_namespace_is_unknown() -> None:
    result = await score(EmbeddedVectorStore())
    assert (result.agrees, result.neighbours) == (None, [])


@pytest.mark.parametrize(("label", "agrees"), [("high", None), ("low", None), ("medium", False)])
async def test_a_tie_for_first_place_is_no_majority(label: str, agrees: bool | None) -> None:
    store = await seeded(("a", 0.99, "high"), ("b", 0.98, "low"))
    assert (await score(store, prediction(label))).agrees is agrees


async def test_neighbours_without_a_label_do_not_vote() -> None:
    store = await seeded(("a", 0.99, None), ("b", 0.98, None), ("c", 0.95, "high"))
    result = await score(store)
    assert result.agrees is True
    assert [n.label for n in result.neighbours] == [None, None, "high"]


async def test_top_k_bounds_the_neighbours() -> None:
    store = await seeded(*[(f"n{i}", 0.99 - i / 100, "high") for i in range(8)])
    assert len((await score(store, top_k=3)).neighbours) == 3


async def test_upsert_stores_the_scored_item_with_its_label() -> None:
    store = await seeded(("a", 0.99, "low"))
    result = await score(store, prediction("high", id="p-7"), upsert=True)
    assert result.agrees is False
    stored = await store.query("transactions", [1.0, 0.0], top_k=5)
    assert [(m.id, m.metadata) for m in stored] == [
        ("p-7", {"label": "high"}),
        ("a", {"label": "low"}),
    ]


async def test_a_stored_item_is_not_its_own_neighbour() -> None:
    store = await seeded(("a", 0.99, "low"), ("b", 0.98, "low"))
    await score(store, prediction("high", id="p-7"), upsert=True)
    again = await score(store, prediction("high", id="p-7"), top_k=2, upsert=True)
    assert [n.id for n in again.neighbours] == ["a", "b"]
    assert again.agrees is False


async def test_without_an_id_the_item_is_stored_under_a_content_hash() -> None:
    store = EmbeddedVectorStore()
    await score(store, prediction(id=""), upsert=True)
    [stored] = await store.query("transactions", [1.0, 0.0])
    text = '{"status":"high","text":"query"}'
    assert stored.id == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


async def test_not_upserting_leaves_the_store_unchanged() -> None:
    store = EmbeddedVectorStore()
    await score(store)
    assert await store.query("transactions", [1.0, 0.0]) == []


async def test_an_embedder_failure_raises_the_provider_error_and_stores_nothing() -> None:
    store = EmbeddedVectorStore()
    with pytest.raises(ProviderUnavailable, match="unreachable"):
        await score(store, embedder=DownEmbedder(), upsert=True)
    assert await store.query("transactions", [1.0, 0.0]) == []


async def test_a_namespace_of_another_dimension_raises_an_input_error() -> None:
    store = EmbeddedVectorStore()
    await store.upsert("transactions", [VectorItem(id="x", vector=[1.0, 0.0, 0.0])])
    with pytest.raises(InputError, match="holds 3-dim vectors; got 2"):
        await score(store)


async def test_the_default_text_is_raw_output_as_canonical_json() -> None:
    embedder = TableEmbedder()
    item = Prediction(id="p", label="low", raw_output={"b": 1, "a": "é", "c": [2, 1]})
    await score(EmbeddedVectorStore(), item, embedder=embedder)
    assert embedder.texts == ['{"a":"é","b":1,"c":[2,1]}']
    assert canonical_text(item) == embedder.texts[0]


async def test_a_configured_field_is_embedded_instead() -> None:
    embedder = TableEmbedder({"query": at(0.99)})
    store = await seeded(("a", 0.99, "high"))
    result = await score(store, embedder=embedder, text_of=field_text("text"))
    assert embedder.texts == ["query"]
    assert result.neighbours[0].similarity == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("item", "text_of", "message"),
    [
        (Prediction(id="p", label="low"), None, "raw_output is empty"),
        (Prediction(id="p", label="low", raw_output={"x": 1}), field_text("text"), "'text'"),
        (Prediction(id="p", label="low", raw_output={"text": " "}), field_text("text"), "'text'"),
    ],
)
async def test_nothing_to_embed_is_an_input_error(
    item: Prediction, text_of: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        await score(EmbeddedVectorStore(), item, text_of=text_of)
