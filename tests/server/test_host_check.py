"""DNS rebinding and cross-site requests: the server answers only its own names, and takes
state-changing requests only from its own origin (or clients that send none).

The real-socket cases run the app under uvicorn on 127.0.0.1, so the address a request
reached the server on is the one uvicorn reports, as in ``arbiter serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.server.host_check import host_of
from arbiter.store import Store
from arbiter.store.browse_repository import verdict_ids
from tests.integration.serving import serve_asgi
from tests.server.test_api_core import BROKEN


@pytest.fixture
def served(server_store: Store, tmp_path: Path) -> Iterator[str]:
    """The app over the seeded store, on a real socket on 127.0.0.1 (its URL)."""
    settings = Settings(db_url=server_store.url, home=tmp_path / "home")
    with serve_asgi(create_app(settings, store=server_store)) as url:
        yield url


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "attacker.example:{port}", "127.0.0.1.nip.io:{port}", "LOCALHOST.evil"],
)
def test_a_loopback_server_refuses_a_foreign_host(served: str, host: str) -> None:
    with httpx.Client(base_url=served, timeout=10) as http:
        for path in ("/v1/health", "/v1/runs", "/", "/static/arbiter.css"):
            answer = http.get(path, headers={"Host": host.format(port=_port(served))})
            assert answer.status_code == 400, path
            error = answer.json()["error"]
            assert error["code"] == "bad_request"
            assert "DNS rebinding" in error["message"]
            assert "ARBITER_SERVER_ALLOWED_HOSTS" in error["message"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "localhost", "127.0.0.1", "[::1]:{port}"]
)
def test_a_loopback_server_answers_its_own_names(served: str, host: str) -> None:
    answer = httpx.get(
        f"{served}/v1/health", headers={"Host": host.format(port=_port(served))}, timeout=10
    )
    assert answer.status_code == 200


def test_a_configured_host_is_answered(server_store: Store, tmp_path: Path) -> None:
    settings = Settings(
        db_url=server_store.url,
        home=tmp_path,
        server_allowed_hosts="arbiter.example.com, Other.Example:8443",
    )
    with serve_asgi(create_app(settings, store=server_store)) as url:
        for host, status in [
            ("arbiter.example.com", 200),
            ("arbiter.example.com:8443", 200),
            ("other.example", 200),
            ("third.example", 400),
        ]:
            answer = httpx.get(f"{url}/v1/health", headers={"Host": host}, timeout=10)
            assert answer.status_code == status, host


def test_star_answers_any_host(server_store: Store, tmp_path: Path) -> None:
    settings = Settings(db_url=server_store.url, home=tmp_path, server_allowed_hosts="*")
    with TestClient(create_app(settings, store=server_store)) as client:
        assert client.get("/v1/health", headers={"Host": "anything.example"}).status_code == 200


def test_an_in_process_client_is_refused_a_foreign_host(client: TestClient) -> None:
    assert client.get("/v1/health", headers={"Host": "evil.example"}).status_code == 400
    assert client.get("/v1/health").status_code == 200


def _verdicts(store: Store, client: TestClient) -> int:
    return int(client.get("/v1/verdicts").json()["total"])


@pytest.mark.parametrize(
    "origin",
    [
        "http://attacker.example",
        "http://localhost:3000",
        "null",
        "file://",
        "http://testserver.attacker.example",
    ],
)
def test_a_post_from_another_origin_is_refused_and_stores_nothing(
    client: TestClient, server_store: Store, origin: str
) -> None:
    before = _verdicts(server_store, client)
    answer = client.post("/v1/arbitrate", json=BROKEN, headers={"Origin": origin})
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["code"] == "forbidden"
    assert "change state" in error["message"]
    assert _verdicts(server_store, client) == before


@pytest.mark.parametrize("origin", [None, "http://testserver", "https://testserver"])
def test_a_post_from_its_own_origin_or_without_one_is_taken(
    client: TestClient, origin: str | None
) -> None:
    headers = {"Origin": origin} if origin else {}
    assert client.post("/v1/arbitrate", json=BROKEN, headers=headers).status_code == 201


def test_a_read_with_another_origin_is_answered(client: TestClient) -> None:
    # Reading is guarded by the browser's same-origin policy (no CORS header is sent).
    answer = client.get("/v1/runs", headers={"Origin": "http://attacker.example"})
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


def test_a_post_from_a_configured_hosts_page_is_taken(server_store: Store, tmp_path: Path) -> None:
    settings = Settings(
        db_url=server_store.url, home=tmp_path, server_allowed_hosts="arbiter.example.com"
    )
    with TestClient(create_app(settings, store=server_store)) as client:
        made = client.post(
            "/v1/arbitrate", json=BROKEN, headers={"Origin": "https://arbiter.example.com"}
        )
        assert made.status_code == 201
        assert verdict_ids(server_store, made.json()["run_id"])


def test_a_real_cross_site_post_over_a_socket_is_refused(served: str) -> None:
    port = _port(served)
    answer = httpx.post(
        f"{served}/v1/arbitrate",
        json=BROKEN,
        headers={"Origin": f"http://127.0.0.1:{port + 1}"},
        timeout=30,
    )
    assert answer.status_code == 403
    same = httpx.post(
        f"{served}/v1/arbitrate",
        json=BROKEN,
        headers={"Origin": f"http://127.0.0.1:{port}"},
        timeout=30,
    )
    assert same.status_code == 201


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("Example.COM", ("example.com", None)),
        ("example.com:8080", ("example.com", "8080")),
        ("example.com:80", ("example.com", None)),
        ("example.com.:443", ("example.com", None)),
        ("[::1]:8080", ("::1", "8080")),
        ("[::1]", ("::1", None)),
        ("127.0.0.1:9", ("127.0.0.1", "9")),
    ],
)
def test_host_values_parse(given: str, parsed: tuple[str, str | None]) -> None:
    assert host_of(given) == parsed
