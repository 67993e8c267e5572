"""The human vote on a stored run: calibration evidence that never enters a measurement.

A vote freezes the verdict the voter saw (the run's verdict at voting time). Alignment
is how often people agree with the verdict: an up vote on a passed run or a down vote
on a failed one agrees; a vote on a run that was not evaluated is counted but not
aligned. The same pairs (verdict, vote) are the κ pairs of calibration.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from arbiter.contract.common import Bounds
from arbiter.contract.trust import Vote, VoteValue
from arbiter.errors import InputError, StoreError
from arbiter.service.vote_pairs import VERDICT_JUDGE, latest_votes, vote_pairs, with_vote_pairs
from arbiter.stats import wilson_interval
from arbiter.store import Store
from arbiter.store.trajectory_repository import get_trajectory
from arbiter.store.trust_repository import add_vote, list_votes

__all__ = [
    "VERDICT_JUDGE",
    "VoteAlignment",
    "cast_vote",
    "kappa_pairs",
    "vote_alignment",
    "vote_pairs",
    "with_vote_pairs",
]

_MAX_REASON = 2000


class VoteAlignment(BaseModel):
    """How often people agree with an agent's verdicts."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    upvotes: int
    downvotes: int
    compared: int
    """Votes on evaluated runs."""
    agreements: int
    disagreements: int
    rate: float | None
    """agreements / compared; None when nothing was compared."""
    interval: Bounds
    """95% Wilson interval of ``rate``."""


def cast_vote(
    store: Store,
    run_id: str,
    vote: VoteValue,
    *,
    owner: str | None,
    viewer: str | None,
    reason: str = "",
    now: datetime | None = None,
) -> Vote:
    """Record a vote on a stored run ``viewer`` may see.

    Raises:
        InputError: Not ``up`` or ``down``, or a reason past 2,000 characters.
        StoreError: No such run the viewer may see.
    """
    if vote not in ("up", "down"):
        raise InputError(f"vote must be 'up' or 'down', got {vote!r}")
    if len(reason) > _MAX_REASON:
        raise InputError(f"reason: at most {_MAX_REASON} characters")
    record = get_trajectory(store, run_id, viewer=viewer)
    if record is None:
        raise StoreError(f"no agent run {run_id!r}")
    cast = add_vote(
        store,
        run_id=record.id,
        agent=record.agent,
        owner=owner,
        vote=vote,
        reason=reason,
        verdict_seen=record.passed,
        now=now,
    )
    # A vote is a calibration pair: a judge it takes below the kappa floor is an event.
    from arbiter.service.trust_calibration import check_calibration_quietly

    check_calibration_quietly(store)
    return cast


def vote_alignment(store: Store, agent: str, *, viewer: str | None = None) -> VoteAlignment:
    """Vote alignment of one agent's verdicts."""
    votes = latest_votes(list_votes(store, viewer=viewer, agent=agent))
    compared = [v for v in votes if v.verdict_seen is not None]
    agree = sum(1 for v in compared if (v.vote == "up") == v.verdict_seen)
    return VoteAlignment(
        agent=agent,
        upvotes=sum(1 for v in votes if v.vote == "up"),
        downvotes=sum(1 for v in votes if v.vote == "down"),
        compared=len(compared),
        agreements=agree,
        disagreements=len(compared) - agree,
        rate=agree / len(compared) if compared else None,
        interval=wilson_interval(agree, len(compared)),
    )


def kappa_pairs(store: Store, agent: str, *, viewer: str | None = None) -> list[tuple[bool, bool]]:
    """(verdict, person's verdict) pairs of an agent's voted evaluated runs, for Cohen's κ."""
    return [
        (p.judge_label == "pass", p.human_label == "pass")
        for p in vote_pairs(store, viewer=viewer, agent=agent)
        if p.judge == VERDICT_JUDGE and p.judge_label is not None
    ]
