"""Reading and writing the jury's judgments through a :class:`~arbiter.store.Store`.

A judgment is stored as one row per critique (raw text and parsed critique, so it can
be re-synthesized) and one verdict row holding the verdict without its critiques and
the case it judged. :func:`load_judgments` puts them back together, critiques in
roster order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from arbiter.contract import (
    Case,
    CriticOutcome,
    Critique,
    Judgment,
    JuryRunInfo,
    JuryRunKind,
    JuryRunStatus,
    ModelCalls,
    Usage,
    Verdict,
)
from arbiter.errors import InputError, StoreError
from arbiter.store.jury_models import MAX_LENS_CHARS, CritiqueRow, JuryRunRow, VerdictRow
from arbiter.store.models import MAX_ID_CHARS, MAX_NAME_CHARS
from arbiter.store.repository import Store, new_run_id
from arbiter.validation import describe_validation_error

__all__ = [
    "check_jury_fits",
    "create_jury_run",
    "finish_jury_run",
    "get_jury_run",
    "latest_jury_run",
    "list_jury_runs",
    "load_judged_cases",
    "load_judgments",
    "save_judgment",
]


def _now() -> datetime:
    return datetime.now(UTC)


def check_jury_fits(roster: Sequence[Mapping[str, Any]], cases: Sequence[Case]) -> None:
    """Refuse what a jury column is too short for, before anything is written.

    PostgreSQL would fail the write of the first judgment with a longer case id, critic
    name, lens or model, leaving a run without its verdicts; SQLite would keep it. So the
    limits are checked here, alike on both.

    Raises:
        InputError: A case id, or a critic's name, lens or model, is longer than the
            store keeps (the first one found).
    """
    for number, case in enumerate(cases, start=1):
        if len(case.id) > MAX_ID_CHARS:
            raise InputError(
                f"case {number} has an id of {len(case.id):,} characters ({case.id[:40]!r}...); "
                f"the store keeps case ids of at most {MAX_ID_CHARS}"
            )
    limits = {"name": MAX_NAME_CHARS, "lens": MAX_LENS_CHARS, "model": MAX_NAME_CHARS}
    for index, spec in enumerate(roster):
        for field, limit in limits.items():
            value = str(spec.get(field, ""))
            if len(value) > limit:
                raise InputError(
                    f"critic [{index}]: field {field!r}: {len(value):,} characters; the store "
                    f"keeps at most {limit}"
                )


def create_jury_run(
    store: Store,
    *,
    kind: JuryRunKind,
    roster: Sequence[Mapping[str, Any]],
    n_cases: int,
    config: dict[str, Any] | None = None,
) -> str:
    """Register a new jury run in status ``running`` and return its id.

    Args:
        store: The store.
        kind: What made the run.
        roster: The critics' specs as JSON-able dicts, in roster order.
        n_cases: Cases the run is to judge.
        config: Options of the command, kept with the run.
    """
    run_id = new_run_id()
    with store.guard("create a jury run"), store.session() as session, session.begin():
        session.add(
            JuryRunRow(
                id=run_id,
                kind=kind,
                created_at=_now(),
                roster=[dict(spec) for spec in roster],
                config=dict(config or {}),
                n_cases=n_cases,
                status="running",
            )
        )
    return run_id


def finish_jury_run(store: Store, run_id: str, status: JuryRunStatus = "completed") -> None:
    """Move a jury run to ``status``."""
    with store.guard(f"finish jury run {run_id}"), store.session() as session, session.begin():
        session.execute(update(JuryRunRow).where(JuryRunRow.id == run_id).values(status=status))


def save_judgment(store: Store, run_id: str, case: Case, verdict: Verdict) -> None:
    """Store one judgment (a row per critique and the verdict row) in one transaction.

    Args:
        store: The store.
        run_id: The jury run it belongs to.
        case: The judged case, stored with the verdict so the run can be replayed.
        verdict: The verdict; its ``critiques`` are the critics' outcomes.
    """
    rows = [_critique_row(run_id, case.id, i, o) for i, o in enumerate(verdict.critiques)]
    record = f"store a verdict of jury run {run_id}"
    with store.guard(record), store.session() as session, session.begin():
        if rows:
            session.execute(insert(CritiqueRow), rows)
        session.add(
            VerdictRow(
                run_id=run_id,
                case_id=case.id,
                decision=verdict.decision,
                confidence=verdict.confidence,
                escalate=verdict.escalate,
                verdict=verdict.model_dump(mode="json", exclude={"critiques"}),
                case_data=case.model_dump(mode="json"),
                created_at=_now(),
            )
        )


def _critique_row(run_id: str, case_id: str, position: int, o: CriticOutcome) -> dict[str, Any]:
    usage = o.usage
    return {
        "run_id": run_id,
        "case_id": case_id,
        "position": position,
        "critic": o.critic,
        "lens": o.lens,
        "model": o.model,
        "status": o.status,
        "critique": o.critique.model_dump(mode="json") if o.critique is not None else None,
        "raw": o.raw,
        "error": o.error,
        "latency_ms": o.latency_ms,
        "input_tokens": usage.input_tokens if usage is not None else None,
        "output_tokens": usage.output_tokens if usage is not None else None,
        "cost_usd": usage.cost_usd if usage is not None else None,
        "calls": o.calls.model_dump(mode="json"),
    }


def _outcome(row: CritiqueRow) -> CriticOutcome:
    try:
        critique = Critique.model_validate(row.critique) if row.critique is not None else None
    except ValidationError as exc:
        raise StoreError(
            f"run {row.run_id}, case {row.case_id!r}, critic {row.critic!r}: the stored "
            f"critique is invalid: {describe_validation_error(exc, Critique)}"
        ) from None
    usage = (
        Usage(
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens or 0,
            cost_usd=row.cost_usd,
        )
        if row.input_tokens is not None
        else None
    )
    calls = _calls(row, usage)
    return CriticOutcome(
        critic=row.critic,
        lens=row.lens,
        model=row.model,
        status="ok" if row.status == "ok" else "dead",
        critique=critique,
        error=row.error,
        latency_ms=row.latency_ms,
        usage=usage,
        cached=calls.cached > 0,
        raw=row.raw,
        calls=calls,
    )


def _calls(row: CritiqueRow, usage: Usage | None) -> ModelCalls:
    """The stored call record; for a row stored before it was kept, what its usage says
    (a model answered when it reported tokens or a price; the detectors report neither)."""
    if row.calls is not None:
        try:
            return ModelCalls.model_validate(row.calls)
        except ValidationError:
            pass  # unreadable: derived from the usage columns below, like an older row
    if usage is None or (not usage.input_tokens and usage.cost_usd is None):
        return ModelCalls()
    return ModelCalls(
        calls=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        latency_ms=row.latency_ms,
        cost_usd=usage.cost_usd,
    )


def load_judgments(store: Store, run_id: str) -> list[Judgment]:
    """Every judgment of a run, in the order they were stored.

    Args:
        store: The store.
        run_id: The run's full id (see :func:`get_jury_run` for prefixes).

    Raises:
        StoreError: A stored critique no longer validates.
    """
    with store.guard("read jury runs"), store.session() as session:
        verdicts = session.scalars(
            select(VerdictRow).where(VerdictRow.run_id == run_id).order_by(VerdictRow.id)
        ).all()
        critiques = session.scalars(
            select(CritiqueRow)
            .where(CritiqueRow.run_id == run_id)
            .order_by(CritiqueRow.case_id, CritiqueRow.position)
        ).all()
    by_case: dict[str, list[CriticOutcome]] = {}
    for row in critiques:
        by_case.setdefault(row.case_id, []).append(_outcome(row))
    judgments = []
    for stored in verdicts:
        outcomes = by_case.get(stored.case_id, [])
        verdict = Verdict.model_validate({**stored.verdict, "critiques": outcomes})
        judgments.append(Judgment(stored.case_id, outcomes, verdict))
    return judgments


def load_judged_cases(store: Store, run_id: str) -> list[Case]:
    """The cases a run judged, in the order their judgments were stored."""
    with store.guard("read jury runs"), store.session() as session:
        rows = session.scalars(
            select(VerdictRow.case_data).where(VerdictRow.run_id == run_id).order_by(VerdictRow.id)
        ).all()
    return [Case.model_validate(data) for data in rows]


def _info(session: Session, row: JuryRunRow) -> JuryRunInfo:
    n_judged = session.scalar(
        select(func.count()).select_from(VerdictRow).where(VerdictRow.run_id == row.id)
    )
    return JuryRunInfo(
        id=row.id,
        kind=row.kind,
        created_at=row.created_at,
        roster=row.roster,
        config=row.config or {},
        n_cases=row.n_cases,
        n_judged=n_judged or 0,
        status=row.status,
    )


def get_jury_run(store: Store, run_id: str) -> JuryRunInfo:
    """The header of one jury run; a unique prefix of its id is enough.

    Raises:
        StoreError: No run, or more than one, matches ``run_id``.
    """
    with store.guard("read jury runs"), store.session() as session:
        return _info(session, store.by_prefix(session, JuryRunRow, run_id, "jury run"))


def list_jury_runs(
    store: Store, *, limit: int = 50, kind: JuryRunKind | None = None
) -> list[JuryRunInfo]:
    """The most recent jury runs, newest first, optionally of one kind."""
    query = select(JuryRunRow).order_by(JuryRunRow.created_at.desc(), JuryRunRow.id.desc())
    if kind is not None:
        query = query.where(JuryRunRow.kind == kind)
    with store.guard("read jury runs"), store.session() as session:
        return [_info(session, row) for row in session.scalars(query.limit(limit)).all()]


def latest_jury_run(store: Store, *, kind: JuryRunKind | None = None) -> JuryRunInfo | None:
    """The newest jury run (of ``kind``, if given), or None when there is none."""
    runs = list_jury_runs(store, limit=1, kind=kind)
    return runs[0] if runs else None
