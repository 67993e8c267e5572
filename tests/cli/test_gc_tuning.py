"""The arbiter process collects its youngest generation less often, never more often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from arbiter.cli.main import GC_YOUNG_THRESHOLD, tune_gc


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_the_default_threshold_is_raised_and_the_older_ones_kept() -> None:
    gc.set_threshold(700, 10, 10)
    tune_gc()
    assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, 10, 10)


@pytest.mark.parametrize("young", [GC_YOUNG_THRESHOLD * 2, 0])
def test_a_higher_threshold_or_a_disabled_collector_is_left_alone(young: int) -> None:
    gc.set_threshold(young, 5, 7)
    tune_gc()
    assert gc.get_threshold() == (young, 5, 7)
