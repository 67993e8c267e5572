"""Deployment settings set at runtime (the default band thresholds), kept as a history:
each change is a new row, the newest in force."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from arbiter.store.repository import Store
from arbiter.store.trust_models import DeploymentSettingRow

__all__ = ["deployment_setting", "deployment_setting_history", "save_deployment_setting"]


def save_deployment_setting(
    store: Store, key: str, value: dict[str, Any], *, by: str, now: datetime | None = None
) -> None:
    """Append a value of ``key`` (in force from now)."""
    row = DeploymentSettingRow(
        key=key, value=json.loads(json.dumps(value)), by=by, created_at=now or datetime.now(UTC)
    )
    with store.guard("keep a deployment setting"), store.session() as session, session.begin():
        session.add(row)


def deployment_setting(store: Store, key: str) -> tuple[dict[str, Any], str, datetime] | None:
    """The value of ``key`` in force, who set it and when; None: never set."""
    query = (
        select(DeploymentSettingRow)
        .where(DeploymentSettingRow.key == key)
        .order_by(DeploymentSettingRow.id.desc())
        .limit(1)
    )
    with store.guard("read a deployment setting"), store.session() as session:
        row = session.scalar(query)
        if row is None:
            return None
        moment = row.created_at
        when = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        value = row.value if isinstance(row.value, dict) else {}
        return value, row.by, when


def deployment_setting_history(
    store: Store, key: str, *, limit: int = 50
) -> list[tuple[dict[str, Any], str, datetime]]:
    """The newest ``limit`` values of ``key``, newest first: (value, who set it, when)."""
    query = (
        select(DeploymentSettingRow)
        .where(DeploymentSettingRow.key == key)
        .order_by(DeploymentSettingRow.id.desc())
        .limit(limit)
    )
    found: list[tuple[dict[str, Any], str, datetime]] = []
    with store.guard("read a deployment setting"), store.session() as session:
        for row in session.scalars(query):
            moment = row.created_at
            when = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
            found.append((row.value if isinstance(row.value, dict) else {}, row.by, when))
    return found
