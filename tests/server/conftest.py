"""Fixtures of the server tests: an app over a tmp SQLite store seeded with real records.

The seed is made once per session by the real code paths (two offline runs of the demo
screener, a jury run of the offline critics) into a template database; each test gets
its own copy, so tests may write without seeing each other.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store


@dataclass(frozen=True)
class Seed:
    """What the seeded store holds."""

    path: Path
    """The template database file."""
    run_id: str
    """An offline run of the demo screener (60 examples, tagged team=risk)."""
    other_run_id: str
    """A second run of the same screener on the same examples (tagged team=ops)."""
    jury_run_id: str
    """A jury run of the offline critics on clean_01 and multi_02."""
    verdict_id: int
    """The id of the verdict on multi_02 (a REJECT)."""
    clean_verdict_id: int
    """The id of the verdict on clean_01."""


async def _seed(store: Store) -> tuple[str, str, str]:
    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.demo import DEMO_LABEL_MAP, DEMO_TARGET, dataset_path
    from arbiter.jury.cases import bundled_cases_path, load_cases
    from arbiter.jury.critics import DEFAULT_ROSTER
    from arbiter.service.jury import judge_cases
    from arbiter.service.runs import start_run
    from arbiter.systems.python import PythonSystem

    data = load_dataset(dataset_path())
    config = RunConfig(label_map=DEMO_LABEL_MAP, limit=60)
    first = await start_run(
        PythonSystem(DEMO_TARGET), data, config=config, store=store, tags={"team": "risk"}
    )
    second = await start_run(
        PythonSystem(DEMO_TARGET), data, config=config, store=store, tags={"team": "ops"}
    )
    bundled = {c.id: c for c in load_cases(bundled_cases_path())}
    judged = await judge_cases(
        store,
        "judge",
        list(DEFAULT_ROSTER),
        [bundled["clean_01"], bundled["multi_02"]],
        config={"source": "tests"},
        audit_root=None,
        concurrency=2,
    )
    assert first.run_id
    assert second.run_id
    return first.run_id, second.run_id, judged.run_id


@pytest.fixture(scope="session")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """The seeded template database (made once per session)."""
    from arbiter.store.browse_repository import verdict_ids

    path = tmp_path_factory.mktemp("server-seed") / "seed.db"
    store = Store(f"sqlite:///{path}")
    try:
        # In a thread: the first test asking may be async, inside a running loop.
        with ThreadPoolExecutor(1) as pool:
            run_id, other_id, jury_id = pool.submit(lambda: asyncio.run(_seed(store))).result()
        ids = verdict_ids(store, jury_id)
        with store.engine.connect() as connection:  # fold the WAL into the file to copy it
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return Seed(path, run_id, other_id, jury_id, ids["multi_02"], ids["clean_01"])


@pytest.fixture
def server_store(seed: Seed, tmp_path: Path) -> Iterator[Store]:
    """A private copy of the seeded store."""
    path = tmp_path / "server.db"
    shutil.copyfile(seed.path, path)
    opened = Store(f"sqlite:///{path}")
    yield opened
    opened.close()


@pytest.fixture
def app(server_store: Store, tmp_path: Path) -> FastAPI:
    """The app over the private seeded store."""
    settings = Settings(db_url=server_store.url, home=tmp_path / "home")
    return create_app(settings, store=server_store)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """A client of the app in-process (Starlette's TestClient: httpx over ASGI, the app
    on a loop of its own thread, so it works beside Playwright's sync API too)."""
    with TestClient(app) as c:
        yield c


@pytest.fixture
async def async_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An async httpx client of the app in-process (ASGI, no socket)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
