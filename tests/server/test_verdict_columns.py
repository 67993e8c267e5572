"""A jury verdict row's ``decision``, ``confidence`` and ``escalate`` columns are shown
nowhere: the API and the pages read the verdict document (``verdicts.verdict``), which
``arbiter verify`` checks against the signature. Editing the columns behind Arbiter's
back changes nothing a person sees; should a page or endpoint start reading them,
verification must cover them, and this test says so."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlalchemy import update

from arbiter.store import Store
from arbiter.store.jury_models import VerdictRow
from tests.server.conftest import Seed

_NONCE = re.compile(r'nonce="[^"]*"')


def _shown(client: TestClient, verdict_id: int) -> tuple[object, object, str]:
    one = client.get(f"/v1/verdicts/{verdict_id}").json()
    listed = client.get("/v1/verdicts", params={"limit": 500}).json()["items"]
    page = client.get(f"/verdicts/{verdict_id}")
    assert page.status_code == 200
    return one, listed, _NONCE.sub("", page.text)


def test_edited_verdict_columns_change_nothing_shown(
    client: TestClient, server_store: Store, seed: Seed
) -> None:
    before = _shown(client, seed.verdict_id)
    one = before[0]
    assert isinstance(one, dict)
    assert (one["verdict"]["decision"], one["verdict"]["escalate"]) == ("REJECT", False)
    with server_store.engine.begin() as connection:
        connection.execute(
            update(VerdictRow)
            .where(VerdictRow.id == seed.verdict_id)
            .values(decision="ACCEPT", confidence=0.01, escalate=True)
        )
    assert _shown(client, seed.verdict_id) == before
