"""``arbiter serve`` and ``arbiter keys``: the README's set-up, served for real.

``arbiter demo`` fills a store, ``arbiter serve`` (a real uvicorn process) shows its
run and its jury verdict; with no key it binds loopback only and says so; keys are
printed once and stored as their digest.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import Result

ARBITER = [str(Path(sys.executable).with_name("arbiter"))]
"""The console script the README runs (``.venv/bin/arbiter``)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment whose store and home are private to the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARBITER_", "OTEL_"))}
    env["ARBITER_HOME"] = str(tmp_path / "home")
    return env


def _wait_healthy(url: str, process: subprocess.Popen[str], deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"arbiter serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # polling a real server's start, bounded by the deadline
    raise AssertionError("arbiter serve did not answer in time")


@pytest.fixture
def served(home: dict[str, str], tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Start ``arbiter serve`` on a free port, stopped at the end; returns its URL."""
    started: list[subprocess.Popen[str]] = []

    def start() -> str:
        port = _free_port()
        process = subprocess.Popen(
            [*ARBITER, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=home,
            stderr=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process)
        return url

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def test_serve_shows_the_demo_run_and_its_jury_verdict(
    home: dict[str, str], tmp_path: Path, served: Callable[[], str]
) -> None:
    demo = subprocess.run(
        [*ARBITER, "demo", "--quiet"], cwd=tmp_path, env=home, capture_output=True, text=True
    )
    assert demo.returncode == 0, demo.stderr
    url = served()
    runs = httpx.get(f"{url}/v1/runs").json()
    assert runs["total"] == 1
    run = runs["items"][0]
    assert run["system"]["target"] == "arbiter.demo.classifier:classify"
    assert run["status"] == "completed"
    report = httpx.get(f"{url}/v1/runs/{run['id']}").json()["report"]
    assert report["run_id"] == run["id"]
    verdicts = httpx.get(f"{url}/v1/verdicts").json()
    decisions = {v["case"]["id"]: v["verdict"]["decision"] for v in verdicts["items"]}
    assert decisions == {"clean_01": "ACCEPT", "multi_02": "REJECT"}
    rejected = next(v for v in verdicts["items"] if v["case"]["id"] == "multi_02")
    one = httpx.get(f"{url}/v1/verdicts/{rejected['id']}").json()
    assert one["verdict"]["decision"] == "REJECT"
    assert len(one["verdict"]["critiques"]) == 3


def test_serve_says_it_is_open_on_loopback(home: dict[str, str], tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [*ARBITER, "serve", "--port", str(port)],
        cwd=tmp_path,
        env=home,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert first.startswith(f"arbiter serve: http://127.0.0.1:{port} (open: no API key")
    assert "loopback only" in first


def test_serve_refuses_a_public_host_without_a_key(cli: Callable[..., Result]) -> None:
    result = cli("serve", "--host", "0.0.0.0", "--port", "9")
    assert result.code == 3
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert "--host 0.0.0.0: no API key is configured" in lines[0]
    assert "arbiter keys create" in lines[0]


def test_keys_create_prints_the_key_once_and_list_never(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    made = cli("keys", "create", "--name", "ci bot", "--admin")
    assert made.code == 0
    key = made.out.strip()
    assert key.startswith("arb_")
    assert "not shown again" in made.err
    listed = cli("keys", "list")
    assert listed.code == 0
    assert "ci bot" in listed.out
    assert "admin" in listed.out
    assert key not in listed.out + listed.err
    assert key.encode() not in (tmp_path / "store.db").read_bytes()


def test_keys_create_refuses_an_empty_name(cli: Callable[..., Result]) -> None:
    result = cli("keys", "create", "--name", " ")
    assert result.code == 3
    assert "--name" in result.err


def test_with_a_key_the_served_api_needs_it(
    home: dict[str, str], tmp_path: Path, served: Callable[[], str]
) -> None:
    made = subprocess.run(
        [*ARBITER, "keys", "create", "--name", "ci"],
        cwd=tmp_path,
        env=home,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    url = served()
    assert httpx.get(f"{url}/v1/runs").status_code == 401
    answer = httpx.get(f"{url}/v1/runs", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200
    assert answer.json() == {"items": [], "total": 0, "next": None}


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    from arbiter.service.serving import is_loopback

    assert is_loopback(host) is loopback


def test_a_revoked_key_is_gone(cli: Callable[..., Result]) -> None:
    made = cli("keys", "create", "--name", "temp")
    key_id = made.err.split("created key ")[1].split()[0]
    revoked = cli("keys", "revoke", key_id)
    assert revoked.code == 0
    assert f"revoked key {key_id} (temp)" in revoked.err
    assert "is locked" in revoked.err
    assert "temp" not in cli("keys", "list").out
    again = cli("keys", "revoke", key_id)
    assert again.code == 3
    assert f"no API key with id {key_id!r}" in again.err
