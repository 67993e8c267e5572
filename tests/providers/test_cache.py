"""The model-call cache: hits, the key, what is never stored, and concurrent writers."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Usage
from arbiter.errors import ProviderUnavailable
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.cache import (
    CACHE_FORMAT,
    CachedProvider,
    ResponseCache,
    provider_identity,
    request_key,
)
from arbiter.providers.openai import OpenAIProvider

ANSWER = '{"verdict": "pass"}'
IDENTITY = {"name": "judge", "base_url": "http://judge/v1", "dialect": None}


class CountingProvider:
    """Answers ``text`` (billed 100 + 20 tokens) and counts the requests that reach it."""

    name = "judge"
    base_url = "http://judge/v1"

    def __init__(self, text: str = ANSWER, *, fail: bool = False) -> None:
        self.text = text
        self.fail = fail
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if self.fail:
            raise ProviderUnavailable("judge: HTTP 503")
        usage = Usage(input_tokens=100, output_tokens=20, cost_usd=0.0002)
        return CompletionResponse(text=self.text, model="judge-1", usage=usage, latency_ms=9.0)


def request(**overrides: Any) -> CompletionRequest:
    fields: dict[str, Any] = {
        "model": "judge-1",
        "system": "Grade the output.",
        "prompt": "<output>Paris</output>",
        "schema_name": "rubric_verdict",
        "json_schema": {"type": "object", "properties": {"verdict": {"type": "string"}}},
        "max_output_tokens": 512,
        "timeout": 30.0,
    }
    return CompletionRequest(**{**fields, **overrides})


@pytest.fixture
def cache(tmp_path: Path) -> ResponseCache:
    opened = ResponseCache(tmp_path / "cache" / "models.sqlite3")
    yield opened
    opened.close()


async def test_an_identical_request_is_answered_from_the_cache(cache: ResponseCache) -> None:
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    first = await cached.complete(request())
    again = await cached.complete(request())
    assert len(provider.requests) == 1
    assert (first.cached, again.cached) == (False, True)
    assert again.text == first.text == ANSWER
    assert again.model == "judge-1"
    assert (cached.hits, cached.misses) == (1, 1)


async def test_a_hit_costs_no_tokens_and_no_money(cache: ResponseCache) -> None:
    cached = CachedProvider(CountingProvider(), cache)
    miss = await cached.complete(request())
    hit = await cached.complete(request())
    assert miss.model_calls().model_dump() == {
        "calls": 1,
        "cached": 0,
        "input_tokens": 100,
        "output_tokens": 20,
        "latency_ms": 9.0,
        "cost_usd": 0.0002,
    }
    calls = hit.model_calls()
    assert (calls.calls, calls.cached, calls.input_tokens, calls.output_tokens) == (1, 1, 0, 0)
    assert calls.cost_usd == 0.0


KEYED_FIELDS: dict[str, Any] = {
    "model": "judge-2",
    "system": "Grade the output strictly.",
    "prompt": "<output>Lyon</output>",
    "schema_name": "other",
    "json_schema": {"type": "object", "properties": {"verdict": {"type": "integer"}}},
    "effort": "high",
    "max_output_tokens": 1024,
}
"""A different value for every request field that reaches the model."""
UNKEYED_FIELDS: dict[str, Any] = {"timeout": 5.0, "metadata": {"example": "e9"}}
"""Fields that never reach the model."""


def test_every_request_field_is_either_in_the_key_or_never_sent() -> None:
    # A field added to CompletionRequest must be placed in one of the two lists.
    assert set(CompletionRequest.model_fields) == set(KEYED_FIELDS) | set(UNKEYED_FIELDS)


@pytest.mark.parametrize(("field", "value"), KEYED_FIELDS.items())
def test_the_key_changes_with_every_field_that_reaches_the_model(field: str, value: Any) -> None:
    assert request_key(request(**{field: value}), IDENTITY) != request_key(request(), IDENTITY)


@pytest.mark.parametrize(("field", "value"), UNKEYED_FIELDS.items())
def test_the_key_ignores_what_is_never_sent(field: str, value: Any) -> None:
    assert request_key(request(**{field: value}), IDENTITY) == request_key(request(), IDENTITY)


@pytest.mark.parametrize(
    "other",
    [
        {**IDENTITY, "name": "other"},
        {**IDENTITY, "base_url": "http://elsewhere/v1"},
        {**IDENTITY, "dialect": "llama_cpp"},
    ],
    ids=["name", "base_url", "dialect"],
)
def test_the_key_changes_with_the_provider(other: dict[str, Any]) -> None:
    assert request_key(request(), other) != request_key(request(), IDENTITY)


def test_the_key_ignores_the_order_of_schema_keys() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    reordered = {"properties": {"a": {"type": "string"}}, "type": "object"}
    assert request_key(request(json_schema=schema), IDENTITY) == request_key(
        request(json_schema=reordered), IDENTITY
    )


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"system": "ab", "prompt": "c"}, {"system": "a", "prompt": "bc"}),
        ({"system": "", "prompt": "x"}, {"system": "x", "prompt": ""}),
        ({"prompt": "p\0s1\0q"}, {"prompt": "p", "schema_name": "q"}),
        ({"max_output_tokens": 12}, {"max_output_tokens": 1, "model": "2" + "judge-1"}),
    ],
    ids=["moved-boundary", "moved-empty", "separator-inside-a-text", "digits-moved"],
)
def test_text_moved_between_fields_changes_the_key(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    assert request_key(request(**one), IDENTITY) != request_key(request(**other), IDENTITY)


def test_the_key_of_a_request_is_pinned_to_the_cache_format() -> None:
    # Changing how keys are computed orphans every stored answer: bump CACHE_FORMAT
    # with it, and pin the new key here.
    assert CACHE_FORMAT == 2
    assert request_key(request(), IDENTITY) == (
        "6ad42c96e9ce62ed72cb668d0d637120f9d04116cadd7635c3ae4164790bbdf4"
    )


async def test_a_prompt_with_a_lone_surrogate_is_keyed_and_cached(cache: ResponseCache) -> None:
    # Untrusted text read from JSON may hold "\ud800": it must not break the cached path.
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    odd = request(prompt="<output>caf\ud800</output>")
    assert request_key(odd, IDENTITY) != request_key(
        request(prompt="<output>caf</output>"), IDENTITY
    )
    await cached.complete(odd)
    assert (await cached.complete(odd)).cached
    assert len(provider.requests) == 1


async def test_an_answer_with_a_lone_surrogate_is_answered_not_stored(
    cache: ResponseCache,
) -> None:
    provider = CountingProvider('{"verdict": "pass \ud800"}')
    cached = CachedProvider(provider, cache)
    first = await cached.complete(request())
    second = await cached.complete(request())
    assert first.text == second.text == '{"verdict": "pass \ud800"}'
    assert not second.cached
    assert cache.entries() == 0


def test_a_provider_keys_requests_as_request_key_does(cache: ResponseCache) -> None:
    # It remembers the digest of each schema object it sees: a request sharing that
    # object and one with a changed copy must both get their own, true key.
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    template = request()
    shared = template.model_copy(update={"prompt": "<output>Lyon</output>"})
    changed = template.model_copy(update={"json_schema": {**template.json_schema, "x": 1}})
    for one in (template, shared, changed, template):
        assert cached.key(one) == request_key(one, provider_identity(provider))
    assert len({cached.key(template), cached.key(shared), cached.key(changed)}) == 3


def test_the_identity_of_a_vendor_names_its_server_and_dialect() -> None:
    provider = OpenAIProvider(
        "llama_cpp", base_url="http://127.0.0.1:8089/v1/", api_key=None, dialect="llama_cpp"
    )
    assert provider_identity(provider) == {
        "name": "llama_cpp",
        "base_url": "http://127.0.0.1:8089/v1",
        "dialect": "llama_cpp",
    }


async def test_a_corrupt_entry_is_a_miss_and_the_fresh_answer_replaces_it(
    cache: ResponseCache,
) -> None:
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    await cached.complete(request())
    with sqlite3.connect(cache.path) as raw:
        raw.execute("UPDATE responses SET response = ?", (b"\x00not json",))
    again = await cached.complete(request())
    assert not again.cached
    assert len(provider.requests) == 2
    assert (await cached.complete(request())).cached


async def test_a_file_that_is_not_a_database_runs_without_cache(tmp_path: Path) -> None:
    path = tmp_path / "models.sqlite3"
    path.write_bytes(b"this is not an SQLite file" * 100)
    cache = ResponseCache(path)
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    answers = [await cached.complete(request()) for _ in range(2)]
    assert [a.cached for a in answers] == [False, False]
    assert len(provider.requests) == 2
    assert path.read_bytes().startswith(b"this is not")  # left as it was


async def test_an_answer_over_the_size_bound_is_answered_but_not_kept(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "models.sqlite3", max_entry_bytes=1024)
    provider = CountingProvider('{"reasoning": "' + "x" * 2000 + '"}')
    cached = CachedProvider(provider, cache)
    first = await cached.complete(request())
    second = await cached.complete(request())
    assert len(first.text) > 2000
    assert not second.cached
    assert cache.entries() == 0
    cache.close()


@pytest.mark.parametrize("text", ["I think it passes.", "", '{"verdict": "pa'])
async def test_an_answer_that_is_not_json_is_asked_again(cache: ResponseCache, text: str) -> None:
    provider = CountingProvider(text)
    cached = CachedProvider(provider, cache)
    await cached.complete(request())
    assert not (await cached.complete(request())).cached
    assert cache.entries() == 0


async def test_a_fenced_json_answer_is_kept(cache: ResponseCache) -> None:
    cached = CachedProvider(CountingProvider('```json\n{"verdict": "pass"}\n```'), cache)
    await cached.complete(request())
    assert (await cached.complete(request())).cached


async def test_a_failure_is_raised_and_never_stored(cache: ResponseCache) -> None:
    provider = CountingProvider(fail=True)
    cached = CachedProvider(provider, cache)
    for _ in range(2):
        with pytest.raises(ProviderUnavailable):
            await cached.complete(request())
    assert len(provider.requests) == 2
    assert cache.entries() == 0


def test_a_cache_touches_no_file_until_first_used(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "models.sqlite3"
    cache = ResponseCache(path)
    CachedProvider(CountingProvider(), cache)
    assert not path.parent.exists()
    assert cache.get("missing") is None
    assert path.exists()
    cache.close()


def test_a_closed_cache_opens_again_on_use(cache: ResponseCache) -> None:
    response = CompletionResponse(text=ANSWER, model="m")
    assert cache.put("k", response)
    cache.close()
    found = cache.get("k")
    assert found is not None
    assert found.text == ANSWER


def _write_entries(path: str, prefix: str, count: int) -> int:
    """Store ``count`` answers under ``prefix`` keys and 50 shared ones; return how many
    were stored. Runs in another process."""
    cache = ResponseCache(Path(path))
    stored = 0
    for i in range(count):
        response = CompletionResponse(text=f'{{"n": {i}}}', model=prefix)
        stored += cache.put(f"{prefix}-{i}", response)
        stored += cache.put(f"shared-{i % 50}", response)
    cache.close()
    return stored


def test_two_processes_writing_at_once_lose_no_answer(tmp_path: Path) -> None:
    path = tmp_path / "models.sqlite3"
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        stored = list(pool.map(_write_entries, [str(path)] * 2, ["a", "b"], [200, 200]))
    assert stored == [400, 400]
    cache = ResponseCache(path)
    assert cache.entries() == 200 + 200 + 50
    found = [cache.get(f"{prefix}-{i}") for prefix in "ab" for i in range(200)]
    assert all(f is not None for f in found)
    assert {f.model for f in found if f is not None} == {"a", "b"}
    cache.close()


def test_threads_reading_and_writing_one_cache_see_every_answer(cache: ResponseCache) -> None:
    start = threading.Barrier(8)

    def work(worker: int) -> list[bool]:
        start.wait()
        seen = []
        for i in range(50):
            key = f"{worker}-{i}"
            cache.put(key, CompletionResponse(text=f'{{"i": {i}}}', model=str(worker)))
            seen.append(cache.get(key) is not None)
        return seen

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(8)))
    assert all(all(seen) for seen in results)
    assert cache.entries() == 8 * 50


async def test_concurrent_misses_on_one_loop_each_reach_the_provider_once(
    cache: ResponseCache,
) -> None:
    provider = CountingProvider()
    cached = CachedProvider(provider, cache)
    requests = [request(prompt=f"<output>{i}</output>") for i in range(20)]
    await asyncio.gather(*(cached.complete(r) for r in requests))
    again = await asyncio.gather(*(cached.complete(r) for r in requests))
    assert len(provider.requests) == 20
    assert all(a.cached for a in again)


class GatedProvider(CountingProvider):
    """Answers only once ``gate`` is set, so that requests pile up in flight."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__(fail=fail)
        self.gate = asyncio.Event()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        await self.gate.wait()
        return await super().complete(request)


