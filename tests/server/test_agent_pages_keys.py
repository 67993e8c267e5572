"""The agent and annotation pages on a server with API keys: without a key a 401 page;
with one, only what the key may see (its own records; an admin all of them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arbiter.config import Settings
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from arbiter.store.ownership_repository import set_owners
from arbiter.store.trajectory_repository import list_trajectories
from tests.server.pages.agents_seed import seed_agents
from tests.server.pages.conftest import run_sync

PAGES = [
    "/agents",
    "/agents/weather-bot",
    "/annotations",
    "/calibration",
    "/fleet",
    "/fleet/compare",
    "/thresholds",
]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, str, str, str]:
    """A client, a key that owns weather-bot's stored runs, another key, an admin key."""
    from arbiter.server.app import create_app

    root: Path = tmp_path_factory.mktemp("keyed-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run_sync(seed_agents(store, root))  # beside Playwright's loop, on a thread of its own
    owner, owner_key = create_api_key(store, "owner")
    _, other_key = create_api_key(store, "other")
    _, admin_key = create_api_key(store, "admin", admin=True)
    stored, _ = list_trajectories(store, agent="weather-bot")
    set_owners(store, "trajectory", [s.id for s in stored], owner.id)
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    return TestClient(app), owner_key, other_key, admin_key


@pytest.mark.parametrize("path", PAGES)
def test_a_page_without_a_key_is_a_401_page(
    keyed: tuple[TestClient, str, str, str], path: str
) -> None:
    client = keyed[0]
    response = client.get(path)
    assert response.status_code == 401
    assert "An API key is needed" in response.text
    assert response.headers["content-type"].startswith("text/html")


def _cards(client: TestClient, key: str) -> list[str]:
    page = client.get("/agents", headers={"Authorization": f"Bearer {key}"})
    assert page.status_code == 200
    return re.findall(r'class="card-name">([^<]*)<', page.text)


def test_a_key_sees_its_own_agents_and_an_admin_all(
    keyed: tuple[TestClient, str, str, str],
) -> None:
    client, owner_key, other_key, admin_key = keyed
    assert _cards(client, owner_key) == ["weather-bot"]
    assert _cards(client, other_key) == []
    assert len(_cards(client, admin_key)) == 5
    hidden = client.get("/agents/weather-bot", headers={"X-API-Key": other_key})
    assert hidden.status_code == 404


def test_a_key_cannot_open_or_label_what_it_may_not_see(
    keyed: tuple[TestClient, str, str, str],
) -> None:
    client, _, other_key, admin_key = keyed
    admin = {"Authorization": f"Bearer {admin_key}"}
    queue = client.get("/annotations", params={"show": "all"}, headers=admin).text
    item = re.search(r'name="item" value="([^"]*)"', queue)
    shown = re.search(r'name="shown" value="([^"]*)"', queue)
    assert item is not None
    assert shown is not None
    other = {"X-API-Key": other_key}
    assert "ruling-actions" not in client.get("/annotations", headers=other).text
    data = {
        "item": item[1],
        "judge": "seed_groundedness",
        "shown": shown[1],
        "label": "agree",
        "annotator": "Oz",
    }
    refused = client.post("/annotations", data=data, headers=other, follow_redirects=False)
    assert refused.status_code == 404
    stored = client.post("/annotations", data=data, headers=admin, follow_redirects=False)
    assert stored.status_code == 303
    trajectory = client.get(f"/trajectories/{item[1]}", headers=other)
    assert trajectory.status_code == 404


def _matrix(client: TestClient, key: str) -> list[str]:
    page = client.get("/fleet", headers={"Authorization": f"Bearer {key}"})
    assert page.status_code == 200
    return re.findall(r'<th scope="row" class="matrix-agent"><a href="[^"]*">([^<]*)<', page.text)


def test_the_fleet_shows_a_key_its_own_agents_and_an_admin_all(
    keyed: tuple[TestClient, str, str, str],
) -> None:
    client, owner_key, other_key, admin_key = keyed
    assert _matrix(client, owner_key) == ["weather-bot"]
    assert _matrix(client, other_key) == []
    assert sorted(_matrix(client, admin_key)) == ["billing-flow", "weather-bot"]
    other = {"X-API-Key": other_key}
    hidden = client.get("/fleet/compare?a=weather-bot&b=weather-bot", headers=other)
    assert hidden.status_code == 404
    assert "weather-bot" not in hidden.text.split("<main", 1)[1].replace('value=""', "")


def test_the_header_count_is_the_keys_own(keyed: tuple[TestClient, str, str, str]) -> None:
    from arbiter.store.api_key_repository import find_api_key
    from arbiter.store.trust_repository import append_event

    client, owner_key, other_key, admin_key = keyed
    store = client.app.state.store  # type: ignore[attr-defined]
    owner = find_api_key(store, owner_key)
    assert owner is not None
    append_event(
        store,
        kind="breaker_trip",
        severity="danger",
        agent="weather-bot",
        owner=owner.id,
        message="conduct fell to at_risk",
    )
    counts = {}
    for name, key in (("owner", owner_key), ("other", other_key), ("admin", admin_key)):
        page = client.get("/agents", headers={"X-API-Key": key})
        found = re.search(r'id="header-unacked"[^>]*>(\d+)<', page.text)
        assert found is not None
        counts[name] = int(found.group(1))
    assert counts == {"owner": 1, "other": 0, "admin": 1}
    assert 'id="header-unacked"' not in client.get("/agents").text  # no key: no count


def test_the_thresholds_page_says_only_an_admin_key_may_set_them(
    keyed: tuple[TestClient, str, str, str],
) -> None:
    client, owner_key, _, admin_key = keyed
    mine = client.get("/thresholds", headers={"X-API-Key": owner_key}).text
    assert "this key is not an admin key" in mine
    assert (
        "this key is not an admin key"
        not in client.get("/thresholds", headers={"X-API-Key": admin_key}).text
    )


def test_only_an_admin_key_sets_the_thresholds_from_the_page(
    keyed: tuple[TestClient, str, str, str],
) -> None:
    client, owner_key, _, admin_key = keyed
    form = {"preset": "strict", "danger.max_cost_usd": "0.4"}
    refused = client.post("/thresholds", data=form, headers={"X-API-Key": owner_key})
    assert refused.status_code == 403
    assert "Only an admin key" in refused.text
    assert "&gt; 0.4" not in refused.text  # nothing was set
    assert client.post("/thresholds", data=form).status_code == 401
    done = client.post(
        "/thresholds", data=form, headers={"X-API-Key": admin_key}, follow_redirects=False
    )
    assert done.status_code == 303
    page = client.get("/thresholds", headers={"X-API-Key": admin_key}).text
    assert "&gt; 0.4" in page
