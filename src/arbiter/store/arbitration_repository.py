"""Storing one arbitration of the server in one transaction: a jury run of one case.

``POST /v1/arbitrate`` is the server's hot path: the run, its critiques, the verdict
and their owner are written together (as ``arbiter judge`` would write them, in one
commit instead of four), and the stored verdict is answered from what was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert

from arbiter.contract import Case, Verdict
from arbiter.store.browse_repository import StoredVerdict
from arbiter.store.jury_models import CritiqueRow, JuryRunRow, VerdictRow
from arbiter.store.jury_repository import _critique_row, check_jury_fits
from arbiter.store.models import SCHEMA_VERSION
from arbiter.store.ownership_models import RecordOwnerRow
from arbiter.store.repository import Store, new_run_id

__all__ = ["save_arbitration"]

_INSERT_RUN = insert(JuryRunRow)
_INSERT_VERDICT = insert(VerdictRow).returning(VerdictRow.id)
_INSERT_CRITIQUE = insert(CritiqueRow)
_INSERT_OWNER = insert(RecordOwnerRow)


def save_arbitration(
    store: Store,
    roster: Sequence[Mapping[str, Any]],
    case: Case,
    verdict: Verdict,
    *,
    owner: str | None,
    config: Mapping[str, Any] | None = None,
) -> StoredVerdict:
    """Store a completed jury run of one case, its critiques and verdict, and its owner.

    Args:
        store: The store.
        roster: The critics' specs as JSON-able dicts, in roster order.
        case: The judged case.
        verdict: Its verdict; ``critiques`` are the critics' outcomes.
        owner: The API key that asked (owns the run and the verdict); None: nobody.
        config: Options kept with the run.

    Returns:
        The verdict as stored, with its id.

    Raises:
        InputError: The case id or a critic's name, lens or model is longer than the
            store keeps (nothing is written).
    """
    check_jury_fits(roster, [case])
    now = datetime.now(UTC)
    run_id = new_run_id(random_hex=16)  # a server makes hundreds a second
    critiques = [_critique_row(run_id, case.id, i, o) for i, o in enumerate(verdict.critiques)]
    # Core statements on a plain connection, each built once (below): this is the
    # server's hot path, and building statements and the ORM's bookkeeping cost more
    # than the inserts themselves.
    with store.guard("store a verdict"), store.engine.begin() as connection:
        connection.execute(
            _INSERT_RUN,
            {
                "id": run_id,
                "schema_version": SCHEMA_VERSION,
                "kind": "judge",
                "created_at": now,
                "roster": [dict(spec) for spec in roster],
                "config": dict(config or {}),
                "n_cases": 1,
                "status": "completed",
            },
        )
        verdict_id = connection.execute(
            _INSERT_VERDICT,
            {
                "run_id": run_id,
                "case_id": case.id,
                "decision": verdict.decision,
                "confidence": verdict.confidence,
                "escalate": verdict.escalate,
                "verdict": verdict.model_dump(mode="json", exclude={"critiques"}),
                "case_data": case.model_dump(mode="json"),
                "created_at": now,
            },
        ).scalar_one()
        if critiques:
            connection.execute(_INSERT_CRITIQUE, critiques)
        if owner is not None:
            connection.execute(
                _INSERT_OWNER,
                [
                    {"kind": kind, "record_id": record_id, "owner": owner, "created_at": now}
                    for kind, record_id in (("jury_run", run_id), ("verdict", str(verdict_id)))
                ],
            )
    return StoredVerdict(id=verdict_id, run_id=run_id, case=case, verdict=verdict, created_at=now)
