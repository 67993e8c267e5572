"""Reading and writing human annotations through a :class:`~arbiter.store.Store`.

Append-only by construction: this module inserts and reads, and offers no update or
delete. A change of mind is a new row; :func:`latest_annotations` takes the newest per
(item, dimension, annotator), :func:`annotation_history` keeps every row.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC

from pydantic import ValidationError
from sqlalchemy import insert, select
from sqlalchemy.sql import Select

from arbiter.contract import Annotation
from arbiter.errors import StoreError
from arbiter.store.annotations_models import AnnotationRow
from arbiter.store.repository import Store
from arbiter.validation import describe_validation_error

__all__ = ["add_annotations", "annotation_history", "latest_annotations"]


def add_annotations(store: Store, annotations: Iterable[Annotation]) -> int:
    """Append annotations in one transaction; return how many were stored.

    The ruling each carries is stored as given: it is what the human saw, and nothing
    here ever re-reads or rewrites it.
    """
    rows = [
        {
            "item_id": a.item_id,
            "dimension": a.dimension,
            "label": a.label,
            "judge": a.ruling.judge if a.ruling is not None else None,
            "verdict": a.ruling.verdict if a.ruling is not None else None,
            "annotator": a.annotator,
            "propagated": a.propagated,
            "comment": a.comment,
            "annotation": a.model_dump(mode="json"),
            # Stored in UTC: SQLite keeps no offset, so every reader gets UTC back.
            "created_at": a.created_at.astimezone(UTC),
        }
        for a in annotations
    ]
    if rows:
        with store.guard("store annotations"), store.session() as session, session.begin():
            session.execute(insert(AnnotationRow), rows)
    return len(rows)


def _query(dimension: str | None, judge: str | None) -> Select[AnnotationRow]:
    query = select(AnnotationRow).order_by(AnnotationRow.created_at, AnnotationRow.id)
    if dimension is not None:
        query = query.where(AnnotationRow.dimension == dimension)
    if judge is not None:
        query = query.where(AnnotationRow.judge == judge)
    return query


def _annotation(row: AnnotationRow) -> Annotation:
    try:
        return Annotation.model_validate(row.annotation)
    except ValidationError as exc:
        raise StoreError(
            f"annotation {row.id}: the stored annotation is invalid: "
            f"{describe_validation_error(exc, Annotation)}"
        ) from None


def annotation_history(
    store: Store, *, dimension: str | None = None, judge: str | None = None
) -> list[Annotation]:
    """Every stored annotation (of ``dimension`` / about ``judge``), oldest first.

    Raises:
        StoreError: A stored annotation no longer validates.
    """
    with store.guard("read annotations"), store.session() as session:
        rows = session.scalars(_query(dimension, judge)).all()
        return [_annotation(row) for row in rows]


def latest_annotations(
    store: Store, *, dimension: str | None = None, judge: str | None = None
) -> list[Annotation]:
    """The newest annotation per (item, dimension, annotator), in the order of their times.

    Newest is the latest ``created_at``, ties going to the row stored last. A filter on
    ``judge`` applies before the choice, so a later note (no ruling) does not hide a
    labelled ruling of that judge; without it the latest row wins, note or not.

    Raises:
        StoreError: A stored annotation no longer validates.
    """
    latest: dict[tuple[str, str, str], Annotation] = {}
    for annotation in annotation_history(store, dimension=dimension, judge=judge):
        key = (annotation.item_id, annotation.dimension, annotation.annotator)
        latest.pop(key, None)  # re-inserted last, so the result keeps time order
        latest[key] = annotation
    return list(latest.values())
