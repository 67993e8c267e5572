"""Fixtures shared across test packages."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arbiter.cli.main import main
from arbiter.store import Store
from arbiter.store.models import Base

POSTGRES_URL = os.environ.get("ARBITER_TEST_POSTGRES_URL")


@functools.cache
def postgres_url() -> str:
    """The PostgreSQL database of this test process: under pytest-xdist each worker gets
    a database of its own on the named server (``arbiter_test_gw0``, ...), created on first
    use, so that workers dropping and creating tables never meet."""
    assert POSTGRES_URL
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return POSTGRES_URL
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(POSTGRES_URL)
    name = f"{base.database}_{worker}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if found is None:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param(
            "postgresql",
            marks=pytest.mark.skipif(
                not POSTGRES_URL,
                reason="no PostgreSQL server: set ARBITER_TEST_POSTGRES_URL (.ci/run does)",
            ),
        ),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store on SQLite and, when a server is named, on PostgreSQL: same code."""
    url = f"sqlite:///{tmp_path / 'store.db'}" if request.param == "sqlite" else postgres_url()
    assert url
    opened = Store(url)
    Base.metadata.drop_all(opened.engine)
    Base.metadata.create_all(opened.engine)
    yield opened
    opened.close()


class Result:
    """Exit code and captured output of one command."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Result]:
    """Invoke the CLI with a private store and home under ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARBITER_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("ARBITER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*args: str) -> Result:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke
