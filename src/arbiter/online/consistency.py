"""Layer 3, consistency: does the label agree with the labels of similar past items?

The item's text is embedded, its nearest neighbours are read from a vector-store
namespace, and the label is compared with the majority label among the neighbours at
or above the similarity threshold. The threshold is applied here, on the cosine scale
every store reports, never sent to the store. With ``upsert=True`` the scored item is
stored afterwards (id: the prediction's id, metadata: its label), so later items are
compared with it; it is queried first, so it never counts as its own neighbour.
``ConsistencyLayer`` runs it in the pipeline for escalated items.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from arbiter.contract import ConsistencyResult, Neighbour, Prediction
from arbiter.errors import InputError, InvalidResponse
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item
from arbiter.vectors.base import Embedder, Match, VectorItem, VectorStore

__all__ = [
    "ConsistencyCheck",
    "ConsistencyLayer",
    "canonical_text",
    "field_text",
    "score_consistency",
]


def canonical_text(prediction: Prediction) -> str:
    """The prediction's ``raw_output`` as canonical JSON (sorted keys, compact, UTF-8).

    Raises:
        InputError: ``raw_output`` is empty, so there is nothing to embed.
    """
    if not prediction.raw_output:
        raise InputError(f"prediction {prediction.id!r}: raw_output is empty; nothing to embed")
    return json.dumps(
        prediction.raw_output,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def field_text(name: str) -> Callable[[Prediction], str]:
    """A ``text_of`` that embeds one text field of ``raw_output`` (e.g. ``"narrative"``).

    Examples:
        >>> text_of = field_text("narrative")
        >>> text_of(Prediction(label="low", raw_output={"narrative": "Routine."}))
        'Routine.'
    """

    def text_of(prediction: Prediction) -> str:
        value = prediction.raw_output.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InputError(
                f"prediction {prediction.id!r}: raw_output has no text in field {name!r}"
            )
        return value

    return text_of


async def score_consistency(
    prediction: Prediction,
    *,
    embedder: Embedder,
    store: VectorStore,
    namespace: str,
    threshold: float,
    top_k: int = 5,
    text_of: Callable[[Prediction], str] | None = None,
    upsert: bool = False,
) -> ConsistencyResult:
    """Compare the prediction's label with its nearest neighbours' labels.

    ``agrees`` is True when the label is the majority label among the neighbours with
    similarity ≥ ``threshold`` and a stored label, False when another label has more
    votes than it, and None when no neighbour qualifies or the label only ties for
    first place (no majority is no evidence either way). Neighbours without a label
    in their metadata are reported but do not vote.

    Args:
        prediction: The item to score.
        embedder: Turns the item's text into a vector.
        store: Where past items live.
        namespace: The store's namespace of comparable items.
        threshold: Cosine similarity a neighbour needs to count.
        top_k: Neighbours to fetch.
        text_of: The text to embed; default: ``raw_output`` as canonical JSON
            (:func:`canonical_text`); :func:`field_text` picks one field.
        upsert: Store the item after scoring, with its label, for later items.

    Returns:
        The neighbours (most similar first), the threshold and the verdict.

    Raises:
        InputError: Nothing to embed, or the vector's dimension differs from the
            namespace's (also an embedder whose dimension changed).
        ProviderError: The embedder or a remote store failed (its subclasses:
            ``ProviderAuthError``, ``RateLimited``, ``ProviderUnavailable``,
            ``ProviderTimeout``, ``InvalidResponse``).
        StoreError: The embedded store cannot read or write its folder.
    """
    text = (text_of or canonical_text)(prediction)
    vectors = await embedder.embed([text])
    if len(vectors) != 1:
        raise InvalidResponse(f"{embedder.name}: asked for 1 embedding, got {len(vectors)}")
    vector = vectors[0]
    item_id = prediction.id or "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    # One extra, in case the item itself was stored before: it is not its own neighbour.
    matches = await store.query(namespace, vector, top_k=top_k + 1)
    neighbours = [_neighbour(m) for m in matches if m.id != item_id][:top_k]
    result = ConsistencyResult(
        neighbours=neighbours,
        threshold=threshold,
        agrees=_agrees(prediction.label, neighbours, threshold),
    )
    if upsert:
        item = VectorItem(id=item_id, vector=vector, metadata={"label": prediction.label})
        await store.upsert(namespace, [item])
    return result


def _neighbour(match: Match) -> Neighbour:
    label = match.metadata.get("label")
    return Neighbour(
        id=match.id, similarity=match.score, label=label if isinstance(label, str) else None
    )


def _agrees(label: str, neighbours: list[Neighbour], threshold: float) -> bool | None:
    votes = Counter(n.label for n in neighbours if n.similarity >= threshold and n.label)
    if not votes:
        return None
    most = max(votes.values())
    leaders = {candidate for candidate, count in votes.items() if count == most}
    if label not in leaders:
        return False
    return True if len(leaders) == 1 else None


@dataclass(frozen=True)
class ConsistencyCheck:
    """Layer 3 as the pipeline takes it: built objects, not descriptions."""

    embedder: Embedder
    """Embeds each item."""
    store: VectorStore
    """Holds the past items."""
    namespace: str = "transactions"
    """Namespace of comparable items."""
    threshold: float = 0.90
    """Similarity a neighbour needs to count."""
    top_k: int = 5
    """Neighbours to fetch."""
    upsert: bool = False
    """Store each scored item for later ones."""
    text_field: str | None = None
    """Embed this ``raw_output`` text field; None embeds ``raw_output`` as canonical JSON."""


class ConsistencyLayer:
    """Consistency as an expensive layer: the item against its nearest past items.

    Args:
        check: The embedder, store and settings.
    """

    name = "consistency"
    expensive = True
    budget_floor = None

    def __init__(self, check: ConsistencyCheck) -> None:
        self.check = check
        self._text_of = field_text(check.text_field) if check.text_field else None

    async def run(self, item: Item, context: LayerContext) -> ConsistencyResult:
        """The neighbours and whether the label agrees with theirs."""
        if item.typed is None:
            raise NotRun("the prediction is unreadable", status="error")
        check = self.check
        return await score_consistency(
            item.typed,
            embedder=check.embedder,
            store=check.store,
            namespace=check.namespace,
            threshold=check.threshold,
            top_k=check.top_k,
            text_of=self._text_of,
            upsert=check.upsert,
        )
