"""The grounding gate's decisions and reviews, read and written through a ``Store``.

Append-only by construction: this module inserts and reads, and offers no update or
delete. A decision is stored once, under its own id; a review is appended beside the
decision it resolves, at most one per decision (a second is refused), so what the gate
did and what a person did afterwards are both kept as they happened.

Owner scoping is a filter here (``owner``, or ``everyone``); who may see what is the
service layer's rule (:mod:`arbiter.service.grounding_gate`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from arbiter.contract.gate import GateDecision, GateReview, ParkedItem, ParkedStatus
from arbiter.errors import StoreError
from arbiter.store.gate_models import GateDecisionRow, GateReviewRow
from arbiter.store.repository import Store
from arbiter.validation import describe_validation_error

__all__ = [
    "gate_decision_ids",
    "gate_decisions",
    "load_gate_decision",
    "load_gate_review",
    "parked_items",
    "save_gate_decision",
    "save_gate_review",
]

M = TypeVar("M", bound=BaseModel)

_STATUS = {"release": "released", "discard": "discarded"}


def _document(record: BaseModel) -> dict[str, Any]:
    # Through JSON text, so a NaN or an infinity becomes null (PostgreSQL's JSON rejects NaN).
    document: dict[str, Any] = json.loads(record.model_dump_json())
    return document


def save_gate_decision(store: Store, decision: GateDecision, *, agent: str | None = None) -> None:
    """Store one decision under its id (and the agent whose answer it gated, if named).

    Raises:
        StoreError: A decision with that id is already stored.
        StoreUnavailable: The database refused the write.
    """
    cost = decision.judge_calls.cost_usd if decision.judge_calls is not None else None
    row = {
        "id": decision.id,
        "schema_version": decision.schema_version,
        "created_at": decision.created_at.astimezone(UTC),
        "mode": decision.mode,
        "action": decision.action,
        "needs_judge": decision.needs_judge,
        "judge": decision.judge,
        "judge_cost_usd": cost if cost is not None and math.isfinite(cost) else None,
        "owner": decision.owner,
        "parked": decision.parked is not None,
        "decision": _document(decision),
        "agent": agent,
    }
    with store.guard("store a gate decision"):
        try:
            with store.session() as session, session.begin():
                session.execute(insert(GateDecisionRow), [row])
        except IntegrityError:
            raise StoreError(f"gate decision {decision.id} is already stored") from None


def _parse(model: type[M], document: Any, what: str) -> M:
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        reason = describe_validation_error(exc, model)
        raise StoreError(f"{what}: the stored record is invalid: {reason}") from None


def load_gate_decision(store: Store, decision_id: str) -> GateDecision | None:
    """The decision stored under ``decision_id``; None when there is none.

    Raises:
        StoreError: The stored decision no longer validates.
    """
    with store.guard("read a gate decision"), store.session() as session:
        row = session.get(GateDecisionRow, decision_id)
        document = row.decision if row is not None else None
    if document is None:
        return None
    return _parse(GateDecision, document, f"gate decision {decision_id}")


def gate_decisions(
    store: Store,
    *,
    owner: str | None = None,
    everyone: bool = False,
    parked_only: bool = False,
    limit: int | None = 100,
    agent: str | None = None,
) -> list[GateDecision]:
    """Stored decisions, newest first.

    Args:
        store: The store.
        owner: Only this owner's (None: those made without one, at the command line).
        everyone: Every owner's (``owner`` is then ignored).
        parked_only: Only decisions that parked an answer for review.
        limit: At most this many; None: all.
        agent: Only decisions about this agent's answers (those stored with its name).

    Raises:
        StoreError: A stored decision no longer validates.
    """
    query = select(GateDecisionRow.id, GateDecisionRow.decision)
    if not everyone:
        query = query.where(
            GateDecisionRow.owner.is_(None) if owner is None else GateDecisionRow.owner == owner
        )
    if parked_only:
        query = query.where(GateDecisionRow.parked.is_(True))
    if agent is not None:
        query = query.where(GateDecisionRow.agent == agent)
    query = query.order_by(GateDecisionRow.created_at.desc(), GateDecisionRow.id).limit(limit)
    with store.guard("read gate decisions"), store.session() as session:
        rows = session.execute(query).all()
    return [_parse(GateDecision, document, f"gate decision {key}") for key, document in rows]


def gate_decision_ids(
    store: Store,
    prefix: str,
    *,
    owner: str | None = None,
    everyone: bool = False,
    limit: int = 2,
) -> list[str]:
    """Ids of ``owner``'s decisions (or everyone's) starting with ``prefix``, at most ``limit``."""
    query = select(GateDecisionRow.id).where(GateDecisionRow.id.startswith(prefix, autoescape=True))
    if not everyone:
        query = query.where(
            GateDecisionRow.owner.is_(None) if owner is None else GateDecisionRow.owner == owner
        )
    with store.guard("read gate decisions"), store.session() as session:
        return list(session.scalars(query.order_by(GateDecisionRow.id).limit(limit)).all())


def save_gate_review(store: Store, review: GateReview) -> None:
    """Append a review of a parked answer.

    Raises:
        StoreError: That decision already has a review (a parked answer is resolved once).
        StoreUnavailable: The database refused the write.
    """
    row = {
        "decision_id": review.decision_id,
        "resolution": review.resolution,
        "reviewer": review.reviewer,
        "note": review.note,
        "review": _document(review),
        "created_at": review.created_at.astimezone(UTC),
    }
    with store.guard("store a gate review"):
        try:
            with store.session() as session, session.begin():
                session.execute(insert(GateReviewRow), [row])
        except IntegrityError:
            earlier = load_gate_review(store, review.decision_id)
            done = (
                f" ({_STATUS[earlier.resolution]} by {earlier.reviewer!r})"
                if earlier is not None
                else ""
            )
            raise StoreError(
                f"the answer parked by gate decision {review.decision_id} is already resolved{done}"
            ) from None


def load_gate_review(store: Store, decision_id: str) -> GateReview | None:
    """The review of a decision's parked answer; None while it is pending.

    Raises:
        StoreError: The stored review no longer validates.
    """
    query = select(GateReviewRow.review).where(GateReviewRow.decision_id == decision_id)
    with store.guard("read a gate review"), store.session() as session:
        document = session.scalar(query)
    if document is None:
        return None
    return _parse(GateReview, document, f"review of gate decision {decision_id}")


def _reviews(store: Store, decision_ids: Sequence[str]) -> dict[str, GateReview]:
    if not decision_ids:
        return {}
    query = select(GateReviewRow.decision_id, GateReviewRow.review).where(
        GateReviewRow.decision_id.in_(decision_ids)
    )
    with store.guard("read gate reviews"), store.session() as session:
        rows = session.execute(query).all()
    return {key: _parse(GateReview, doc, f"review of gate decision {key}") for key, doc in rows}


def parked_items(
    store: Store,
    *,
    owner: str | None = None,
    everyone: bool = False,
    status: ParkedStatus | None = None,
    limit: int | None = 100,
) -> list[ParkedItem]:
    """Parked answers with where each stands, newest first.

    Args:
        store: The store.
        owner: Only this owner's (None: those parked without one).
        everyone: Every owner's.
        status: Only those ``pending``, ``released`` or ``discarded``; None: all.
        limit: At most this many decisions are read; None: all.

    Raises:
        StoreError: A stored record no longer validates.
    """
    decisions = gate_decisions(
        store, owner=owner, everyone=everyone, parked_only=True, limit=None if status else limit
    )
    reviews = _reviews(store, [d.id for d in decisions])
    items: list[ParkedItem] = []
    for decision in decisions:
        review = reviews.get(decision.id)
        state: ParkedStatus = "pending" if review is None else _status(review)
        if status is None or state == status:
            items.append(ParkedItem(decision=decision, status=state, review=review))
    return items if limit is None else items[:limit]


def _status(review: GateReview) -> ParkedStatus:
    return "released" if review.resolution == "release" else "discarded"
