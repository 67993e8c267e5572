"""API keys and ownership: a key sees its own records, an admin all; unknown keys get 401."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key, find_api_key
from arbiter.store.ownership_repository import set_owner
from tests.server.conftest import Seed
from tests.server.test_api_core import BROKEN


@dataclass(frozen=True)
class Keys:
    a: dict[str, str]
    b: dict[str, str]
    admin: dict[str, str]
    a_id: str


@pytest.fixture
def keys(server_store: Store) -> Keys:
    a_info, a = create_api_key(server_store, "team a")
    _, b = create_api_key(server_store, "team b")
    _, admin = create_api_key(server_store, "ops", admin=True)
    return Keys(
        a={"Authorization": f"Bearer {a}"},
        b={"X-API-Key": b},
        admin={"Authorization": f"Bearer {admin}"},
        a_id=a_info.id,
    )


def test_a_key_is_stored_as_its_digest_only(server_store: Store) -> None:
    info, key = create_api_key(server_store, "ci")
    assert key.startswith(f"arb_{info.id}_")
    assert find_api_key(server_store, key) == info
    assert find_api_key(server_store, key + "x") is None
    raw = server_store.engine.raw_connection()
    try:
        rows = raw.execute("SELECT * FROM api_keys").fetchall()
    finally:
        raw.close()
    assert not any(key in str(value) for row in rows for value in row)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer arb_nope_nope"}, {"X-API-Key": "wrong"}],
    ids=["no key", "unknown bearer", "unknown header"],
)
def test_without_a_known_key_every_route_is_401(
    client: TestClient, keys: Keys, headers: dict[str, str]
) -> None:
    for path in ("/v1/runs", "/v1/verdicts", "/v1/critics"):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "unauthorized"
        assert answer.headers["www-authenticate"] == "Bearer"


def test_health_needs_no_key_and_says_keys_are_on(client: TestClient, keys: Keys) -> None:
    answer = client.get("/v1/health")
    assert answer.status_code == 200
    assert answer.json()["auth"] == "keys"


def test_a_verdict_is_seen_by_its_key_and_admins_only(client: TestClient, keys: Keys) -> None:
    made = client.post("/v1/arbitrate", json=BROKEN, headers=keys.a)
    assert made.status_code == 201
    verdict_id = made.json()["id"]
    assert client.get(f"/v1/verdicts/{verdict_id}", headers=keys.a).status_code == 200
    assert client.get(f"/v1/verdicts/{verdict_id}", headers=keys.admin).status_code == 200
    hidden = client.get(f"/v1/verdicts/{verdict_id}", headers=keys.b)
    missing = client.get("/v1/verdicts/999999", headers=keys.b)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"]["code"] == "not_found"
    totals = {
        who: client.get("/v1/verdicts", headers=headers).json()["total"]
        for who, headers in (("a", keys.a), ("b", keys.b), ("admin", keys.admin))
    }
    assert totals == {"a": 1, "b": 0, "admin": 3}  # the admin also sees the 2 seeded


def test_replay_of_another_keys_run_is_404(client: TestClient, keys: Keys) -> None:
    run_id = client.post("/v1/arbitrate", json=BROKEN, headers=keys.a).json()["run_id"]
    mine = client.post("/v1/replay", json={"run_id": run_id}, headers=keys.a)
    assert mine.status_code == 200
    assert mine.json()["n_judgments"] == 1
    assert client.post("/v1/replay", json={"run_id": run_id}, headers=keys.b).status_code == 404
    latest = client.post("/v1/replay", json={}, headers=keys.b)
    assert latest.status_code == 400
    assert latest.json()["error"]["code"] == "bad_request"


def test_runs_are_scoped_to_their_owner(
    client: TestClient, keys: Keys, server_store: Store, seed: Seed
) -> None:
    # Runs made at the command line are nobody's: only the admin sees them.
    assert client.get("/v1/runs", headers=keys.a).json()["total"] == 0
    assert client.get("/v1/runs", headers=keys.admin).json()["total"] == 2
    set_owner(server_store, "run", seed.run_id, keys.a_id)
    assert [r["id"] for r in client.get("/v1/runs", headers=keys.a).json()["items"]] == [
        seed.run_id
    ]
    assert client.get("/v1/runs", headers=keys.b).json()["total"] == 0
    for path in (f"/v1/runs/{seed.run_id}", f"/v1/runs/{seed.run_id}/results"):
        assert client.get(path, headers=keys.a).status_code == 200
        assert client.get(path, headers=keys.b).status_code == 404
        assert client.get(path, headers=keys.admin).status_code == 200
    pair = {"a": seed.run_id, "b": seed.other_run_id}
    assert client.get("/v1/compare", params=pair, headers=keys.a).status_code == 404
    assert client.get("/v1/compare", params=pair, headers=keys.admin).status_code == 200


def test_a_revoked_key_is_refused(client: TestClient, server_store: Store) -> None:
    from arbiter.store.api_key_repository import revoke_api_key

    info, key = create_api_key(server_store, "leaked")
    create_api_key(server_store, "still here")
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/runs", headers=headers).status_code == 200
    assert revoke_api_key(server_store, info.id) == info
    assert client.get("/v1/runs", headers=headers).status_code == 401


def _common_prefix(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[:n]


def test_a_prefix_shared_with_hidden_runs_answers_as_if_they_did_not_exist(
    client: TestClient, keys: Keys, server_store: Store, seed: Seed
) -> None:
    shared = _common_prefix(seed.run_id, seed.other_run_id)
    assert shared  # both seeded runs start with the same date
    answers = {
        given: client.get(f"/v1/runs/{given}", headers=keys.a)
        for given in (shared, seed.run_id, "zz-no-such-run")
    }
    assert {a.status_code for a in answers.values()} == {404}
    messages = {given: a.json()["error"]["message"] for given, a in answers.items()}
    for given, message in messages.items():
        assert message == f"no run matches id {given!r}"
    # With one of them its own, the shared prefix names that one: the other is not counted.
    set_owner(server_store, "run", seed.run_id, keys.a_id)
    mine = client.get(f"/v1/runs/{shared}", headers=keys.a)
    assert mine.status_code == 200
    assert mine.json()["info"]["id"] == seed.run_id
    assert client.get(f"/v1/runs/{shared}/results", headers=keys.a).status_code == 200
    # An admin sees both, and is told the prefix is ambiguous.
    both = client.get(f"/v1/runs/{shared}", headers=keys.admin)
    assert both.status_code == 404
    assert both.json()["error"]["message"] == f"more than one run matches id {shared!r}"


def test_a_jury_run_prefix_of_another_key_answers_as_absent(client: TestClient, keys: Keys) -> None:
    made = client.post("/v1/arbitrate", json=BROKEN, headers=keys.a).json()["run_id"]
    prefix = made[:10]
    hidden = client.post("/v1/replay", json={"run_id": prefix}, headers=keys.b)
    absent = client.post("/v1/replay", json={"run_id": "zz-none"}, headers=keys.b)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["error"]["message"] == f"no jury run matches id {prefix!r}"
    assert absent.json()["error"]["message"] == "no jury run matches id 'zz-none'"
