"""Conduct: an agent's recency-weighted track record, and the state it earns on the ladder.

Only evaluated runs count (a run no scorer gave a verdict is an abstention, left out and
counted apart). Of those, the newest ``window_runs`` form the window; each weighs
``0.5 ** (age_days / half_life_days)``. Conduct blends the weighted gating pass rate
with the weighted pass rate of the trust-critical dimensions' verdicts (their own
abstentions left out); with no such verdict it is the gating rate alone.

The ladder, lowest first: provisional (fewer evaluated runs than ``min_runs_proven``,
whatever they say, so a new agent's first bad runs cannot condemn it), at_risk, watch,
proven, trusted (at the trusted floor with ``min_runs_trusted`` runs and fresh
evidence: evidence older than ``stale_days`` caps it at proven).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from arbiter.contract.trust import TRUST_STATES, RunEvidence, TrustState
from arbiter.stats import wilson_interval
from arbiter.trust.policy import TrustPolicy

__all__ = ["RANK", "Conduct", "behaviour_state", "conduct_of", "lower", "window_of"]

RANK: dict[TrustState, int] = {state: rank for rank, state in enumerate(TRUST_STATES)}
"""Each state's rank on the ladder (provisional lowest)."""

_DAY = 86_400.0


@dataclass(frozen=True)
class Conduct:
    """What the window of an agent's evaluated runs says."""

    score: float | None
    """Blended conduct in [0, 1]; None without evaluated runs."""
    gating_rate: float | None
    """Weighted share of the window's runs that passed."""
    dimension_rate: float | None
    """Weighted share of trust-critical verdicts that passed; None without any."""
    interval: tuple[float, float]
    """95% Wilson interval of ``score`` over ``runs`` runs."""
    runs: int
    """Evaluated runs in the window."""
    abstained: int
    """Runs left out as not evaluated."""
    newest_at: datetime | None
    """The newest evaluated run's time."""


def _key(evidence: RunEvidence) -> tuple[datetime, str]:
    return evidence.at, evidence.run_id


def window_of(
    evidence: Iterable[RunEvidence], policy: TrustPolicy
) -> tuple[list[RunEvidence], int]:
    """The window (evaluated runs, newest first, at most ``window_runs``) and how many
    runs were left out as abstentions."""
    decided: list[RunEvidence] = []
    abstained = 0
    for item in evidence:
        if item.passed is None:
            abstained += 1
        else:
            decided.append(item)
    decided.sort(key=_key, reverse=True)
    return decided[: policy.window_runs], abstained


def conduct_of(evidence: Iterable[RunEvidence], policy: TrustPolicy, *, now: datetime) -> Conduct:
    """The conduct of one agent's runs, judged at ``now``.

    The result depends only on the set of runs, not their order: they are sorted by
    (time, id) before anything is summed.
    """
    window, abstained = window_of(evidence, policy)
    if not window:
        return Conduct(None, None, None, (0.0, 1.0), 0, abstained, None)
    critical = frozenset(policy.trust_critical)
    half_life = policy.half_life_days * _DAY
    weights: list[float] = []
    passes: list[float] = []
    dim_passes: list[float] = []
    dim_decided: list[float] = []
    for item in window:
        age = max(0.0, (now - item.at).total_seconds())
        weight = 0.5 ** (age / half_life)
        weights.append(weight)
        if item.passed:
            passes.append(weight)
        for name, verdict in item.dimensions:
            if verdict is not None and name in critical:
                dim_decided.append(weight)
                if verdict:
                    dim_passes.append(weight)
    total = math.fsum(weights)
    gating = min(1.0, math.fsum(passes) / total) if total > 0 else 0.0
    dimension = None
    if dim_decided:
        decided_weight = math.fsum(dim_decided)
        if decided_weight > 0:
            dimension = min(1.0, math.fsum(dim_passes) / decided_weight)
    if dimension is None or not critical:
        score = gating
    else:
        score = (1.0 - policy.trust_dim_weight) * gating + policy.trust_dim_weight * dimension
    runs = len(window)
    interval = wilson_interval(min(runs, max(0, round(score * runs))), runs)
    return Conduct(score, gating, dimension, interval, runs, abstained, window[0].at)


def lower(first: TrustState, second: TrustState) -> TrustState:
    """The lower of two states on the ladder."""
    return first if RANK[first] <= RANK[second] else second


def behaviour_state(
    conduct: Conduct, policy: TrustPolicy, *, now: datetime
) -> tuple[TrustState, bool, list[str]]:
    """The state conduct earns, whether the evidence is stale, and why, in words."""
    stale = conduct.newest_at is not None and (
        (now - conduct.newest_at).total_seconds() > policy.stale_days * _DAY
    )
    if conduct.score is None or conduct.runs < policy.min_runs_proven:
        need = policy.min_runs_proven
        return "provisional", stale, [f"{conduct.runs} evaluated runs; {need} needed to judge"]
    score = conduct.score
    shown = f"conduct {score:.3f}"
    if score < policy.at_risk_floor:
        return "at_risk", stale, [f"{shown} is below the at_risk floor {policy.at_risk_floor:g}"]
    if score < policy.healthy_floor:
        return "watch", stale, [f"{shown} is below the healthy floor {policy.healthy_floor:g}"]
    if score < policy.trusted_floor:
        return "proven", stale, [f"{shown} is below the trusted floor {policy.trusted_floor:g}"]
    if conduct.runs < policy.min_runs_trusted:
        need = policy.min_runs_trusted
        return "proven", stale, [f"{conduct.runs} evaluated runs; {need} needed for trusted"]
    if stale:
        days = policy.stale_days
        return "proven", stale, [f"the newest evidence is older than {days:g} days"]
    return "trusted", stale, [f"{shown} over {conduct.runs} runs"]
