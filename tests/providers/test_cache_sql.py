"""The model-call cache in the store's database: what one process stores, another
answers from, on SQLite and on PostgreSQL; what goes wrong is a miss, never an error."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from arbiter.judging.context import JudgingContext
from arbiter.providers.base import CompletionResponse
from arbiter.providers.cache import CachedProvider
from arbiter.providers.cache_sql import TABLE_NAME, SqlResponseCache
from arbiter.store import Store
from tests.providers.test_cache import ANSWER, CountingProvider, request


@pytest.fixture
def url(store: Store) -> str:
    """The store's URL, its cache table emptied (the store fixture drops only its own)."""
    with store.engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {TABLE_NAME}"))
    return store.url


def test_an_answer_stored_by_one_cache_is_found_by_another_on_the_same_database(
    url: str,
) -> None:
    writer, reader = SqlResponseCache(url), SqlResponseCache(url)
    try:
        assert reader.get("k" * 64) is None
        answer = CompletionResponse(text=ANSWER, model="judge-1", cached=True)
        assert writer.put("k" * 64, answer)
        found = reader.get("k" * 64)
        assert found is not None
        assert (found.text, found.model, found.cached) == (ANSWER, "judge-1", False)
        assert writer.put("k" * 64, CompletionResponse(text='{"verdict": "fail"}', model="m"))
        replaced = reader.get("k" * 64)
        assert replaced is not None
        assert replaced.text == '{"verdict": "fail"}'
        assert reader.entries() == 1
    finally:
        writer.close()
        reader.close()


async def test_a_request_asked_through_one_context_is_answered_from_the_store_in_the_next(
    url: str,
) -> None:
    provider = CountingProvider()
    for _ in range(2):  # two contexts: two workers building their scorers
        context = JudgingContext(use_cache=True, cache_url=url)
        assert isinstance(context.response_cache(), SqlResponseCache)
        cached = CachedProvider(provider, context.response_cache())
        await cached.complete(request())
        await context.aclose()
    assert len(provider.requests) == 1


def test_another_process_answers_from_what_this_one_stored(url: str) -> None:
    cache = SqlResponseCache(url)
    try:
        assert cache.put("p" * 64, CompletionResponse(text=ANSWER, model="judge-1"))
    finally:
        cache.close()
    script = (
        "import sys\n"
        "from arbiter.providers.cache_sql import SqlResponseCache\n"
        "found = SqlResponseCache(sys.argv[1]).get('p' * 64)\n"
        "print(found.text if found else 'miss')\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script, url], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == ANSWER


def test_an_unusable_database_is_a_miss_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    cache = SqlResponseCache(f"sqlite:///{blocker / 'cache.db'}")
    with caplog.at_level(logging.DEBUG, logger="arbiter.providers.cache_sql"):
        assert cache.get("k" * 64) is None
        assert not cache.put("k" * 64, CompletionResponse(text=ANSWER, model="m"))
        assert cache.entries() == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "running without the cache" in warnings[0].getMessage()


def test_the_cache_shows_its_url_without_the_password() -> None:
    cache = SqlResponseCache("postgresql+psycopg://arbiter:s3cret@db.example:5432/arbiter")
    assert "s3cret" not in repr(cache)
    assert "db.example" in repr(cache)
