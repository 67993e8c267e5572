"""The backtest core: what a proposed policy would have changed over stored history.

Only what code decides is recomputed, and exactly: a run's band under other cut points
(from each threshold-bearing score's value), an agent's state under another trust
policy, the breaker's trips replayed run by run, the gate's action under another mode
when its trigger did not fire or the mode never asks a judge. Whatever a judge would
have had to decide is reported as ``would go to a judge``, never as an outcome.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from arbiter.contract.trust import BreakerMemory, RunEvidence, TrustState
from arbiter.trust.breaker import breaker_decision
from arbiter.trust.conduct import columns_of, rates, state_for
from arbiter.trust.policy import TrustPolicy

__all__ = [
    "BandLine",
    "BreakerReplay",
    "GateOutcome",
    "ScoreFact",
    "band_of",
    "exact_states",
    "gate_outcome",
    "reband_run",
    "replay_breaker",
    "replay_states",
]

Band = Literal["healthy", "review", "danger"]
_DAY = 86_400.0
GateOutcome = Literal["delivered", "annotated", "would_go_to_judge"]
"""What the gate would do with a stored answer under another mode."""


@dataclass(frozen=True)
class BandLine:
    """The cut points of one metric key (either may be None)."""

    danger: float | None = None
    healthy: float | None = None


@dataclass(frozen=True)
class ScoreFact:
    """What the backtest needs of one stored score."""

    name: str
    passed: bool | None
    band: Band | None = None
    value: float | None = None
    threshold_key: str | None = None
    """The metric key of a threshold-bearing score (``max_cost_usd``), else None."""
    judged: bool = False
    """A model gave it (a judge): not recomputed."""


def band_of(value: float, line: BandLine, *, higher_is_better: bool) -> Band | None:
    """The band of ``value`` against ``line``; None when the line has no cut point.

    The same grading as the trajectory scorers' banded metrics: a value on a line is on
    its good side; with one line there is no review band.
    """
    gate = line.danger if line.danger is not None else line.healthy
    if gate is None or not math.isfinite(value):
        return None

    def good(cut: float) -> bool:
        return value >= cut if higher_is_better else value <= cut

    if not good(gate):
        return "danger"
    if line.danger is not None and line.healthy is not None and not good(line.healthy):
        return "review"
    return "healthy"


def reband_run(
    scores: Sequence[ScoreFact], lines: Mapping[str, BandLine]
) -> tuple[Band | None, int]:
    """A run's band with its threshold-bearing scores graded against ``lines``.

    A key absent from ``lines`` keeps its stored band. A judged score is not
    recomputed: it is counted (the second value) and left out of the band.

    Returns:
        The run's band (None: no score decided) and how many of its scores only a
        judge could decide.
    """
    judged = 0
    bands: list[Band] = []
    for score in scores:
        if score.judged:
            judged += 1
            continue
        band: Band | None = score.band
        passed = score.passed
        if score.threshold_key is not None and score.value is not None:
            line = lines.get(score.threshold_key)
            if line is not None:
                band = band_of(
                    score.value, line, higher_is_better=score.threshold_key.startswith("min_")
                )
                passed = None if band is None else band != "danger"
        if passed is None:
            continue
        bands.append(band or ("healthy" if passed else "danger"))
    if not bands:
        return None, judged
    if "danger" in bands:
        return "danger", judged
    return ("review" if "review" in bands else "healthy"), judged


def gate_outcome(needs_judge: bool, mode: str) -> GateOutcome:
    """What the gate would do with an answer whose trigger fired (or not) in ``mode``."""
    if not needs_judge or mode in ("off", "observe"):
        return "delivered"
    if mode == "annotate":
        return "annotated"
    return "would_go_to_judge"


@dataclass
class BreakerReplay:
    """An agent's history replayed run by run under a policy."""

    states: list[TrustState] = field(default_factory=list)
    """The state after each evaluated run, oldest first."""
    trips: list[str] = field(default_factory=list)
    """The run ids on which the breaker would have tripped."""
    edges: list[str] = field(default_factory=list)
    """The run ids on which the agent entered at_risk (whatever the mode)."""


