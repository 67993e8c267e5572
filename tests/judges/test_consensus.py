"""Consensus: majority of the non-abstaining votes, a tie fails, all unknown is None."""

from __future__ import annotations

import pytest

from arbiter.judges.consensus import consensus, tally
from arbiter.judges.verdicts import Vote


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        (["pass", "pass", "fail"], True),
        (["fail", "fail", "pass"], False),
        (["pass", "fail"], False),
        (["pass", "fail", "unknown", "unknown"], False),
        (["pass", "unknown", "unknown"], True),
        (["fail", "unknown"], False),
        (["unknown", "unknown", "unknown"], None),
        ([], None),
        (["pass"], True),
        (["pass", "pass", "fail", "fail", "unknown"], False),
    ],
)
def test_consensus_follows_the_majority_of_votes_that_did_not_abstain(
    votes: list[Vote], expected: bool | None
) -> None:
    assert consensus(votes) is expected


def test_abstentions_are_counted_but_never_vote() -> None:
    counted = tally(["unknown", "pass", "unknown"])
    assert (counted.passes, counted.fails, counted.unknown) == (1, 0, 2)
    assert str(counted) == "1 pass / 0 fail / 2 unknown"
