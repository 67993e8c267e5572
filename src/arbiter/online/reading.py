"""Reading a prediction for the online pipeline, however broken it arrives.

A ``Prediction`` is used as is; a mapping is validated, and when it fails (a NaN
confidence, a missing label) the usable fields are kept and each problem is recorded,
so the pipeline can still score what it can and say what it could not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from arbiter.contract import Prediction

__all__ = ["Item", "clip", "describe_error", "fallback_id", "read_prediction"]

MAX_ERROR_CHARS = 300
"""Longest error line kept in a result."""


@dataclass
class Item:
    """A prediction as read: its dict, id, label, a valid copy, and what was wrong."""

    doc: Mapping[str, Any]
    id: str
    label: str | None
    typed: Prediction | None
    errors: list[str]


def read_prediction(prediction: object) -> Item | str:
    """The prediction as a dict plus a validated copy, or why it cannot be read."""
    if isinstance(prediction, Prediction):
        doc = {
            "id": prediction.id,
            "label": prediction.label,
            "confidence": prediction.confidence,
            "raw_output": prediction.raw_output,
            "metadata": prediction.metadata,
        }
        return Item(doc, prediction.id or _content_id(doc), prediction.label, prediction, [])
    if not isinstance(prediction, Mapping):
        kind = type(prediction).__name__
        return f"unreadable prediction: expected a Prediction or a mapping, got {kind}"
    errors: list[str] = []
    typed: Prediction | None
    try:
        typed = Prediction.model_validate(prediction)
    except ValidationError as exc:
        for error in exc.errors():
            if error["type"] != "extra_forbidden":
                where = ".".join(str(part) for part in error["loc"]) or "(root)"
                errors.append(f"prediction: {where}: {clip(error['msg'])}")
        typed = _sanitised(prediction)
    raw_id, label = prediction.get("id"), prediction.get("label")
    item_id = str(raw_id) if isinstance(raw_id, str | int) and str(raw_id) else ""
    return Item(
        prediction,
        item_id or _content_id(prediction),
        label if isinstance(label, str) else None,
        typed,
        errors,
    )


def _sanitised(doc: Mapping[str, Any]) -> Prediction | None:
    """A valid Prediction from the usable fields, for the layers that need one."""
    label, confidence = doc.get("label"), doc.get("confidence")
    raw_output, metadata = doc.get("raw_output"), doc.get("metadata")
    usable: float | None = None
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        usable = float(confidence) if 0.0 <= confidence <= 1.0 else None
    try:
        return Prediction(
            id=str(doc.get("id") or ""),
            label=label if isinstance(label, str) else "" if label is None else str(label),
            confidence=usable,
            raw_output=dict(raw_output) if isinstance(raw_output, Mapping) else {},
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        )
    except Exception:
        return None


def _content_id(doc: Mapping[str, Any]) -> str:
    try:
        canonical = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        canonical = repr(doc)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()[:32]


def fallback_id(prediction: object) -> str:
    """The prediction's own id, or a content hash of it."""
    if isinstance(prediction, Prediction) and prediction.id:
        return prediction.id
    if isinstance(prediction, Mapping):
        raw_id = prediction.get("id")
        if isinstance(raw_id, str | int) and str(raw_id):
            return str(raw_id)
        return _content_id(prediction)
    return "sha256:" + hashlib.sha256(repr(prediction)[:100_000].encode()).hexdigest()[:32]


def clip(text: str) -> str:
    """One line of at most ``MAX_ERROR_CHARS`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def describe_error(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    message = clip(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
