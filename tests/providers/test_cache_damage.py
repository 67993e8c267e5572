"""A damaged or unwritable model-call cache never breaks a run: it asks the model, and
says so once."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Dataset, Example
from arbiter.harness.runner import run_eval
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.cache import CachedProvider, ResponseCache
from tests.scoring.rubric_fakes import ScriptedJudge, judge_context, rubric_scorer, verdict

CACHE_LOGGER = "arbiter.providers.cache"
ENTRIES = 2_000
"""Answers written before the file is damaged: a file of a few hundred pages."""
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


class EchoProvider:
    """Answers every request with its own prompt as JSON, so a wrong answer shows."""

    name = "echo"

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        return CompletionResponse(text=answer_to(request.prompt), model="echo-1")


def answer_to(prompt: str) -> str:
    return f'{{"prompt": "{prompt}", "padding": "{"x" * 200}"}}'


def request(prompt: str) -> CompletionRequest:
    return CompletionRequest(model="echo-1", system="Echo.", prompt=prompt, json_schema={})


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == CACHE_LOGGER and r.levelno >= logging.WARNING
    ]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a closed cache file holding the answers to prompts p0 ... p1999."""
    path = tmp_path_factory.mktemp("pristine") / "models.sqlite3"
    cache = ResponseCache(path)
    keys = CachedProvider(EchoProvider(), cache)
    for i in range(ENTRIES):
        prompt = f"p{i}"
        cache.put(keys.key(request(prompt)), CompletionResponse(text=answer_to(prompt), model="e"))
    cache.close()
    return path.read_bytes()


@pytest.fixture
def filled(tmp_path: Path, pristine: bytes) -> Path:
    """A fresh copy of the pristine cache file."""
    path = tmp_path / "cache" / "models.sqlite3"
    path.parent.mkdir()
    path.write_bytes(pristine)
    return path


def truncate(path: Path, kept: float) -> None:
    """Keep only the first ``kept`` share of the file's bytes."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * kept)])


def scramble_middle(path: Path, size: int) -> None:
    """Overwrite ``size`` bytes in the middle of the file with (seeded) noise."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + size] = random.Random(7).randbytes(size)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kept", [0.5, 0.05, 0.001])
async def test_a_truncated_file_runs_without_the_cache_and_says_so_once(
    filled: Path, kept: float, caplog: pytest.LogCaptureFixture
) -> None:
    truncate(filled, kept)
    provider = EchoProvider()
    cached = CachedProvider(provider, ResponseCache(filled))
    prompts = [f"p{i}" for i in range(0, ENTRIES, 100)]
    answers = [await cached.complete(request(p)) for p in prompts]
    assert [a.text for a in answers] == [answer_to(p) for p in prompts]
    assert len(provider.requests) == len(prompts)  # every one asked of the model
    (warning,) = cache_warnings(caplog)
    assert "unusable" in warning
    assert str(filled) in warning


async def test_damaged_pages_are_misses_never_wrong_answers_and_are_warned_once(
    filled: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scramble_middle(filled, 16_384)
    provider = EchoProvider()
    cache = ResponseCache(filled)
    cached = CachedProvider(provider, cache)
    prompts = [f"p{i}" for i in range(ENTRIES)]
    answers = [await cached.complete(request(p)) for p in prompts]
    assert [a.text for a in answers] == [answer_to(p) for p in prompts]
    # Most pages are intact and still answer; those on damaged pages went to the model.
    assert 0 < len(provider.requests) < ENTRIES // 2
    assert cached.hits == ENTRIES - len(provider.requests)
    assert len(cache_warnings(caplog)) == 1
    cache.close()


def _folder_is_a_file(tmp_path: Path) -> Path:
    (tmp_path / "cache").write_text("not a folder", encoding="utf-8")
    return tmp_path / "cache" / "models.sqlite3"


def _read_only_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o555)
    return folder / "models.sqlite3"


def _read_only_file_in_read_only_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "models.sqlite3"
    cache = ResponseCache(path)
    cache.put("k", CompletionResponse(text="{}", model="m"))
    cache.close()
    path.chmod(0o444)
    folder.chmod(0o555)
    return path


@pytest.fixture(
    params=[
        _folder_is_a_file,
        pytest.param(
            _read_only_folder,
            marks=pytest.mark.skipif(IS_ROOT, reason="root writes to read-only folders"),
        ),
        pytest.param(
            _read_only_file_in_read_only_folder,
            marks=pytest.mark.skipif(IS_ROOT, reason="root writes to read-only files"),
        ),
    ],
    ids=["folder-is-a-file", "read-only-folder", "read-only-file"],
)
def unwritable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A cache path that cannot be written."""
    yield request.param(tmp_path)
    if (tmp_path / "cache").is_dir():
        (tmp_path / "cache").chmod(0o755)  # so that pytest can remove it


async def test_an_unwritable_cache_asks_the_model_and_says_so_once(
    unwritable: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = EchoProvider()
    cache = ResponseCache(unwritable)
    cached = CachedProvider(provider, cache)
    prompts = ["a", "b", "a", "b"]
    answers = [await cached.complete(request(p)) for p in prompts]
    assert [a.text for a in answers] == [answer_to(p) for p in prompts]
    assert [a.cached for a in answers] == [False] * 4
    assert len(provider.requests) == 4
    assert len(cache_warnings(caplog)) == 1
    cache.close()


QUESTIONS = [("q1", "Paris"), ("q2", "Rome"), ("q3", "Oslo")]


async def answer(input: dict[str, Any]) -> str:
    return f"It is {input['city']}."


def quoting_judge(request: CompletionRequest) -> dict[str, Any]:
    return verdict("pass", 0.9, ["It is"])


def test_a_run_whose_cache_cannot_be_opened_completes_on_fresh_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path, use_cache=True)
    (tmp_path / "blocked").write_text("a file where the cache folder should be", encoding="utf-8")
    context.settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        home=tmp_path / "home",
        cache_dir=tmp_path / "blocked" / "cache",
    )
    dataset = Dataset(
        name="cities",
        examples=[Example(id=i, input={"city": c}, expected=c) for i, c in QUESTIONS],
    )
    report = run_eval(answer, dataset, scorers=[rubric_scorer(context)])
    assert report.status == "completed"
    assert report.sections["rubric"].passed == len(QUESTIONS)
    assert len(judge.requests) == len(QUESTIONS)
    assert report.model is not None
    assert (report.model.calls, report.model.cached) == (len(QUESTIONS), 0)
    (warning,) = cache_warnings(caplog)
    assert "blocked" in warning


class GatedEcho(EchoProvider):
    """Echo that answers only once the test opens ``gate``, from any event loop."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Semaphore(0)
        self.gate = threading.Event()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.arrived.release()
        await asyncio.to_thread(self.gate.wait, 10)
        return await super().complete(request)


def test_one_provider_serves_identical_requests_from_several_event_loops(
    tmp_path: Path,
) -> None:
    # Two runs in two threads share one context: a request in flight on one loop must
    # not be awaited from the other (a future belongs to its loop).
    provider = GatedEcho()
    cache = ResponseCache(tmp_path / "models.sqlite3")
    cached = CachedProvider(provider, cache)
    answers: list[str] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            answers.append(asyncio.run(cached.complete(request("same"))).text)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
        assert provider.arrived.acquire(timeout=10)  # this one is in flight: start the next
    provider.gate.set()
    for thread in threads:
        thread.join(timeout=10)
    assert failures == []
    assert answers == [answer_to("same")] * 2
    assert cache.entries() == 1
    cache.close()
