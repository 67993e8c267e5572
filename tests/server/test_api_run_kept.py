"""``GET /v1/runs/{id}`` answers from the report kept in the store while the run has not
moved on, so a server process that did not compute it serves it without reading the
run's results; a run that moved on is computed again."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import update

from arbiter.store import Store
from arbiter.store.report_models import RunReportRow
from tests.server.conftest import Seed


def _mark_kept(store: Store, run_id: str, name: str) -> None:
    """Change the kept report's dataset name: only a kept report can show it."""
    with store.session() as session, session.begin():
        row = session.get(RunReportRow, run_id)
        assert row is not None
        report = dict(row.report)
        report["dataset"] = name
        session.execute(
            update(RunReportRow).where(RunReportRow.run_id == run_id).values(report=report)
        )


def test_a_run_report_is_served_from_the_kept_one(
    client: TestClient, seed: Seed, server_store: Store
) -> None:
    computed = client.get(f"/v1/runs/{seed.run_id}")
    assert computed.status_code == 200
    _mark_kept(server_store, seed.run_id, "as kept")
    again = client.get(f"/v1/runs/{seed.run_id}")
    assert again.status_code == 200
    assert again.json()["report"]["dataset"] == "as kept"
    assert again.json()["info"] == computed.json()["info"]


def test_a_run_that_moved_on_since_its_report_was_kept_is_computed_again(
    client: TestClient, seed: Seed, server_store: Store
) -> None:
    first = client.get(f"/v1/runs/{seed.run_id}").json()
    _mark_kept(server_store, seed.run_id, "as kept")
    with server_store.session() as session, session.begin():
        session.execute(
            update(RunReportRow).where(RunReportRow.run_id == seed.run_id).values(n_done=1)
        )
    fresh = client.get(f"/v1/runs/{seed.run_id}").json()
    assert fresh["report"]["dataset"] == first["report"]["dataset"] != "as kept"
