"""Reading and writing agents' judge settings and the judges' rulings on ingested runs.

Both tables are only inserted into: a new setting is a new row (the newest in force),
a ruling is kept as it was made. Reads take a ``viewer``: an owner id sees its own
agents' records, None sees everything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, insert, or_, select

from arbiter.contract.scores import ModelCalls
from arbiter.contract.trust import AgentJudgeSetting, JudgeRuling
from arbiter.store.repository import Store
from arbiter.store.trust_models import AgentJudgeSettingRow, JudgeRulingRow, TrustEventRow
from arbiter.store.trust_repository import owner_key

__all__ = [
    "NewRuling",
    "agent_judge_setting",
    "count_rulings",
    "event_recorded",
    "judged_before",
    "list_rulings",
    "online_tail",
    "save_agent_judge_setting",
    "save_rulings",
    "undecided_runs",
]

NewRuling = tuple[str, bool | None, str, ModelCalls]
"""(judge, verdict, explanation, calls) of one ruling to store."""


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def save_agent_judge_setting(
    store: Store,
    agent: str,
    *,
    owner: str | None,
    setting: dict[str, Any],
    by: str,
    now: datetime | None = None,
) -> AgentJudgeSetting:
    """Append an agent's judge setting (it is in force from now)."""
    row = AgentJudgeSettingRow(
        owner_key=owner_key(owner),
        agent=agent,
        setting=json.loads(json.dumps(setting)),
        by=by,
        created_at=now or datetime.now(UTC),
    )
    with store.guard("keep a judge setting"), store.session() as session, session.begin():
        session.add(row)
        session.flush()
        return _setting(row)


def _setting(row: AgentJudgeSettingRow) -> AgentJudgeSetting:
    raw = row.setting if isinstance(row.setting, dict) else {}
    return AgentJudgeSetting(
        agent=row.agent,
        owner=row.owner_key or None,
        judges=raw.get("judges", "inherit"),
        sample_rate=raw.get("sample_rate"),
        by=row.by,
        at=_aware(row.created_at),
    )


def agent_judge_setting(
    store: Store, agent: str, *, owner: str | None
) -> tuple[AgentJudgeSetting | None, dict[str, Any] | None]:
    """The agent's setting in force, and the raw stored table (None: it has none)."""
    query = (
        select(AgentJudgeSettingRow)
        .where(AgentJudgeSettingRow.owner_key == owner_key(owner))
        .where(AgentJudgeSettingRow.agent == agent)
        .order_by(AgentJudgeSettingRow.id.desc())
        .limit(1)
    )
    with store.guard("read a judge setting"), store.session() as session:
        row = session.scalar(query)
        if row is None:
            return None, None
        raw = row.setting
        return _setting(row), raw if isinstance(raw, dict) else {"judges": raw}


def judged_before(store: Store, run_id: str, run_hash: str) -> bool:
    """Whether this content of this run already has rulings (a trace imported again)."""
    query = (
        select(JudgeRulingRow.id)
        .where(JudgeRulingRow.run_id == run_id, JudgeRulingRow.run_hash == run_hash)
        .limit(1)
    )
    with store.guard("read judge rulings"), store.session() as session:
        return session.scalar(query) is not None


def event_recorded(store: Store, kind: str, record_id: str, *, owner: str | None) -> bool:
    """Whether an event of ``kind`` about record ``record_id`` of ``owner`` exists."""
    query = (
        select(TrustEventRow.id)
        .where(TrustEventRow.kind == kind, TrustEventRow.record_id == record_id)
        .where(TrustEventRow.owner_key == owner_key(owner))
        .limit(1)
    )
    with store.guard("read trust events"), store.session() as session:
        return session.scalar(query) is not None


def save_rulings(
    store: Store,
    *,
    run_id: str,
    run_hash: str,
    agent: str,
    owner: str | None,
    trigger: str,
    rulings: Sequence[NewRuling],
    now: datetime | None = None,
) -> None:
    """Store the rulings of one judging of a run, in one transaction."""
    if not rulings:
        return
    moment = now or datetime.now(UTC)
    rows = []
    for judge, passed, explanation, calls in rulings:
        cost = calls.cost_usd
        rows.append(
            {
                "owner_key": owner_key(owner),
                "agent": agent,
                "run_id": run_id,
                "run_hash": run_hash,
                "judge": judge,
                "passed": passed,
                "explanation": explanation,
                "trigger": trigger,
                "calls": json.loads(calls.model_dump_json()),
                "cost_usd": cost if cost is not None and math.isfinite(cost) else None,
                "created_at": moment,
            }
        )
    with store.guard("store judge rulings"), store.session() as session, session.begin():
        session.execute(insert(JudgeRulingRow), rows)