async def test_identical_requests_in_flight_reach_the_provider_once(cache: ResponseCache) -> None:
    provider = GatedProvider()
    cached = CachedProvider(provider, cache)
    waiting = [asyncio.ensure_future(cached.complete(request())) for _ in range(5)]
    await asyncio.sleep(0)  # let every call start and find the first one in flight
    provider.gate.set()
    answers = await asyncio.gather(*waiting)
    assert len(provider.requests) == 1
    assert [a.cached for a in answers] == [False, True, True, True, True]
    assert (cached.hits, cached.misses) == (4, 1)


async def test_a_failure_in_flight_reaches_every_waiter(cache: ResponseCache) -> None:
    provider = GatedProvider(fail=True)
    cached = CachedProvider(provider, cache)
    waiting = [asyncio.ensure_future(cached.complete(request())) for _ in range(3)]
    await asyncio.sleep(0)
    provider.gate.set()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(o, ProviderUnavailable) for o in outcomes)
    assert len(provider.requests) == 1
    assert cache.entries() == 0
    provider.fail = False
    assert not (await cached.complete(request())).cached  # asked again, not replayed


async def test_a_cancelled_caller_leaves_the_answer_to_the_others(cache: ResponseCache) -> None:
    provider = GatedProvider()
    cached = CachedProvider(provider, cache)
    first = asyncio.ensure_future(cached.complete(request()))
    second = asyncio.ensure_future(cached.complete(request()))
    await asyncio.sleep(0)
    first.cancel()
    provider.gate.set()
    answer = await second
    assert first.cancelled()
    assert answer.text == ANSWER
    assert (await cached.complete(request())).cached
