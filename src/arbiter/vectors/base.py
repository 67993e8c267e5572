"""Embedders and vector stores behind one Protocol each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

__all__ = ["Embedder", "Match", "VectorItem", "VectorStore"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed dimension."""

    name: str

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raise a ``ProviderError`` on failure."""
        ...


class VectorItem(BaseModel):
    """A vector to store, with its id and metadata."""

    id: str
    """Unique id within the namespace (upserting the same id replaces it)."""
    vector: list[float]
    """The embedding."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything to return with matches (a label, a text)."""


class Match(BaseModel):
    """One query result."""

    id: str
    """Id of the stored item."""
    score: float
    """Cosine similarity to the query."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The stored metadata."""


@runtime_checkable
class VectorStore(Protocol):
    """Namespaced vectors with exact or approximate cosine top-k."""

    name: str

    async def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        """Insert or replace items; a dimension mismatch raises ``InputError``."""
        ...

    async def query(
        self, namespace: str, vector: Sequence[float], *, top_k: int = 5
    ) -> list[Match]:
        """The ``top_k`` most similar items, best first; a dimension mismatch raises."""
        ...
