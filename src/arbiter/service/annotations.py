"""Human annotations as library calls: label an item, import a file of labels, list them.

The REST server, the web pages and ``arbiter annotate`` all come through here. An
annotation is append-only: a change of mind is a new one, and reads take the latest per
(item, dimension, annotator). The judge ruling the human saw is *frozen* when the label
is given (a :class:`~arbiter.contract.Score` is copied by
:meth:`~arbiter.contract.FrozenRuling.of`), so a later re-score cannot rewrite what
the human agreed or disagreed with. A label without a ruling is a note: kept, never
calibration evidence.

Each annotation carries its ``owner``: the API key id that made it, None from the
command line. :func:`list_annotations` shows one owner's, or everyone's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arbiter.contract import Annotation, AnnotationLabel, FrozenRuling, Score
from arbiter.datasets.jsonio import iter_json_lines, json_type, read_text
from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.annotations_repository import add_annotations, annotation_history
from arbiter.validation import validate_document

__all__ = [
    "ANNOTATION_LABELS",
    "annotate",
    "import_annotations",
    "list_annotations",
    "read_annotations",
]

ANNOTATION_LABELS: tuple[AnnotationLabel, ...] = ("agree", "disagree", "pass", "fail")
"""The labels a human may give: about the ruling shown, or directly."""
_MAX_ROWS = 1_000_000
"""Most annotations one file may hold."""

RulingShown = FrozenRuling | Score | Mapping[str, Any]
"""The ruling the human saw: frozen already, a judge's score to freeze, or its fields."""


def _frozen(ruling: RulingShown | None, where: str) -> FrozenRuling | None:
    if ruling is None or isinstance(ruling, FrozenRuling):
        return ruling
    if isinstance(ruling, Score):
        return FrozenRuling.of(ruling)
    return validate_document(FrozenRuling, dict(ruling), where=f"{where}: ruling")


def annotate(
    store: Store,
    item: str,
    dimension: str,
    label: AnnotationLabel,
    annotator: str,
    *,
    ruling: RulingShown | None = None,
    owner: str | None = None,
    propagated: bool = False,
    comment: str = "",
    now: datetime | None = None,
) -> Annotation:
    """Store one human label on (``item``, ``dimension``) and return it.

    Args:
        store: The store.
        item: The scored item's id (an example, a turn, a case).
        dimension: What was judged (``groundedness``, ``scope``, ...).
        label: ``agree`` / ``disagree`` with ``ruling``, or a direct ``pass`` / ``fail``.
        annotator: Who labelled.
        ruling: The judge ruling the human saw, frozen now; None makes the label a note
            (and ``agree`` / ``disagree`` need one).
        owner: The API key id that made it; None from the command line.
        propagated: The label arrived second-hand (copied from another item).
        comment: Free text of the annotator's.
        now: When it was given (default: now, UTC).

    Raises:
        InputError: A label, ruling or field that is not valid, named by field.
    """
    fields: dict[str, Any] = {
        "item_id": item,
        "dimension": dimension,
        "label": label,
        "ruling": _frozen(ruling, "annotation"),
        "annotator": annotator,
        "created_at": now or datetime.now(UTC),
        "propagated": propagated,
        "comment": comment,
        "owner": owner,
    }
    annotation = validate_document(Annotation, fields, where="annotation")
    add_annotations(store, [annotation])
    if annotation.ruling is not None:  # a calibration pair: see the kappa floor's check
        from arbiter.service.trust_calibration import check_calibration_quietly

        check_calibration_quietly(store)
    return annotation


def read_annotations(
    path: str | Path, *, annotator: str | None = None, now: datetime | None = None
) -> list[Annotation]:
    """The annotations of a JSONL file, one object per line, every line checked.

    Each line holds the fields of :class:`~arbiter.contract.Annotation`: ``item_id``,
    ``dimension``, ``label``, ``ruling`` (``judge``, ``verdict``, ``score``,
    ``evidence``; absent for a note), ``annotator`` (default: ``annotator``),
    ``created_at`` (default: ``now``), ``propagated``, ``comment``. The owner is not
    the file's to say: it is whoever imports it.

    Raises:
        InputError: The file cannot be read, or a line is not an annotation (the
            message names the file, the line and the field).
    """
    file = Path(path)
    text = read_text(file, what="annotations file")
    moment = now or datetime.now(UTC)
    found: list[Annotation] = []
    for line, row in iter_json_lines(text, source=str(file)):
        where = f"{file}:{line}"
        if len(found) >= _MAX_ROWS:
            raise InputError(f"{where}: more than {_MAX_ROWS:,} annotations in one file")
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an annotation object, got {json_type(row)}")
        if "owner" in row:
            raise InputError(f"{where}: field 'owner': set by who imports the file, not by it")
        fields = dict(row)
        fields.setdefault("created_at", moment)
        if annotator is not None:
            fields.setdefault("annotator", annotator)
        found.append(validate_document(Annotation, fields, where=where))
    if not found:
        raise InputError(f"{file}: no annotations")
    return found


def import_annotations(
    store: Store,
    path: str | Path,
    *,
    annotator: str | None = None,
    owner: str | None = None,
    now: datetime | None = None,
) -> list[Annotation]:
    """Store the annotations of a JSONL file (see :func:`read_annotations`) at once.

    The whole file is checked before anything is stored: a bad line stores nothing.

    Args:
        store: The store.
        path: The JSONL file.
        annotator: The annotator of lines that name none.
        owner: The API key id importing them; None from the command line.
        now: The time of lines that give none (default: now, UTC).

    Raises:
        InputError: As :func:`read_annotations`.
    """
    annotations = [
        a.model_copy(update={"owner": owner})
        for a in read_annotations(path, annotator=annotator, now=now)
    ]
    add_annotations(store, annotations)
    if any(a.ruling is not None for a in annotations):
        from arbiter.service.trust_calibration import check_calibration_quietly

        check_calibration_quietly(store)
    return annotations


def list_annotations(
    store: Store,
    *,
    item: str | None = None,
    dimension: str | None = None,
    judge: str | None = None,
    annotator: str | None = None,
    owner: str | None = None,
    everyone: bool = False,
    latest: bool = True,
    limit: int | None = None,
) -> list[Annotation]:
    """Stored annotations, oldest first.

    Args:
        store: The store.
        item: Only those on this item.
        dimension: Only those of this dimension.
        judge: Only those about this judge's rulings.
        annotator: Only this annotator's.
        owner: Only this owner's (None: those made at the command line).
        everyone: Every owner's (``owner`` is then ignored).
        latest: The latest per (item, dimension, annotator) only; False: every row.
        limit: At most this many, the newest kept; None: all.

    Raises:
        StoreError: A stored annotation no longer validates.
    """
    found = [
        a
        for a in annotation_history(store, dimension=dimension, judge=judge)
        if (item is None or a.item_id == item)
        and (annotator is None or a.annotator == annotator)
        and (everyone or a.owner == owner)
    ]
    if latest:
        # Chosen after the owner filter, so another owner's later row never hides one.
        newest: dict[tuple[str, str, str], Annotation] = {}
        for annotation in found:
            key = (annotation.item_id, annotation.dimension, annotation.annotator)
            newest.pop(key, None)  # re-inserted last, so the result keeps time order
            newest[key] = annotation
        found = list(newest.values())
    if limit is None:
        return found
    return found[max(len(found) - limit, 0) :] if limit > 0 else []
