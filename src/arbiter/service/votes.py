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
from arbiter.judges.calibration import LabelPair
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

VERDICT_JUDGE = "run_verdict"
"""The name votes calibrate a run's own verdict (the deterministic scorers') under."""

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


def _latest(votes: list[Vote]) -> list[Vote]:
    """The latest vote of each voter on each run (a changed mind replaces the earlier)."""
    latest: dict[tuple[str | None, str], Vote] = {}
    for vote in votes:
        latest[(vote.owner, vote.run_id)] = vote
    return list(latest.values())


def vote_alignment(store: Store, agent: str, *, viewer: str | None = None) -> VoteAlignment:
    """Vote alignment of one agent's verdicts."""
    votes = _latest(list_votes(store, viewer=viewer, agent=agent))
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


def vote_pairs(
    store: Store, *, viewer: str | None = None, agent: str | None = None
) -> list[LabelPair]:
    """Votes as calibration pairs: each voter's latest vote on a run against the run's
    verdict as the voter saw it (judge ``run_verdict``, dimension the agent), and against
    each judge's ruling on that run made before the vote (the judge's own name and
    dimension). An up vote is a human ``pass``, a down vote a ``fail``; a run that was
    not evaluated, or a judge that abstained, gives an abstention on the judge's side.
    """
    from arbiter.judges.judges import JUDGES
    from arbiter.store.trust_judging_repository import list_rulings

    pairs: list[LabelPair] = []
    for vote in _latest(list_votes(store, viewer=viewer, agent=agent)):
        human = "pass" if vote.vote == "up" else "fail"
        voter = vote.owner or ""
        seen = vote.verdict_seen
        pairs.append(
            LabelPair(
                judge_label=None if seen is None else ("pass" if seen else "fail"),
                human_label=human,
                judge=VERDICT_JUDGE,
                dimension=vote.agent,
                item_id=vote.run_id,
                annotator=voter,
            )
        )
        rulings = list_rulings(store, run_id=vote.run_id, limit=200)
        latest: dict[str, bool | None] = {}
        for ruling in sorted(rulings, key=lambda r: r.id):
            if ruling.created_at <= vote.created_at:
                latest[ruling.judge] = ruling.passed
        for judge, passed in sorted(latest.items()):
            definition = JUDGES.get(judge)
            pairs.append(
                LabelPair(
                    judge_label=None if passed is None else ("pass" if passed else "fail"),
                    human_label=human,
                    judge=judge,
                    dimension=definition.dimension if definition is not None else judge,
                    item_id=vote.run_id,
                    annotator=voter,
                )
            )
    return pairs


def with_vote_pairs(
    pairs: list[LabelPair],
    store: Store,
    *,
    viewer: str | None = None,
    judge: str | None = None,
    dimension: str | None = None,
) -> list[LabelPair]:
    """``pairs`` and the votes' pairs (filtered by ``judge`` and ``dimension``), for one
    calibration: the votes are the humans' labels of runs and of the judges on them."""
    found = vote_pairs(store, viewer=viewer)
    return [
        *pairs,
        *(
            p
            for p in found
            if (judge is None or p.judge == judge)
            and (dimension is None or p.dimension == dimension)
        ),
    ]
