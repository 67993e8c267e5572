"""``arbiter serve --workers 2`` over a real PostgreSQL server: two real uvicorn worker
processes on one port, each answering from the store alone. Concurrent POSTs from
several clients land once each, and what one process stored or computed the other
serves. With SQLite, more than one process is refused before anything starts."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import POSTGRES_URL, Result, postgres_url

ARBITER = str(Path(sys.executable).with_name("arbiter"))

needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason="no PostgreSQL server: set ARBITER_TEST_POSTGRES_URL (.ci/run does)"
)


def test_more_than_one_process_over_sqlite_is_refused_in_one_line(
    cli: Callable[..., Result],
) -> None:
    done = cli("serve", "--workers", "2")
    assert done.code == 3
    lines = done.err.strip().splitlines()
    assert len(lines) == 1
    assert "--workers 2: more than one server process needs a PostgreSQL store" in lines[0]
    assert "Traceback" not in done.err


@pytest.fixture
def pg_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI over an emptied PostgreSQL store."""
    from sqlalchemy import text

    from arbiter.store import Store
    from arbiter.store.models import Base

    url = postgres_url()
    store = Store(url)
    try:
        Base.metadata.drop_all(store.engine)
        with store.engine.begin() as connection:
            connection.execute(text("DROP TABLE IF EXISTS model_responses"))
    finally:
        store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARBITER_", "OTEL_"))}
    env |= {"ARBITER_HOME": str(tmp_path / "home"), "ARBITER_DB_URL": url}
    return env


def _workers(supervisor: int) -> list[int]:
    """The server processes uvicorn started (its spawned children that are not
    multiprocessing's resource tracker)."""
    import psutil

    found = []
    for child in psutil.Process(supervisor).children(recursive=True):
        command = " ".join(child.cmdline())
        if "resource_tracker" not in command:
            found.append(child.pid)
    return found


def _owner(connection: http.client.HTTPConnection, pids: list[int]) -> int | None:
    """The server process holding the other end of ``connection``."""
    import psutil

    assert connection.sock is not None
    local = connection.sock.getsockname()[1]
    for pid in pids:
        for link in psutil.Process(pid).net_connections(kind="tcp"):
            if link.raddr and link.raddr.port == local:
                return pid
    return None


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, Any]:
    connection.request("GET", path)
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


@pytest.fixture
def two_workers(pg_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, list[int], int]]:
    """``arbiter serve --workers 2`` over the emptied store: its URL, its two server
    processes and its port."""
    from tests.server.test_serve import _free_port, _wait_healthy

    port = _free_port()
    process = subprocess.Popen(
        [ARBITER, "serve", "--port", str(port), "--workers", "2"],
        cwd=tmp_path,
        env=pg_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, deadline_s=120)
        deadline = time.monotonic() + 60
        while len(pids := _workers(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the real server's start, bounded by the deadline
        assert len(pids) == 2
        yield url, pids, port
    finally:
        process.terminate()
        process.wait(timeout=60)


def _one_connection_per_worker(port: int, pids: list[int]) -> dict[int, Any]:
    """A kept-alive connection to each server process: new connections until the
    kernel has handed one to each."""
    found: dict[int, http.client.HTTPConnection] = {}
    for _ in range(400):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        assert _get(connection, "/v1/health")[0] == 200
        owner = _owner(connection, pids)
        if owner is None or owner in found:
            connection.close()
            continue
        found[owner] = connection
        if len(found) == len(pids):
            return found
    raise AssertionError(f"only {len(found)} of the server processes took a connection")


@needs_postgres
def test_two_server_processes_over_postgres_answer_from_the_store_alone(
    two_workers: tuple[str, list[int], int], pg_env: dict[str, str], tmp_path: Path
) -> None:
    url, pids, port = two_workers
    # A run stored while both processes run: listed by one, reported by the other, and
    # the report the second computed and kept is the one the first serves.
    demo = subprocess.run(
        [ARBITER, "demo", "--json", "-q"], cwd=tmp_path, env=pg_env, capture_output=True, text=True
    )
    assert demo.returncode == 0, demo.stderr
    run_id = json.loads(demo.stdout)["run_id"]
    # (uvicorn closes a connection idle for 5 s: connections are made when needed)
    first, second = _one_connection_per_worker(port, pids).values()
    status, listed = _get(first, "/v1/runs")
    assert status == 200
    assert [item["id"] for item in listed["items"]] == [run_id]
    status, from_second = _get(second, f"/v1/runs/{run_id}")
    assert status == 200
    status, from_first = _get(first, f"/v1/runs/{run_id}")
    assert status == 200
    assert from_first == from_second
    assert from_first["report"]["run_id"] == run_id

    # Several clients POSTing at once, each on connections of its own: every verdict
    # is stored once, whichever process took it, and both processes list them all.
    def post(client: int) -> list[int]:
        ids = []
        with httpx.Client(base_url=url, timeout=60) as http:
            for i in range(4):
                body = {"id": f"c{client}-{i}", "task": "Sum 2 and 2.", "context": "2 + 2 = 4.",
                        "output": "It is 4."}  # fmt: skip
                answer = http.post("/v1/arbitrate", json=body)
                assert answer.status_code == 201, answer.text
                ids.append(answer.json()["id"])
        return ids

    with ThreadPoolExecutor(max_workers=5) as pool:
        stored = [verdict for ids in pool.map(post, range(5)) for verdict in ids]
    assert len(stored) == len(set(stored)) == 20
    first.close()
    second.close()
    for connection in _one_connection_per_worker(port, pids).values():
        status, page = _get(connection, "/v1/verdicts?limit=100")
        assert status == 200
        assert page["total"] == 20
        assert sorted(item["id"] for item in page["items"]) == sorted(stored)
        status, _ = _get(connection, f"/v1/verdicts/{stored[0]}")
        assert status == 200
        connection.close()
