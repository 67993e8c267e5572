"""The breaker's decision: trip on the edge into at_risk, once per bad streak.

The memory is kept per agent (and owner) by the caller, in the store, so a restart does
not trip again on a streak already reported. The edge is tracked whatever the mode, so a
breaker switched on in the middle of a streak waits for the next one.
"""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.contract.trust import BreakerAction, BreakerMemory, BreakerMode, TrustState

__all__ = ["BreakerDecision", "breaker_decision"]


@dataclass(frozen=True)
class BreakerDecision:
    """One decision: whether it tripped, what to do, and the memory to keep."""

    trip: bool
    """The agent just entered at_risk and the breaker is on."""
    action: BreakerAction
    """``notify`` or ``freeze`` on a trip, else ``none``."""
    memory: BreakerMemory
    """What to remember for the next decision."""
    edge: bool
    """The agent just entered at_risk (whatever the mode)."""


def breaker_decision(
    memory: BreakerMemory, state: TrustState, mode: BreakerMode
) -> BreakerDecision:
    """Decide on the agent's new state given what the breaker remembers."""
    at_risk = state == "at_risk"
    edge = at_risk and not memory.in_at_risk
    trip = edge and mode != "off"
    action: BreakerAction = mode if trip and mode != "off" else "none"
    kept = BreakerMemory(in_at_risk=at_risk, trips=memory.trips + (1 if trip else 0))
    return BreakerDecision(trip=trip, action=action, memory=kept, edge=edge)
