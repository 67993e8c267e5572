"""Writing and reading online scoring results through a :class:`~arbiter.store.Store`.

A batch is any group of results saved under one id: a run of ``arbiter online score``,
or one flush of a service's scorer. Results go in bulk, one transaction per call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, insert, select

from arbiter.contract import OnlineResult
from arbiter.errors import StoreError
from arbiter.store.online_models import OnlineResultRow
from arbiter.store.repository import Store
from arbiter.validation import describe_validation_error

__all__ = ["count_online_results", "load_online_results", "save_online_results"]


def _row(batch_id: str, result: OnlineResult, now: datetime) -> dict[str, Any]:
    # Through JSON text, so that NaN and infinities become null as in the JSONL sink
    # (PostgreSQL's JSON rejects NaN).
    document = json.loads(result.model_dump_json())
    return {
        "batch_id": batch_id,
        "prediction_id": result.prediction_id,
        "label": result.label,
        "escalated": result.escalated,
        "flagged": result.flagged,
        "judge_source": result.judge.source if result.judge is not None else None,
        "n_errors": len(result.error_kinds()),
        "total_ms": result.total_ms if math.isfinite(result.total_ms) else 0.0,
        "result": document,
        "created_at": now,
    }


def save_online_results(store: Store, batch_id: str, results: Sequence[OnlineResult]) -> None:
    """Store ``results`` under ``batch_id`` in one bulk insert (nothing when empty).

    Args:
        store: The store.
        batch_id: The batch they belong to (e.g. ``arbiter.store.repository.new_run_id()``).
        results: The results, in any order.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    if not results:
        return
    now = datetime.now(UTC)
    rows = [_row(batch_id, result, now) for result in results]
    with store.guard("store online results"), store.session() as session, session.begin():
        session.execute(insert(OnlineResultRow), rows)


def count_online_results(store: Store, batch_id: str) -> int:
    """How many results are stored under ``batch_id``."""
    with store.guard("read online results"), store.session() as session:
        query = select(func.count()).where(OnlineResultRow.batch_id == batch_id)
        return int(session.scalar(query) or 0)


def load_online_results(
    store: Store, batch_id: str, *, limit: int | None = None
) -> list[OnlineResult]:
    """The results of a batch, in the order they were stored.

    Raises:
        StoreError: A stored result no longer validates.
    """
    query = (
        select(OnlineResultRow.result)
        .where(OnlineResultRow.batch_id == batch_id)
        .order_by(OnlineResultRow.id)
        .limit(limit)
    )
    with store.guard("read online results"), store.session() as session:
        documents = session.scalars(query).all()
    try:
        return [OnlineResult.model_validate(document) for document in documents]
    except ValidationError as exc:
        reason = describe_validation_error(exc, OnlineResult)
        raise StoreError(f"batch {batch_id}: a stored online result is invalid: {reason}") from None
