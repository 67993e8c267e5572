"""The agent page's integrity seal from real signatures: with a signing key configured,
an agent whose runs all verify is sealed signed, one with an unsigned run unsigned, one
whose stored record changed after signing changed; without a key, unknown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from arbiter.attest import create_signing_key
from arbiter.config import Settings
from arbiter.service.attestation import attest_trajectories
from arbiter.store import Store
from arbiter.store.trajectory_models import TrajectoryRow
from tests.trust.helpers import save, stored


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    key = create_signing_key(tmp_path / "key.pem")
    for agent in ("signed-bot", "plain-bot", "changed-bot"):
        records = [stored(i, agent, True) for i in range(12)]
        save(store, records)
        if agent != "plain-bot":
            attest_trajectories(store, records, signer=key)
    changed = stored(0, "changed-bot", True).model_copy(update={"band": "review"})
    with store.engine.begin() as connection:
        connection.execute(
            update(TrajectoryRow)
            .where(TrajectoryRow.id == changed.id)
            .values(record=changed.model_dump(mode="json"))
        )
    return store


def _seal(client: TestClient, agent: str) -> str:
    page = client.get(f"/agents/{agent}")
    assert page.status_code == 200
    found = re.search(r'<span class="seal seal-(\w+) seal-big"', page.text)
    assert found is not None
    return found.group(1)


def test_the_seal_says_what_the_signatures_say(store: Store, tmp_path: Path) -> None:
    from arbiter.server.app import create_app

    settings = Settings(_env_file=None, home=tmp_path / "home", signing_key=tmp_path / "key.pem")  # type: ignore[call-arg]
    client = TestClient(create_app(settings, store=store))
    assert _seal(client, "signed-bot") == "signed"
    assert _seal(client, "plain-bot") == "unsigned"
    assert _seal(client, "changed-bot") == "changed"
    assert "capped at watch" in client.get("/agents/changed-bot").text
    # The fleet's matrix and the roster's cards say the same as each agent's page.
    for page in ("/fleet", "/agents"):
        text = client.get(page).text
        for agent, seal in (("signed-bot", "signed"), ("plain-bot", "unsigned")):
            row = text[text.index(f">{agent}<") :]
            assert re.search(r'<span class="seal seal-(\w+)"', row).group(1) == seal, page  # type: ignore[union-attr]


def test_without_a_key_the_seal_is_unknown(store: Store, tmp_path: Path) -> None:
    from arbiter.server.app import create_app

    settings = Settings(_env_file=None, home=tmp_path / "home")  # type: ignore[call-arg]
    client = TestClient(create_app(settings, store=store))
    assert _seal(client, "signed-bot") == "unknown"
