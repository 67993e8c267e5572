"""Integrity from real signatures: all verify -> signed; one unsigned -> capped at
proven; one changed after signing -> capped at watch."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from arbiter.attest import create_signing_key
from arbiter.service.attestation import attest_trajectories
from arbiter.service.trust import trust_statuses
from arbiter.service.trust_integrity import signature_checker
from arbiter.store import Store
from arbiter.store.trajectory_models import TrajectoryRow
from arbiter.trust import TrustPolicy
from tests.trust.helpers import START, save, stored

POLICY = TrustPolicy(min_runs_proven=5, min_runs_trusted=10)
NOW = START + timedelta(days=1)


def test_signatures_cap_the_state(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    key = create_signing_key(tmp_path / "key.pem")
    records = [stored(i, "bot", True) for i in range(12)]
    save(store, records)
    attest_trajectories(store, records, signer=key)
    check = signature_checker(store, key.public_key)

    def status() -> tuple[str, str]:
        found = trust_statuses(store, policy=POLICY, now=NOW, checker=check)[0]
        return found.integrity, found.state

    assert status() == ("signed", "trusted")
    extra = stored(50, "bot", True)
    save(store, [extra])  # stored without a signature
    assert status() == ("unsigned", "proven")
    attest_trajectories(store, [extra], signer=key)
    assert status() == ("signed", "trusted")
    changed = records[0].model_copy(update={"band": "review"}).model_dump(mode="json")
    with store.engine.begin() as connection:
        connection.execute(
            update(TrajectoryRow).where(TrajectoryRow.id == records[0].id).values(record=changed)
        )
    assert status() == ("changed", "watch")
    store.close()