def list_rulings(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    judge: str | None = None,
    verdict: str | None = None,
    run_id: str | None = None,
    before: int | None = None,
    limit: int = 50,
) -> list[JudgeRuling]:
    """Rulings newest first; ``before`` a ruling id continues a listing after it.

    ``verdict`` is ``pass``, ``fail`` or ``unknown`` (an abstention).
    """
    conditions: list[ColumnElement[bool]] = []
    if viewer is not None:
        conditions.append(JudgeRulingRow.owner_key == owner_key(viewer))
    if agent is not None:
        conditions.append(JudgeRulingRow.agent == agent)
    if judge is not None:
        conditions.append(JudgeRulingRow.judge == judge)
    if run_id is not None:
        conditions.append(JudgeRulingRow.run_id == run_id)
    if before is not None:
        conditions.append(JudgeRulingRow.id < before)
    if verdict == "unknown":
        conditions.append(JudgeRulingRow.passed.is_(None))
    elif verdict in ("pass", "fail"):
        conditions.append(JudgeRulingRow.passed.is_(verdict == "pass"))
    query = (
        select(JudgeRulingRow).where(*conditions).order_by(JudgeRulingRow.id.desc()).limit(limit)
    )
    with store.guard("read judge rulings"), store.session() as session:
        return [_ruling(row) for row in session.scalars(query).all()]


def count_rulings(store: Store, *, viewer: str | None = None) -> int:
    """How many rulings ``viewer`` may see."""
    query = select(func.count()).select_from(JudgeRulingRow)
    if viewer is not None:
        query = query.where(JudgeRulingRow.owner_key == owner_key(viewer))
    with store.guard("count judge rulings"), store.session() as session:
        return int(session.scalar(query) or 0)


def _ruling(row: JudgeRulingRow) -> JudgeRuling:
    calls = row.calls if isinstance(row.calls, dict) else {}
    return JudgeRuling(
        id=row.id,
        run_id=row.run_id,
        agent=row.agent,
        owner=row.owner_key or None,
        judge=row.judge,
        passed=row.passed,
        explanation=row.explanation,
        trigger=row.trigger,
        model=ModelCalls.model_validate(calls) if calls else ModelCalls(),
        created_at=_aware(row.created_at),
    )


def undecided_runs(
    store: Store, *, viewer: str | None = None, limit: int = 50
) -> list[tuple[str, str, str | None, str, int, datetime]]:
    """Ingested runs the judges were asked about and none decided (each ruling an
    abstention), newest first: (run id, agent, owner, trigger, judges asked, when)."""
    decided = func.sum(case((JudgeRulingRow.passed.is_not(None), 1), else_=0))
    query = (
        select(
            JudgeRulingRow.run_id,
            JudgeRulingRow.run_hash,
            func.min(JudgeRulingRow.agent),
            func.min(JudgeRulingRow.owner_key),
            func.min(JudgeRulingRow.trigger),
            func.count(),
            func.max(JudgeRulingRow.created_at),
            func.max(JudgeRulingRow.id).label("newest"),
        )
        .group_by(JudgeRulingRow.run_id, JudgeRulingRow.run_hash)
        .having(decided == 0)
        .order_by(func.max(JudgeRulingRow.id).desc())
        .limit(limit)
    )
    if viewer is not None:
        query = query.where(JudgeRulingRow.owner_key == owner_key(viewer))
    with store.guard("read judge rulings"), store.session() as session:
        return [
            (run_id, agent, key or None, trigger, int(asked), _aware(at))
            for run_id, _hash, agent, key, trigger, asked, at, _newest in session.execute(query)
        ]


def online_tail(
    store: Store, *, limit: int = 50
) -> list[tuple[str, str, str | None, str | None, list[str], datetime]]:
    """Online results escalated that no judge resolved (the chain fell back to the
    heuristics, or none answered), newest first: (batch, prediction id, label, judge
    source, escalation reasons, when). Online results belong to no key."""
    from arbiter.store.online_models import OnlineResultRow

    unresolved = or_(
        OnlineResultRow.judge_source.is_(None),
        OnlineResultRow.judge_source == "heuristics_fallback",
    )
    query = (
        select(
            OnlineResultRow.batch_id,
            OnlineResultRow.prediction_id,
            OnlineResultRow.label,
            OnlineResultRow.judge_source,
            OnlineResultRow.result,
            OnlineResultRow.created_at,
        )
        .where(OnlineResultRow.escalated.is_(True), unresolved)
        .order_by(OnlineResultRow.id.desc())
        .limit(limit)
    )
    found = []
    with store.guard("read online results"), store.session() as session:
        for batch, prediction, label, source, result, at in session.execute(query):
            reasons = result.get("escalation_reasons") if isinstance(result, dict) else None
            shown = [str(r)[:300] for r in reasons[:10]] if isinstance(reasons, list) else []
            found.append((batch, prediction, label, source, shown, _aware(at)))
    return found
