"""The trust core: policy parsing, conduct, the ladder, integrity caps, the breaker edge."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contract.trust import TRUST_STATES, BreakerMemory, RunEvidence
from arbiter.errors import InputError
from arbiter.trust import (
    RANK,
    TrustPolicy,
    apply_cap,
    assess,
    breaker_decision,
    conduct_of,
    default_policy,
    integrity_of,
    load_policy,
    parse_policy,
    policy_toml,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = TrustPolicy(min_runs_proven=5, min_runs_trusted=12, window_runs=30)
CRITICAL = POLICY.trust_critical


def run(
    index: int, passed: bool | None, *, days: float = 0.0, dims: bool | None = None
) -> RunEvidence:
    at = NOW - timedelta(days=days)
    dimensions = tuple((name, dims) for name in CRITICAL[:2]) if dims is not None else ()
    return RunEvidence(run_id=f"tr-{index:06d}", at=at, passed=passed, dimensions=dimensions)


def state_of(evidence: list[RunEvidence], integrity: str = "unknown") -> str:
    return assess("a", evidence, POLICY, now=NOW, integrity=integrity).state  # type: ignore[arg-type]


# --- policy -------------------------------------------------------------------------


def test_shipped_policy_round_trips_through_toml() -> None:
    policy = default_policy()
    assert parse_policy(policy_toml(policy)) == policy


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[floors]\nheathy = 0.8\n", "policy.toml:2: policy key 'floors.heathy' is unknown"),
        ("[flors]\nhealthy = 0.8\n", "policy.toml:1: policy key 'flors' is unknown"),
        ("[conduct]\nwindow_runs = 0\n", "policy key 'conduct.window_runs' must be a whole"),
        ("[conduct]\nhalf_life_days = true\n", "'conduct.half_life_days' must be a number"),
        ("[floors]\nat_risk = 1.5\n", "'floors.at_risk' must be within [0, 1]"),
        ("[floors]\nat_risk = 0.9\nhealthy = 0.5\n", "'floors' must be ordered"),
        ('[breaker]\nmode = "freze"\n', "'breaker.mode' must be one of off, notify, freeze"),
        ('[breaker.agents]\nbot = "stop"\n', "'breaker.agents.bot' must be one of"),
        ("[evidence]\nmin_runs_proven = 60\n", "'evidence.min_runs_trusted' must be at least"),
        ("[conduct\n", "not valid TOML"),
    ],
)
def test_a_malformed_policy_names_its_key(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_policy(path)
    assert named in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_partial_policy_keeps_the_other_defaults() -> None:
    policy = parse_policy('[breaker]\nmode = "freeze"\n[breaker.agents]\nquiet = "off"\n')
    assert policy.breaker_mode == "freeze"
    assert policy.mode_for("quiet") == "off"
    assert policy.mode_for("other") == "freeze"
    assert policy.healthy_floor == TrustPolicy().healthy_floor


# --- conduct and the ladder ---------------------------------------------------------


def test_few_bad_runs_leave_a_new_agent_provisional() -> None:
    assert state_of([run(i, False) for i in range(4)]) == "provisional"
    assert state_of([run(i, False) for i in range(5)]) == "at_risk"


def test_abstentions_are_left_out_and_counted() -> None:
    evidence = [run(i, True) for i in range(6)] + [run(100 + i, None) for i in range(50)]
    status = assess("a", evidence, POLICY, now=NOW)
    assert status.runs == 6
    assert status.abstained == 50
    assert status.conduct == 1.0


def test_recent_runs_weigh_more_than_old_ones() -> None:
    old_failures = [run(i, False, days=60) for i in range(10)]
    new_passes = [run(100 + i, True) for i in range(10)]
    conduct = conduct_of(old_failures + new_passes, POLICY, now=NOW)
    assert conduct.score is not None
    assert conduct.score > 0.9
    assert conduct.interval[0] <= conduct.score <= conduct.interval[1]


def test_failing_trust_critical_dimensions_lower_conduct() -> None:
    clean = conduct_of([run(i, True, dims=True) for i in range(10)], POLICY, now=NOW)
    flagged = conduct_of([run(i, True, dims=False) for i in range(10)], POLICY, now=NOW)
    assert clean.score == 1.0
    assert flagged.score == pytest.approx(1.0 - POLICY.trust_dim_weight)
    assert flagged.dimension_rate == 0.0


def test_stale_evidence_caps_trusted_at_proven() -> None:
    fresh = [run(i, True) for i in range(20)]
    stale = [run(i, True, days=45) for i in range(20)]
    assert state_of(fresh) == "trusted"
    status = assess("a", stale, POLICY, now=NOW)
    assert status.state == "proven"
    assert status.stale


@pytest.mark.parametrize(
    ("integrity", "expected"),
    [("signed", "trusted"), ("unknown", "trusted"), ("unsigned", "proven"), ("changed", "watch")],
)
def test_integrity_caps(integrity: str, expected: str) -> None:
    assert state_of([run(i, True) for i in range(20)], integrity) == expected


def test_a_signature_never_promotes_bad_conduct() -> None:
    assert state_of([run(i, False) for i in range(20)], "signed") == "at_risk"


def test_unknown_integrity_says_no_cap_was_applied() -> None:
    status = assess("a", [run(i, True) for i in range(20)], POLICY, now=NOW)
    assert any("no cap" in reason for reason in status.reasons)


@pytest.mark.parametrize(
    ("checks", "configured", "expected"),
    [
        (["verified", "verified"], True, "signed"),
        (["verified", "missing"], True, "unsigned"),
        (["missing", "failed"], True, "changed"),
        ([], True, "unknown"),
        (["verified"], False, "unknown"),
    ],
)
def test_integrity_of_checks(checks: list[str], configured: bool, expected: str) -> None:
    assert integrity_of(checks, key_configured=configured) == expected  # type: ignore[arg-type]


# --- properties ----------------------------------------------------------------------

_run = st.builds(
    lambda index, passed, days, dims: run(index, passed, days=days, dims=dims),
    st.integers(0, 10_000),
    st.one_of(st.none(), st.booleans()),
    st.floats(0, 90),
    st.one_of(st.none(), st.booleans()),
)
_history = st.lists(_run, max_size=60, unique_by=lambda e: e.run_id)
_integrity = st.sampled_from(["signed", "unsigned", "changed", "unknown"])


@settings(max_examples=200, deadline=None)
@given(_history, st.integers(1, 20), st.floats(0, 5))
def test_more_passing_evidence_never_lowers_the_state(
    history: list[RunEvidence], extra: int, days_ago: float
) -> None:
    newest = min((NOW - e.at).total_seconds() / 86400 for e in history) if history else 90.0
    days = min(days_ago, newest)  # the new runs are at least as recent as the old ones
    clean = [
        RunEvidence(
            f"new-{i}", NOW - timedelta(days=days), True, tuple((n, True) for n in CRITICAL)
        )
        for i in range(extra)
    ]
    assert RANK[state_of(history + clean)] >= RANK[state_of(history)]  # type: ignore[index]


@settings(max_examples=200, deadline=None)
@given(_history, _integrity)
def test_a_cap_never_raises_the_state(history: list[RunEvidence], integrity: str) -> None:
    status = assess("a", history, POLICY, now=NOW, integrity=integrity)  # type: ignore[arg-type]
    assert RANK[status.state] <= RANK[status.behaviour_state]


@settings(max_examples=200, deadline=None)
@given(_history, st.randoms(use_true_random=False))
def test_the_same_records_in_any_order_give_the_same_status(
    history: list[RunEvidence], shuffler: random.Random
) -> None:
    shuffled = list(history)
    shuffler.shuffle(shuffled)
    assert assess("a", shuffled, POLICY, now=NOW) == assess("a", history, POLICY, now=NOW)


@given(st.lists(st.sampled_from(TRUST_STATES), max_size=80), st.sampled_from(["notify", "freeze"]))
def test_the_breaker_trips_once_per_bad_streak(states: list[str], mode: str) -> None:
    memory = BreakerMemory()
    trips = 0
    for state in states:
        decision = breaker_decision(memory, state, mode)  # type: ignore[arg-type]
        memory = decision.memory
        trips += decision.trip
        assert decision.action == (mode if decision.trip else "none")
    streaks = sum(
        1 for i, s in enumerate(states) if s == "at_risk" and (i == 0 or states[i - 1] != "at_risk")
    )
    assert trips == streaks == memory.trips


def test_a_breaker_that_is_off_tracks_the_edge_but_never_trips() -> None:
    decision = breaker_decision(BreakerMemory(), "at_risk", "off")
    assert decision.edge
    assert not decision.trip
    assert decision.action == "none"
    again = breaker_decision(decision.memory, "at_risk", "freeze")
    assert not again.trip  # switched on mid-streak: waits for the next streak


def test_apply_cap_reports_when_it_lowered() -> None:
    assert apply_cap("trusted", "unsigned")[:2] == ("proven", True)
    assert apply_cap("watch", "unsigned")[:2] == ("watch", False)
