"""``POST /v1/assurance/pack``: the signed zip over the key's own records, verified offline;
refused without an API key, without a server signing key, and for a body it cannot use."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.attest import SigningKey, create_signing_key, verify_artifact
from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from tests.trust.helpers import save, stored


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], SigningKey]]:
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    mine, my_key = create_api_key(store, "mine")
    theirs, _ = create_api_key(store, "theirs")
    save(store, [stored(i, "my-agent", True) for i in range(3)], owner=mine.id)
    save(store, [stored(10 + i, "their-agent", False) for i in range(3)], owner=theirs.id)
    key = create_signing_key(tmp_path / "server-key.pem")
    app = create_app(Settings(home=tmp_path, signing_key=key.path), store=store)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {my_key}"}, key
    store.close()


def _member(data: bytes, name: str) -> Any:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return json.loads(archive.read(name))


def test_the_pack_is_the_key_s_own_records_signed_by_the_server(
    served: tuple[TestClient, dict[str, str], SigningKey],
) -> None:
    client, headers, key = served
    answer = client.post("/v1/assurance/pack", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/zip"
    found = verify_artifact(answer.content, key.public_key)
    assert found.ok, found.problems
    assert found.kind == "assurance_pack"
    assert answer.headers["x-arbiter-pack-id"] == found.record_id
    assert f'filename="assurance-{found.record_id}.zip"' in answer.headers["content-disposition"]
    agents = _member(answer.content, "agents.json")["agents"]
    assert [a["agent"] for a in agents] == ["my-agent"]
    assert b"their-agent" not in answer.content


def test_an_agent_named_in_the_body_narrows_the_pack(
    served: tuple[TestClient, dict[str, str], SigningKey],
) -> None:
    client, headers, _ = served
    answer = client.post("/v1/assurance/pack", json={"agent": "my-agent"}, headers=headers)
    assert answer.status_code == 200
    assert [a["agent"] for a in _member(answer.content, "agents.json")["agents"]] == ["my-agent"]
    assert _member(answer.content, "deployment.json")["scope"]["agent"] == "my-agent"


@pytest.mark.parametrize("agent", ["their-agent", "nobody"])
def test_an_agent_the_key_may_not_see_is_not_found(
    served: tuple[TestClient, dict[str, str], SigningKey], agent: str
) -> None:
    client, headers, _ = served
    answer = client.post("/v1/assurance/pack", json={"agent": agent}, headers=headers)
    assert answer.status_code == 404
    assert answer.json()["error"]["field"] == "body.agent"
    assert f"no agent named {agent!r}" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status"), [({"agent": ""}, 422), ({"agents": "x"}, 422), ({"agent": 3}, 422)]
)
def test_a_body_it_cannot_use_is_refused(
    served: tuple[TestClient, dict[str, str], SigningKey], body: Any, status: int
) -> None:
    client, headers, _ = served
    answer = client.post("/v1/assurance/pack", json=body, headers=headers)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == "invalid_request"


def test_without_an_api_key_it_is_401(
    served: tuple[TestClient, dict[str, str], SigningKey],
) -> None:
    client, _, _ = served
    assert client.post("/v1/assurance/pack").status_code == 401


def test_a_server_without_a_signing_key_says_so(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    _, secret = create_api_key(store, "tests")
    app = create_app(Settings(home=tmp_path), store=store)
    with TestClient(app) as client:
        answer = client.post("/v1/assurance/pack", headers={"X-API-Key": secret})
    store.close()
    assert answer.status_code == 400
    assert "no signing key is configured" in answer.json()["error"]["message"]
    assert "/v1/assurance/pack" in app.openapi()["paths"]
