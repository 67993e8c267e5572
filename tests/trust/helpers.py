"""Stored runs with chosen verdicts, for the trust tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from arbiter.contract import Score, StoredTrajectory
from arbiter.store import Store
from arbiter.store.trajectory_repository import save_trajectories

START = datetime(2026, 5, 1, tzinfo=UTC)


def stored(
    index: int,
    agent: str,
    passed: bool | None,
    *,
    at: datetime | None = None,
    cost: float | None = None,
) -> StoredTrajectory:
    """A stored run whose verdict is ``passed`` (a cost score carries the verdict)."""
    scores = []
    if passed is not None:
        value = cost if cost is not None else (0.01 if passed else 0.5)
        scores.append(
            Score(
                name="cost",
                value=value,
                passed=passed,
                band="healthy" if passed else "danger",
                metadata={"threshold_key": "max_cost_usd"},
            )
        )
        scores.append(Score(name="scope_adherence", value=1.0, passed=passed))
    return StoredTrajectory(
        id=f"tr-{agent[:6]}{index:018d}",
        created_at=at or START + timedelta(minutes=index),
        kind="trajectory",
        agent=agent,
        source_format="trajectory",
        trajectory_hash="sha256:" + "0" * 64,
        status="completed",
        passed=passed,
        band=None if passed is None else ("healthy" if passed else "danger"),
        convicted_by=[] if passed in (True, None) else ["cost"],
        scores=scores,
    )


def save(store: Store, records: list[StoredTrajectory], owner: str | None = None) -> None:
    save_trajectories(store, records, owner=owner)
