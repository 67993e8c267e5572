"""Votes as calibration pairs: the people's labels of runs and of the judges on them.

Kept apart from casting a vote (:mod:`arbiter.service.votes`), which checks
calibration after each vote: calibration reads these pairs, so the two would
otherwise import each other.
"""

from __future__ import annotations

from arbiter.contract.trust import Vote
from arbiter.judges.calibration import LabelPair
from arbiter.store import Store
from arbiter.store.trust_repository import list_votes

__all__ = ["VERDICT_JUDGE", "latest_votes", "vote_pairs", "with_vote_pairs"]

VERDICT_JUDGE = "run_verdict"
"""The name votes calibrate a run's own verdict (the deterministic scorers') under."""


def latest_votes(votes: list[Vote]) -> list[Vote]:
    """The latest vote of each voter on each run (a changed mind replaces the earlier)."""
    latest: dict[tuple[str | None, str], Vote] = {}
    for vote in votes:
        latest[(vote.owner, vote.run_id)] = vote
    return list(latest.values())


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
    for vote in latest_votes(list_votes(store, viewer=viewer, agent=agent)):
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
