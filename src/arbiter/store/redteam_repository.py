"""Live red-team results kept in the store, and read back owner by owner.

One owner reads its own red-teams; an administrator (``viewer=None``) reads every
owner's. A red-team of another owner is not found.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from arbiter.contract.redteam import LiveRedTeamReport
from arbiter.store.redteam_models import RedTeamRunRow
from arbiter.store.repository import Store
from arbiter.store.trust_repository import owner_key

__all__ = ["latest_redteam_report", "save_redteam_report"]


def save_redteam_report(
    store: Store,
    report: LiveRedTeamReport,
    *,
    agent: str,
    owner: str | None,
    now: datetime | None = None,
) -> None:
    """Keep a red-team's report (its misses without their trajectories) under its run id.

    Args:
        store: The store.
        report: The report.
        agent: The agent's name, as its runs gave it (what a reader filters on).
        owner: The key that ran it; None: nobody.
        now: When it was recorded.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    kept = report.model_copy(
        update={"misses": [m.model_copy(update={"trajectory": None}) for m in report.misses]}
    )
    row = RedTeamRunRow(
        id=report.run_id,
        created_at=now or datetime.now(UTC),
        owner_key=owner_key(owner),
        agent=agent,
        passed=report.passed,
        report=kept.model_dump(mode="json"),
    )
    with store.guard("record a red-team"), store.session() as session, session.begin():
        session.add(row)


def latest_redteam_report(
    store: Store, *, viewer: str | None = None, agent: str | None = None
) -> tuple[str, LiveRedTeamReport] | None:
    """The newest red-team ``viewer`` may read (of ``agent`` when given): its agent's
    name and its report; None when there is none."""
    query = select(RedTeamRunRow).order_by(RedTeamRunRow.created_at.desc(), RedTeamRunRow.id.desc())
    if viewer is not None:
        query = query.where(RedTeamRunRow.owner_key == owner_key(viewer))
    if agent is not None:
        query = query.where(RedTeamRunRow.agent == agent)
    with store.guard("read red-teams"), store.session() as session:
        row = session.scalars(query.limit(1)).first()
        if row is None:
            return None
        return row.agent, LiveRedTeamReport.model_validate(row.report)
