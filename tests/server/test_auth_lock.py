"""A server that starts with API keys never opens: revoking the last key locks it.

Tried in-process (the app over a store with keys, the key revoked through the store) and
for real: ``arbiter serve --host 0.0.0.0`` with one key, then ``arbiter keys revoke``
from another process, while the server runs.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key, revoke_api_key
from tests.integration.serving import free_port
from tests.server.test_api_core import BROKEN
from tests.server.test_serve import _wait_healthy as wait_healthy

ARBITER = [str(Path(sys.executable).with_name("arbiter"))]


def test_revoking_the_last_key_locks_the_app(
    server_store: Store, app: FastAPI, client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    info, key = create_api_key(server_store, "only")
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/runs", headers=headers).status_code == 200
    assert revoke_api_key(server_store, info.id) == info
    with caplog.at_level(logging.WARNING, logger="arbiter.server"):
        for method, path, body in [
            ("GET", "/v1/runs", None),
            ("GET", "/v1/verdicts", None),
            ("POST", "/v1/arbitrate", BROKEN),
            ("GET", "/v1/openapi.json", None),
        ]:
            for sent in ({}, headers):
                answer = client.request(method, path, json=body, headers=sent)
                assert answer.status_code == 401, (method, path, sent)
                assert "none is left" in answer.json()["error"]["message"]
        assert client.get("/", headers={"Accept": "text/html"}).status_code == 401
    health = client.get("/v1/health")
    assert health.status_code == 200
    assert health.json()["auth"] == "locked"
    locked_lines = [r for r in caplog.records if "locked" in r.getMessage()]
    assert len(locked_lines) == 1  # said once, not per request
    # A new key serves again, and only with that key.
    _, fresh = create_api_key(server_store, "new")
    assert client.get("/v1/runs").status_code == 401
    assert client.get("/v1/runs", headers={"X-API-Key": fresh}).status_code == 200
    assert client.get("/v1/health").json()["auth"] == "keys"


def test_an_app_that_saw_a_key_after_start_stays_closed(
    server_store: Store, client: TestClient
) -> None:
    assert client.get("/v1/runs").status_code == 200  # open: no key yet
    info, _ = create_api_key(server_store, "later")
    assert client.get("/v1/runs").status_code == 401
    revoke_api_key(server_store, info.id)
    answer = client.get("/v1/runs")
    assert answer.status_code == 401
    assert "none is left" in answer.json()["error"]["message"]


def test_require_keys_setting_locks_an_app_without_keys(
    server_store: Store, tmp_path: Path
) -> None:
    settings = Settings(db_url=server_store.url, home=tmp_path, server_require_keys=True)
    with TestClient(create_app(settings, store=server_store)) as client:
        assert client.get("/v1/runs").status_code == 401
        assert client.get("/v1/health").json()["auth"] == "locked"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose store is private to the test."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("ARBITER_", "OTEL_"))}
    return {**kept, "ARBITER_HOME": str(tmp_path / "home")}


def _arbiter(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ARBITER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


class _Lines:
    """The lines a process writes to stderr, read on a thread; waits are on a queue."""

    def __init__(self, stream: object) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        while True:
            line = self.lines.get(timeout=timeout)
            self.seen.append(line)
            if text in line:
                return line


@pytest.fixture
def public_server(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, _Lines, str]]:
    """``arbiter serve --host 0.0.0.0`` over a store with one key: (URL, stderr, key id)."""
    made = _arbiter(env, tmp_path, "keys", "create", "--name", "only")
    assert made.returncode == 0, made.stderr
    key_id = made.stderr.split("created key ")[1].split()[0]
    env["TEST_KEY"] = made.stdout.strip()
    port = free_port()
    process = subprocess.Popen(
        [*ARBITER, "serve", "--host", "0.0.0.0", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _Lines(process.stderr)
        lines.wait_for("arbiter serve: http://0.0.0.0")
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process)
        yield url, lines, key_id
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_public_server_is_locked_not_opened_when_its_last_key_is_revoked(
    public_server: tuple[str, _Lines, str], env: dict[str, str], tmp_path: Path
) -> None:
    url, lines, key_id = public_server
    key = {"Authorization": f"Bearer {env['TEST_KEY']}"}
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/v1/runs").status_code == 401
        assert http.get("/v1/runs", headers=key).status_code == 200
        revoked = _arbiter(env, tmp_path, "keys", "revoke", key_id)
        assert revoked.returncode == 0, revoked.stderr
        assert "is locked" in revoked.stderr
        for method, path, body in [
            ("GET", "/v1/runs", None),
            ("GET", "/v1/verdicts", None),
            ("POST", "/v1/arbitrate", BROKEN),
            ("GET", "/v1/openapi.json", None),
        ]:
            answer = http.request(method, path, json=body)
            assert answer.status_code == 401, (method, path, answer.text)
            assert "none is left" in answer.json()["error"]["message"]
        assert http.get("/v1/verdicts").json()["error"]["code"] == "unauthorized"
        assert http.get("/v1/health").json()["auth"] == "locked"
    assert "locked" in lines.wait_for("locked")


def test_serve_refuses_to_start_locked(env: dict[str, str], tmp_path: Path) -> None:
    started = _arbiter(
        {**env, "ARBITER_SERVER_REQUIRE_KEYS": "true"}, tmp_path, "serve", "--port", "9"
    )
    assert started.returncode == 3
    assert "ARBITER_SERVER_REQUIRE_KEYS is set and no API key exists" in started.stderr
