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
    "gate_outcome",
    "reband_run",
    "replay_breaker",
]

Band = Literal["healthy", "review", "danger"]
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

    Each step computes the state exactly as the status does (the same columns, the same
    element-wise weights and exact sums) over the window ending at that run.
    """
    ordered = sorted((e for e in evidence if e.passed is not None), key=lambda e: (e.at, e.run_id))
    replay = BreakerReplay()
    if not ordered:
        return replay
    times, passes, dim_passes, dim_decided = columns_of(ordered, frozenset(policy.trust_critical))
    memory = BreakerMemory()
    mode = policy.mode_for(agent)
    window = policy.window_runs
    for index, item in enumerate(ordered):
        low = max(0, index + 1 - window)
        now = float(times[index])
        high = index + 1
        score, _gating, _dimension = rates(
            times[low:high],
            passes[low:high],
            dim_passes[low:high],
            dim_decided[low:high],
            policy,
            now,
        )
        state = state_for(score, high - low, now, policy, now)
        decision = breaker_decision(memory, state, mode)
        memory = decision.memory
        replay.states.append(state)
        if decision.edge:
            replay.edges.append(item.run_id)
        if decision.trip:
            replay.trips.append(item.run_id)
    return replay
