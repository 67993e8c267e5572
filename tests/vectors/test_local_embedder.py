"""The local all-MiniLM-L6-v2 embedder, for real: weights from site-packages, no hub.

Skipped with a visible reason when the ``embed`` extra is absent, unless
``ARBITER_REQUIRE_EMBED=1`` (set by ``.ci/run``), which turns the skip into a failure.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from arbiter.errors import InputError
from arbiter.vectors.base import Embedder, VectorItem
from arbiter.vectors.embedders import LocalMiniLMEmbedder
from arbiter.vectors.stores import EmbeddedVectorStore

REASON = "install the embed extra: pip install 'arbiter[embed]'"


@pytest.fixture(scope="module")
def network_attempts() -> Iterator[list[Any]]:
    """Hub access switched off and every TCP connect refused and recorded, for the module."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network access in an offline test: {address}")
        real_connect(self, address)

    with pytest.MonkeyPatch.context() as patch:
        # Set before the first import of huggingface_hub, which reads them at import time.
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", refuse)
        yield attempts


@pytest.fixture(scope="module")
def minilm(network_attempts: list[Any]) -> Iterator[LocalMiniLMEmbedder]:
    if os.environ.get("ARBITER_REQUIRE_EMBED") == "1":
        importlib.import_module("sentence_transformers")  # fails loudly instead of skipping
    else:
        pytest.importorskip("sentence_transformers", reason=REASON)
    assert importlib.import_module("huggingface_hub").is_offline_mode()
    yield LocalMiniLMEmbedder()
    assert network_attempts == [], "the local embedder tried to reach the network"


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(InputError, match=r"pip install 'arbiter\[embed\]'"):
        LocalMiniLMEmbedder()


async def test_vectors_have_384_unit_length_dimensions(minilm: LocalMiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    vectors = await minilm.embed(["A wire transfer of 9,800 USD to a new payee.", "hello"])
    assert minilm.dimension == 384
    assert [len(v) for v in vectors] == [384, 384]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert await minilm.embed([]) == []


async def test_similar_sentences_are_closer_than_unrelated_ones(
    minilm: LocalMiniLMEmbedder,
) -> None:
    cat, kitten, tax = await minilm.embed(
        [
            "A cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "The quarterly tax return is due next month.",
        ]
    )
    assert cosine(cat, kitten) > cosine(cat, tax) + 0.3
    assert cosine(cat, kitten) > cosine(kitten, tax) + 0.3


async def test_a_text_embeds_the_same_alone_or_in_a_batch(minilm: LocalMiniLMEmbedder) -> None:
    text = "Card-not-present purchase flagged for review."
    [alone] = await minilm.embed([text])
    in_a_batch, _ = await minilm.embed([text, "Something else entirely, and longer."])
    np.testing.assert_allclose(alone, in_a_batch, atol=1e-5)


async def test_nearest_stored_sentence_is_the_paraphrase(minilm: LocalMiniLMEmbedder) -> None:
    stored = {
        "refund": "The customer asked for a refund of a duplicate charge.",
        "login": "A user could not log in after resetting the password.",
        "wire": "A large international wire transfer to a new beneficiary.",
    }
    vectors = await minilm.embed(list(stored.values()))
    store = EmbeddedVectorStore()
    items = [VectorItem(id=k, vector=v) for k, v in zip(stored, vectors, strict=True)]
    await store.upsert("tickets", items)
    [query] = await minilm.embed(["Client requests money back for being billed twice."])
    matches = await store.query("tickets", query, top_k=3)
    assert matches[0].id == "refund"
    assert matches[0].score > matches[1].score
