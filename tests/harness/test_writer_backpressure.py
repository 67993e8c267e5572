"""Results on their way to the store are bounded: an engine faster than the store waits
for it (no backlog of results fills the driver), and a store that fails ends the run
with its error instead of leaving the engine waiting for room."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from arbiter.contract import Dataset, Example, PairResult
from arbiter.errors import StoreError
from arbiter.harness import runner
from arbiter.harness.runner import run_eval
from arbiter.store import Store
from arbiter.systems.python import PythonSystem

DATASET = Dataset(
    name="d", examples=[Example(id=f"e{i}", input={"q": "x"}, expected="x") for i in range(60)]
)


def echo(inputs: dict[str, str]) -> str:
    return inputs["q"]


class SlowStore(Store):
    """Holds its first write until every other pair has had time to finish."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.writes: list[int] = []
        self.first = threading.Event()

    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        self.writes.append(len(results))
        if len(self.writes) == 1:
            self.first.wait(timeout=0.5)
        super().add_results(run_id, results)


class BrokenStore(Store):
    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        raise StoreError("the disk is full")


def test_results_wait_for_a_slow_store_instead_of_piling_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "MAX_WAITING", 5)
    store = SlowStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        report = run_eval(PythonSystem(f"{__file__}:echo"), DATASET, concurrency=60, store=store)
    finally:
        store.close()
    assert report.completeness is not None
    assert report.completeness.done == 60
    assert sum(store.writes) == 60
    # While the first write was held, at most MAX_WAITING results waited for the next.
    assert max(store.writes) <= 5


def test_a_store_that_fails_ends_the_run_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "MAX_WAITING", 5)
    store = BrokenStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        with pytest.raises(StoreError, match="the disk is full"):
            run_eval(PythonSystem(f"{__file__}:echo"), DATASET, concurrency=60, store=store)
    finally:
        store.close()
