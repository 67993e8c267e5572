"""The backtest core: bands recomputed exactly, judges never guessed, trips replayed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contract.trust import RunEvidence
from arbiter.trajectories.bands import banded_metric
from arbiter.trust import TrustPolicy, band_of, gate_outcome, reband_run, replay_breaker
from arbiter.trust.backtest import BandLine, ScoreFact

NOW = datetime(2026, 6, 1, tzinfo=UTC)

_cut = st.one_of(st.none(), st.floats(-100, 100))


@settings(max_examples=300, deadline=None)
@given(st.floats(-1000, 1000), _cut, _cut, st.booleans())
def test_band_of_agrees_with_the_scorers_banded_metric(
    value: float, danger: float | None, healthy: float | None, higher: bool
) -> None:
    both = danger is not None and healthy is not None
    if both and (healthy < danger if higher else healthy > danger):  # type: ignore[operator]
        danger, healthy = healthy, danger
    expected = banded_metric(value, danger=danger, healthy=healthy, higher_is_better=higher).band
    assert band_of(value, BandLine(danger, healthy), higher_is_better=higher) == expected


def test_a_stricter_line_moves_a_run_into_danger() -> None:
    cost = ScoreFact("cost", True, "review", 0.12, "max_cost_usd")
    assert reband_run([cost], {}) == ("review", 0)
    assert reband_run([cost], {"max_cost_usd": BandLine(0.10, 0.05)}) == ("danger", 0)


def test_a_judged_score_is_counted_not_decided() -> None:
    judged = ScoreFact("groundedness", False, judged=True)
    assert reband_run([judged], {}) == (None, 1)


def test_the_gate_never_guesses_a_judges_ruling() -> None:
    assert gate_outcome(True, "enforce") == "would_go_to_judge"
    assert gate_outcome(True, "review") == "would_go_to_judge"
    assert gate_outcome(True, "annotate") == "annotated"
    assert gate_outcome(False, "review") == "delivered"


def test_replay_trips_once_on_a_degrading_agent() -> None:
    policy = TrustPolicy(min_runs_proven=5, breaker_mode="freeze")
    runs = [RunEvidence(f"tr-{i:03d}", NOW + timedelta(minutes=i), i < 10) for i in range(40)]
    replay = replay_breaker("a", runs, policy)
    assert len(replay.trips) == 1
    assert replay.states[-1] == "at_risk"
    assert replay_breaker("a", runs, policy.with_mode("off")).trips == []


_evidence = st.lists(
    st.builds(
        lambda i, passed, minutes, dim: RunEvidence(
            f"tr-{i:05d}",
            NOW + timedelta(minutes=minutes),
            passed,
            (("scope_adherence", dim),),
        ),
        st.integers(0, 99_999),
        st.one_of(st.none(), st.booleans()),
        st.integers(0, 100_000),
        st.one_of(st.none(), st.booleans()),
    ),
    min_size=1,
    max_size=40,
    unique_by=lambda e: e.run_id,
)


@settings(max_examples=150, deadline=None)
@given(_evidence)
def test_the_replay_ends_in_the_state_the_status_gives(evidence: list[RunEvidence]) -> None:
    from arbiter.trust import assess

    policy = TrustPolicy(min_runs_proven=3, min_runs_trusted=6, window_runs=8)
    replay = replay_breaker("a", evidence, policy)
    decided = [e for e in evidence if e.passed is not None]
    if not decided:
        assert replay.states == []
        return
    last = max(decided, key=lambda e: (e.at, e.run_id))
    assert replay.states[-1] == assess("a", decided, policy, now=last.at).state
