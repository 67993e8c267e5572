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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from arbiter.contract.trust import TRUST_STATES, RunEvidence, TrustState
from arbiter.stats import wilson_interval
from arbiter.trust.policy import TrustPolicy

__all__ = [
    "RANK",
    "Conduct",
    "behaviour_state",
    "columns_of",
    "conduct_of",
    "conduct_of_columns",
    "lower",
    "rates",
    "state_for",
    "window_of",
    "window_state",
]

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


def columns_of(
    window: Sequence[RunEvidence], critical: frozenset[str]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Time (seconds), pass, critical passes and critical verdicts of each run, as arrays."""
    times = np.fromiter((e.at.timestamp() for e in window), dtype=np.float64, count=len(window))
    passes = np.fromiter((1.0 if e.passed else 0.0 for e in window), np.float64, len(window))
    dim_passes = np.zeros(len(window))
    dim_decided = np.zeros(len(window))
    for index, item in enumerate(window):
        for name, verdict in item.dimensions:
            if verdict is not None and name in critical:
                dim_decided[index] += 1.0
                if verdict:
                    dim_passes[index] += 1.0
    return times, passes, dim_passes, dim_decided


def rates(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    policy: TrustPolicy,
    now: float,
) -> tuple[float, float, float | None]:
    """(conduct, gating rate, dimension rate) of one window's columns, judged at ``now``
    (Unix seconds). The weights are computed element by element and every sum is exact
    (``math.fsum``), so the result does not depend on the order of the runs."""
    ages = np.maximum(0.0, now - times)
    weights = np.power(0.5, ages / (policy.half_life_days * _DAY))
    # Exact sums over plain floats (``tolist`` converts in C; iterating numpy scalars is slow).
    total = math.fsum(weights.tolist())
    gating = min(1.0, math.fsum((weights * passes).tolist()) / total) if total > 0 else 0.0
    dimension = None
    decided = math.fsum((weights * dim_decided).tolist())
    if decided > 0:
        dimension = min(1.0, math.fsum((weights * dim_passes).tolist()) / decided)
    if dimension is None or not policy.trust_critical:
        return gating, gating, dimension
    blend = policy.trust_dim_weight
    return (1.0 - blend) * gating + blend * dimension, gating, dimension


def conduct_of(evidence: Iterable[RunEvidence], policy: TrustPolicy, *, now: datetime) -> Conduct:
    """The conduct of one agent's runs, judged at ``now``.

    The result depends only on the set of runs, not their order: they are sorted by
    (time, id) before anything is summed.
    """
    window, abstained = window_of(evidence, policy)
    if not window:
        return Conduct(None, None, None, (0.0, 1.0), 0, abstained, None)
    columns = columns_of(window, frozenset(policy.trust_critical))
    return conduct_of_columns(*columns, abstained, window[0].at, policy, now=now)


def conduct_of_columns(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    abstained: int,
    newest_at: datetime | None,
    policy: TrustPolicy,
    *,
    now: datetime,
) -> Conduct:
    """The conduct of a window given as columns (:func:`columns_of` of at most
    ``window_runs`` evaluated runs, in any order; ``newest_at`` the newest run's time):
    :func:`conduct_of` for a reader that keeps the columns rather than the runs."""
    runs = len(times)
    if runs == 0:
        return Conduct(None, None, None, (0.0, 1.0), 0, abstained, None)
    score, gating, dimension = rates(
        times, passes, dim_passes, dim_decided, policy, now.timestamp()
    )
    interval = wilson_interval(min(runs, max(0, round(score * runs))), runs)
    return Conduct(score, gating, dimension, interval, runs, abstained, newest_at)


def state_for(
    score: float | None, runs: int, newest: float | None, policy: TrustPolicy, now: float
) -> TrustState:
    """The state of conduct ``score`` over ``runs`` runs, the newest at ``newest``
    (Unix seconds), judged at ``now``: :func:`behaviour_state` without the words."""
    stale = newest is not None and now - newest > policy.stale_days * _DAY
    if score is None or runs < policy.min_runs_proven:
        return "provisional"
    if score < policy.at_risk_floor:
        return "at_risk"
    if score < policy.healthy_floor:
        return "watch"
    if score < policy.trusted_floor or runs < policy.min_runs_trusted or stale:
        return "proven"
    return "trusted"


def window_state(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    policy: TrustPolicy,
    now: datetime,
) -> TrustState:
    """The state a window's columns (:func:`columns_of` of at most ``window_runs``
    evaluated runs) earn at ``now``: the state of :func:`behaviour_state` over
    :func:`conduct_of` of the same runs, without building either."""
    if len(times) == 0:
        return "provisional"
    moment = now.timestamp()
    score, _gating, _dimension = rates(times, passes, dim_passes, dim_decided, policy, moment)
    return state_for(score, len(times), float(times.max()), policy, moment)


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
