"""The embedded store: exact cosine top-k, namespaces, persistence, dimension checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arbiter.errors import InputError, StoreError, StoreUnavailable
from arbiter.vectors.base import VectorItem, VectorStore
from arbiter.vectors.stores import EmbeddedVectorStore


def items_of(matrix: np.ndarray, prefix: str = "v") -> list[VectorItem]:
    # model_construct: pydantic validating millions of floats is not what is tested here.
    return [
        VectorItem.model_construct(id=f"{prefix}{i}", vector=row, metadata={"row": i})
        for i, row in enumerate(matrix.tolist())
    ]


def listing(folder: Path, pattern: str = "*") -> list[str]:
    """Names of the files under ``folder`` that match ``pattern`` (sync: kept out of tests)."""
    return sorted(path.name for path in folder.rglob(pattern))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def brute_force(unit: np.ndarray, query: np.ndarray, k: int) -> tuple[list[int], np.ndarray]:
    """Rows of the ``k`` highest cosine similarities, in float64 (``unit``: unit rows)."""
    scores = unit @ (query / np.linalg.norm(query))
    order = np.argsort(-scores, kind="stable")[:k]
    return order.tolist(), scores[order]


def test_is_a_vector_store() -> None:
    assert isinstance(EmbeddedVectorStore(), VectorStore)


@pytest.mark.parametrize(("n", "top_k"), [(500, 1), (500, 10), (2000, 50), (7, 20)])
async def test_top_k_equals_brute_force_on_random_data(n: int, top_k: int) -> None:
    rng = np.random.default_rng(n + top_k)
    matrix = rng.standard_normal((n, 64))
    store = EmbeddedVectorStore()
    await store.upsert("t", items_of(matrix))
    for query in rng.standard_normal((5, 64)):
        matches = await store.query("t", query.tolist(), top_k=top_k)
        expected_rows, expected_scores = brute_force(unit_rows(matrix), query, top_k)
        assert [m.id for m in matches] == [f"v{row}" for row in expected_rows]
        np.testing.assert_allclose([m.score for m in matches], expected_scores, atol=1e-5)
        assert [m.metadata for m in matches] == [{"row": row} for row in expected_rows]


async def test_scores_are_cosine_similarities_best_first() -> None:
    store = EmbeddedVectorStore()
    await store.upsert(
        "t",
        [
            VectorItem(id="same", vector=[2.0, 0.0]),
            VectorItem(id="right-angle", vector=[0.0, 5.0]),
            VectorItem(id="opposite", vector=[-1.0, 0.0]),
            VectorItem(id="diagonal", vector=[1.0, 1.0]),
        ],
    )
    matches = await store.query("t", [3.0, 0.0], top_k=4)
    assert [m.id for m in matches] == ["same", "diagonal", "right-angle", "opposite"]
    np.testing.assert_allclose([m.score for m in matches], [1.0, 2**-0.5, 0.0, -1.0], atol=1e-6)


async def test_namespaces_are_isolated_and_may_differ_in_dimension() -> None:
    store = EmbeddedVectorStore()
    await store.upsert("a", [VectorItem(id="x", vector=[1.0, 0.0], metadata={"ns": "a"})])
    await store.upsert("b", [VectorItem(id="x", vector=[0.0, 1.0, 0.0], metadata={"ns": "b"})])
    await store.upsert("", [VectorItem(id="y", vector=[1.0])])
    [in_a] = await store.query("a", [1.0, 0.0])
    [in_b] = await store.query("b", [1.0, 0.0, 0.0])
    assert (in_a.metadata, in_a.score) == ({"ns": "a"}, pytest.approx(1.0))
    assert (in_b.metadata, in_b.score) == ({"ns": "b"}, pytest.approx(0.0, abs=1e-7))
    assert [m.id for m in await store.query("", [2.0])] == ["y"]
    assert await store.query("never-written", [1.0, 0.0]) == []


async def test_upsert_replaces_vector_and_metadata_of_the_same_id() -> None:
    store = EmbeddedVectorStore()
    await store.upsert("t", [VectorItem(id="a", vector=[1, 0], metadata={"label": "old"})])
    await store.upsert("t", [VectorItem(id="b", vector=[1, 1])])
    await store.upsert("t", [VectorItem(id="a", vector=[0, 1], metadata={"label": "new"})])
    matches = await store.query("t", [0, 1], top_k=10)
    assert [(m.id, m.metadata) for m in matches] == [("a", {"label": "new"}), ("b", {})]
    assert matches[0].score == pytest.approx(1.0)


async def test_the_last_of_duplicate_ids_in_one_upsert_wins() -> None:
    store = EmbeddedVectorStore()
    await store.upsert(
        "t",
        [
            VectorItem(id="a", vector=[1, 0], metadata={"n": 1}),
            VectorItem(id="a", vector=[0, 1], metadata={"n": 2}),
        ],
    )
    assert [(m.id, m.metadata) for m in await store.query("t", [0, 1], top_k=5)] == [
        ("a", {"n": 2})
    ]


async def test_persisted_namespaces_round_trip_through_a_new_store(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((300, 16))
    writer = EmbeddedVectorStore(tmp_path)
    await writer.upsert("first", items_of(matrix[:200]))
    await writer.upsert("first", items_of(matrix[200:], prefix="w"))
    await writer.upsert("first", [VectorItem(id="v3", vector=[1.0] * 16, metadata={"é": "ü"})])
    await writer.upsert("second", [VectorItem(id="s", vector=[1.0, 2.0])])
    query = rng.standard_normal(16).tolist()
    before = await writer.query("first", query, top_k=20)

    reader = EmbeddedVectorStore(tmp_path)
    assert await reader.query("first", query, top_k=20) == before
    assert [m.metadata for m in await reader.query("first", [1.0] * 16, top_k=1)] == [{"é": "ü"}]
    assert [m.id for m in await reader.query("second", [1.0, 2.0])] == ["s"]
    assert listing(tmp_path, "*.tmp") == []


async def test_many_small_upserts_are_merged_and_survive_a_restart(tmp_path: Path) -> None:
    store = EmbeddedVectorStore(tmp_path)
    for i in range(40):
        await store.upsert("t", [VectorItem(id=f"i{i % 25}", vector=[1.0, i], metadata={"i": i})])
    assert len(listing(tmp_path / "t", "seg-*.npz")) < 20  # merged, not one per upsert
    query = [1.0, 10.0]
    reloaded = EmbeddedVectorStore(tmp_path)
    assert await reloaded.query("t", query, top_k=25) == await store.query("t", query, top_k=25)
    assert len(await reloaded.query("t", query, top_k=100)) == 25


async def test_a_crashed_write_left_behind_is_ignored(tmp_path: Path) -> None:
    await EmbeddedVectorStore(tmp_path).upsert("t", [VectorItem(id="a", vector=[1, 0])])
    (tmp_path / "t" / "tmpabc.tmp").write_bytes(b"half a segment")
    assert [m.id for m in await EmbeddedVectorStore(tmp_path).query("t", [1, 0])] == ["a"]
    assert not (tmp_path / "t" / "tmpabc.tmp").exists()


async def test_a_corrupt_segment_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "seg-00000001.npz").write_bytes(b"not a zip")
    with pytest.raises(StoreError, match="corrupt"):
        await EmbeddedVectorStore(tmp_path).query("t", [1.0])


async def test_an_unwritable_folder_is_store_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = EmbeddedVectorStore(blocker)
    with pytest.raises(StoreUnavailable, match="cannot write"):
        await store.upsert("t", [VectorItem(id="a", vector=[1.0])])
    assert await store.query("t", [1.0]) == []


@pytest.mark.parametrize("persisted", [False, True])
async def test_a_dimension_mismatch_raises_at_the_first_call(
    tmp_path: Path, persisted: bool
) -> None:
    path = tmp_path if persisted else None
    store = EmbeddedVectorStore(path)
    await store.upsert("x", [VectorItem(id="a", vector=[0.5] * 384)])
    fresh = EmbeddedVectorStore(path) if persisted else store
    message = "namespace 'x' holds 384-dim vectors; got 768"
    with pytest.raises(InputError, match=message):
        await fresh.query("x", [0.5] * 768)
    with pytest.raises(InputError, match=message):
        await fresh.upsert("x", [VectorItem(id="b", vector=[0.5] * 768)])
    assert [m.id for m in await fresh.query("x", [0.5] * 384)] == ["a"]


@pytest.mark.parametrize(
    ("vector", "message"),
    [([0.0, 0.0], "zero vector"), ([float("nan"), 1.0], "NaN"), ([], "non-empty")],
)
async def test_vectors_without_a_direction_are_refused(vector: list[float], message: str) -> None:
    store = EmbeddedVectorStore()
    await store.upsert("t", [VectorItem(id="a", vector=[1.0, 0.0])])
    with pytest.raises(InputError, match=message):
        await store.query("t", vector)
    if vector:
        with pytest.raises(InputError, match=message):
            await store.upsert("t", [VectorItem(id="b", vector=vector)])


async def test_one_upsert_of_mixed_dimensions_is_refused() -> None:
    items = [VectorItem(id="a", vector=[1.0]), VectorItem(id="b", vector=[1.0, 2.0])]
    with pytest.raises(InputError, match=r"mixes vectors of dimensions \[1, 2\]"):
        await EmbeddedVectorStore().upsert("t", items)


@pytest.mark.parametrize("namespace", ["../up", "a/b", "_hidden", "x" * 129])
async def test_unsafe_namespace_names_are_refused(namespace: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="namespace"):
        await EmbeddedVectorStore(tmp_path).upsert(namespace, [VectorItem(id="a", vector=[1])])
    assert listing(tmp_path) == []


async def test_metadata_that_is_not_json_is_refused_when_persisting(tmp_path: Path) -> None:
    item = VectorItem(id="a", vector=[1.0], metadata={"when": object()})
    with pytest.raises(InputError, match="metadata must be JSON"):
        await EmbeddedVectorStore(tmp_path).upsert("t", [item])


@pytest.mark.parametrize("top_k", [0, -1, True])
async def test_top_k_must_be_a_positive_int(top_k: int) -> None:
    with pytest.raises(ValueError, match="'top_k' parameter of query must be a positive int"):
        await EmbeddedVectorStore().query("t", [1.0], top_k=top_k)


async def test_serves_100_000_vectors_of_384_dimensions_exactly() -> None:
    rng = np.random.default_rng(2026)
    matrix = rng.standard_normal((100_000, 384)).astype(np.float32)
    store = EmbeddedVectorStore()
    await store.upsert("big", items_of(matrix))
    unit = unit_rows(matrix.astype(np.float64))
    queries = np.vstack([rng.standard_normal((3, 384)), matrix[[12_345, 99_999]]])
    for query in queries:
        matches = await store.query("big", query.tolist(), top_k=10)
        expected_rows, expected_scores = brute_force(unit, query, 10)
        assert [m.id for m in matches] == [f"v{row}" for row in expected_rows]
        np.testing.assert_allclose([m.score for m in matches], expected_scores, atol=1e-5)
    assert (await store.query("big", matrix[99_999].tolist(), top_k=1))[0].id == "v99999"
