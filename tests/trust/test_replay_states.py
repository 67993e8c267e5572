"""The backtest's fast replay gives the exact replay's state at every step.

:func:`replay_states` weighs every step of a history at once and sums in floating
point; :func:`exact_states` (the definition) sums each step's window exactly. On random
histories (runs at the same instant, long gaps, trust-critical verdicts or none, floors
the conduct reaches exactly, windows cut in chunks) the two lists are equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from arbiter.trust import TrustPolicy
from arbiter.trust import backtest as core
from arbiter.trust.backtest import exact_states, replay_states

DAY = 86_400.0

histories = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.0, 60.0, DAY, 30 * DAY, 4_000 * DAY]),  # gap to the previous
        st.booleans(),
        st.integers(0, 3),  # critical verdicts
        st.integers(0, 3),  # of which passed (capped)
    ),
    min_size=1,
    max_size=60,
)
floors = st.sampled_from([(0.5, 0.75, 1.0), (0.6, 0.8, 0.95), (0.0, 0.5, 0.5), (0.25, 0.5, 2 / 3)])
policies = st.builds(
    lambda window, half, weight, critical, floor, proven, trusted: TrustPolicy(
        window_runs=window,
        half_life_days=half,
        trust_dim_weight=weight,
        trust_critical=critical,
        at_risk_floor=floor[0],
        healthy_floor=floor[1],
        trusted_floor=floor[2],
        min_runs_proven=proven,
        min_runs_trusted=max(proven, trusted),
    ),
    st.integers(1, 12),
    st.sampled_from([0.001, 1.0, 14.0]),
    st.sampled_from([0.0, 0.5, 0.3]),
    st.sampled_from([(), ("scope_adherence",)]),
    floors,
    st.integers(1, 4),
    st.integers(1, 8),
)


Columns = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


def _columns(history: list[tuple[float, bool, int, int]]) -> Columns:
    times = 1.7e9 + np.cumsum(np.array([gap for gap, *_ in history], np.float64))
    passes = np.array([1.0 if ok else 0.0 for _, ok, _, _ in history])
    decided = np.array([float(n) for _, _, n, _ in history])
    passed = np.array([float(min(p, n)) for _, _, n, p in history])
    return times, passes, passed, decided


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(histories, policies, st.sampled_from([1, 7, 1 << 21]))
def test_the_fast_replay_is_the_exact_replay(
    monkeypatch: pytest.MonkeyPatch,
    history: list[tuple[float, bool, int, int]],
    policy: TrustPolicy,
    cells: int,
) -> None:
    monkeypatch.setattr(core, "_CELLS", cells)
    columns = _columns(history)
    assert replay_states(*columns, policy) == exact_states(*columns, policy)


def test_a_conduct_on_a_floor_is_decided_exactly() -> None:
    # Two runs at one instant, one passed: conduct 0.5 exactly, on the at_risk floor,
    # which is not below it (watch), however the sums round.
    policy = TrustPolicy(
        at_risk_floor=0.5,
        healthy_floor=0.75,
        trusted_floor=1.0,
        min_runs_proven=2,
        min_runs_trusted=2,
        trust_critical=(),
    )
    columns = _columns([(0.0, True, 0, 0), (0.0, False, 0, 0)])
    assert replay_states(*columns, policy) == ["provisional", "watch"]
    assert exact_states(*columns, policy) == ["provisional", "watch"]
