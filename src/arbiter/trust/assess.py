"""One agent's trust status from its evidence: conduct, ladder, integrity cap."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from arbiter.contract.trust import Integrity, RunEvidence, TrustStatus
from arbiter.trust.conduct import Conduct, behaviour_state, conduct_of
from arbiter.trust.integrity import CAPS, apply_cap
from arbiter.trust.policy import TrustPolicy

__all__ = ["assess", "status_of"]


def assess(
    agent: str,
    evidence: Iterable[RunEvidence],
    policy: TrustPolicy,
    *,
    now: datetime,
    integrity: Integrity = "unknown",
    owner: str | None = None,
) -> TrustStatus:
    """The trust status of one agent (of one owner) judged at ``now``.

    Args:
        agent: The agent's name.
        evidence: Its stored runs' evidence, in any order.
        policy: The trust policy.
        now: When it is judged (timezone-aware).
        integrity: What the signatures of its records say.
        owner: Whose agent it is.
    """
    conduct = conduct_of(evidence, policy, now=now)
    return status_of(agent, conduct, policy, now=now, integrity=integrity, owner=owner)


def status_of(
    agent: str,
    conduct: Conduct,
    policy: TrustPolicy,
    *,
    now: datetime,
    integrity: Integrity = "unknown",
    owner: str | None = None,
) -> TrustStatus:
    """The trust status of one agent whose conduct is ``conduct``: :func:`assess` for a
    caller that computed the conduct itself."""
    earned, stale, reasons = behaviour_state(conduct, policy, now=now)
    state, capped, note = apply_cap(earned, integrity)
    if note is not None:
        reasons = [*reasons, note]
    return TrustStatus(
        agent=agent,
        owner=owner,
        state=state,
        behaviour_state=earned,
        conduct=conduct.score,
        gating_rate=conduct.gating_rate,
        dimension_rate=conduct.dimension_rate,
        interval=conduct.interval,
        runs=conduct.runs,
        abstained=conduct.abstained,
        newest_at=conduct.newest_at,
        stale=stale,
        integrity=integrity,
        cap=CAPS[integrity],
        capped=capped,
        reasons=reasons,
        breaker_mode=policy.mode_for(agent),
    )
