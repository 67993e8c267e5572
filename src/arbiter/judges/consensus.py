"""Consensus of a panel's votes: code, never a model.

The majority of the votes that are not ``unknown`` decides; a tie fails (a judge
panel that cannot agree has not cleared the item); when every vote is ``unknown`` (or
there is none) the consensus is None, an abstention, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arbiter.judges.verdicts import Vote

__all__ = ["Tally", "consensus", "tally"]


@dataclass(frozen=True)
class Tally:
    """How a panel voted on one item."""

    passes: int = 0
    """Votes ``pass``."""
    fails: int = 0
    """Votes ``fail``."""
    unknown: int = 0
    """Votes ``unknown`` (abstentions, failed and unparseable members included)."""

    @property
    def passed(self) -> bool | None:
        """The consensus: majority of the non-abstaining votes, a tie fails, none is None."""
        if self.passes + self.fails == 0:
            return None
        return self.passes > self.fails

    def __str__(self) -> str:
        return f"{self.passes} pass / {self.fails} fail / {self.unknown} unknown"


def tally(votes: Iterable[Vote]) -> Tally:
    """Count the votes of a panel."""
    counts = {"pass": 0, "fail": 0, "unknown": 0}
    for vote in votes:
        counts[vote] += 1
    return Tally(passes=counts["pass"], fails=counts["fail"], unknown=counts["unknown"])


def consensus(votes: Iterable[Vote]) -> bool | None:
    """The panel's ruling: True (pass), False (fail) or None (abstained).

    Examples:
        >>> consensus(["pass", "pass", "fail"]), consensus(["pass", "fail", "unknown"])
        (True, False)
        >>> consensus(["unknown", "unknown"]) is None
        True
    """
    return tally(votes).passed
