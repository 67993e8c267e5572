"""One Rate: the online batch summary and the grounding gate's benchmark report a share
the same way (count, n, rate, 95% Wilson interval), and a share of nothing is unknown."""

from __future__ import annotations

import pytest

from arbiter.judges.gate_bench import GateBenchReport
from arbiter.online.sink import SummaryReport
from arbiter.scoring.rates import Rate
from arbiter.stats import wilson_interval


def test_the_online_summary_and_the_gate_benchmark_share_one_rate() -> None:
    assert SummaryReport.model_fields["flagged"].annotation is Rate
    assert GateBenchReport.model_fields["trigger_recall"].annotation is Rate


@pytest.mark.parametrize(("count", "n"), [(0, 1), (3, 10), (10, 10), (7, 250)])
def test_a_rate_is_its_share_with_the_wilson_interval(count: int, n: int) -> None:
    rate = Rate.of(count, n)
    assert (rate.count, rate.n, rate.rate) == (count, n, count / n)
    assert (rate.low, rate.high) == wilson_interval(count, n)


def test_a_share_of_nothing_is_unknown_never_zero() -> None:
    rate = Rate.of(0, 0)
    assert rate.rate is None
    assert (rate.low, rate.high) == (0.0, 1.0)
