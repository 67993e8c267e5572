"""Fixtures shared across test packages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.store import Store
from arbiter.store.models import Base

POSTGRES_URL = os.environ.get("ARBITER_TEST_POSTGRES_URL")


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
    url = f"sqlite:///{tmp_path / 'store.db'}" if request.param == "sqlite" else POSTGRES_URL
    assert url
    opened = Store(url)
    Base.metadata.drop_all(opened.engine)
    Base.metadata.create_all(opened.engine)
    yield opened
    opened.close()