def replay_breaker(
    agent: str, evidence: Sequence[RunEvidence], policy: TrustPolicy
) -> BreakerReplay:
    """Replay the breaker over an agent's runs in time order, judging each at its time.

    Each step's state is the state the status gives over the window ending at that run
    (the same columns, the same element-wise weights and exact sums): see
    :func:`replay_states`.
    """
    ordered = sorted((e for e in evidence if e.passed is not None), key=lambda e: (e.at, e.run_id))
    replay = BreakerReplay()
    if not ordered:
        return replay
    columns = columns_of(ordered, frozenset(policy.trust_critical))
    memory = BreakerMemory()
    mode = policy.mode_for(agent)
    for item, state in zip(ordered, replay_states(*columns, policy), strict=True):
        decision = breaker_decision(memory, state, mode)
        memory = decision.memory
        replay.states.append(state)
        if decision.edge:
            replay.edges.append(item.run_id)
        if decision.trip:
            replay.trips.append(item.run_id)
    return replay


def exact_states(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    policy: TrustPolicy,
) -> list[TrustState]:
    """The state after each run (columns in time order), each step's window summed
    exactly (:func:`~arbiter.trust.conduct.rates`): the definition
    :func:`replay_states` computes faster."""
    return [
        _exact_step(times, passes, dim_passes, dim_decided, policy, i) for i in range(len(times))
    ]


def _exact_step(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    policy: TrustPolicy,
    index: int,
) -> TrustState:
    low, high = max(0, index + 1 - policy.window_runs), index + 1
    now = float(times[index])
    score, _gating, _dimension = rates(
        times[low:high], passes[low:high], dim_passes[low:high], dim_decided[low:high], policy, now
    )
    return state_for(score, high - low, now, policy, now)


_CELLS = 1 << 21
"""Window cells (steps x runs) weighed at once by :func:`replay_states`."""
_TINY = 1e-250
"""Weights below this may round apart between two evaluations: such a step is summed
exactly."""


def replay_states(
    times: NDArray[np.float64],
    passes: NDArray[np.float64],
    dim_passes: NDArray[np.float64],
    dim_decided: NDArray[np.float64],
    policy: TrustPolicy,
) -> list[TrustState]:
    """:func:`exact_states`, equal state for state, in a fraction of the time.

    A state only depends on how the step's conduct compares with the floors (and on
    the window's size). All steps are weighed at once (a steps x window matrix, in
    chunks) and summed in floating point, whose error is far below ``margin``; a step
    whose conduct lies within ``margin`` of a floor (or whose weights are so small that
    they could round to another value) is summed exactly as :func:`exact_states` does.
    """
    count = len(times)
    window = policy.window_runs
    half_life = policy.half_life_days * _DAY
    floors = np.array([policy.at_risk_floor, policy.healthy_floor, policy.trusted_floor])
    margin = 1e-9 + window * 1e-15
    blend = policy.trust_dim_weight
    states: list[TrustState] = []
    back = np.arange(min(window, count))
    step = max(1, _CELLS // max(1, len(back)))
    for start in range(0, count, step):
        index = np.arange(start, min(count, start + step))
        earlier = index[:, None] - back[None, :]
        inside = earlier >= 0
        earlier = np.where(inside, earlier, 0)
        ages = np.maximum(0.0, times[index][:, None] - times[earlier])
        weights = np.where(inside, np.power(0.5, ages / half_life), 0.0)
        total = weights.sum(axis=1)
        gating = np.minimum(
            1.0, (weights * passes[earlier]).sum(axis=1) / np.where(total > 0, total, 1.0)
        )
        gating = np.where(total > 0, gating, 0.0)
        decided = (weights * dim_decided[earlier]).sum(axis=1)
        dimension = np.minimum(
            1.0, (weights * dim_passes[earlier]).sum(axis=1) / np.where(decided > 0, decided, 1.0)
        )
        score = gating
        if policy.trust_critical:
            score = np.where(decided > 0, (1.0 - blend) * gating + blend * dimension, gating)
        smallest = np.where(inside, weights, 1.0).min(axis=1)
        unsure = (np.abs(score[:, None] - floors[None, :]) <= margin).any(axis=1) | (
            smallest < _TINY
        )
        runs = np.minimum(index + 1, window)
        for row, at in enumerate(index.tolist()):
            if unsure[row]:
                states.append(_exact_step(times, passes, dim_passes, dim_decided, policy, at))
                continue
            states.append(_state(float(score[row]), int(runs[row]), policy))
    return states


def _state(score: float, runs: int, policy: TrustPolicy) -> TrustState:
    """:func:`~arbiter.trust.conduct.state_for` of a step judged at its newest run."""
    if runs < policy.min_runs_proven:
        return "provisional"
    if score < policy.at_risk_floor:
        return "at_risk"
    if score < policy.healthy_floor:
        return "watch"
    if score < policy.trusted_floor or runs < policy.min_runs_trusted:
        return "proven"
    return "trusted"
