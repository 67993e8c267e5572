"""Which windows share words with a window: an index instead of all-pairs comparisons.

The detectors score a figure or a rule word against others by the words around them
(``text.overlap``); a candidate sharing no word scores nothing. So candidates are found
through the words, and the items with identical windows (and whatever else a score
depends on) are kept as one *group*, scored once: a long text repeating itself gives
few groups. Each word leads to at most ``CANDIDATES`` groups, which bounds the work per
lookup whatever the text.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from arbiter.jury.detectors.text import Window

__all__ = ["CANDIDATES", "SCAN_LIMIT", "WindowGroups", "WindowKey", "window_key"]

CANDIDATES = 64
"""Groups a word leads to at most: those where the word weighs most in the window
(nearest the anchor), the earliest first among equals.

A cap for linear time. It only bites when over 64 distinct windows of one kind of figure
(or of rule word) share a word: never in the bundled cases or SummEdits (indexed, their
busiest word is shared by 11 windows) nor in 1,000,000-character texts made of them (43).
Past it, a window sharing only such common words with a figure is not looked at.
"""

SCAN_LIMIT = 32
"""Items up to which the detectors compare with all of them rather than index them: on
short texts (nearly all), building an index costs more than it saves."""

WindowKey = tuple[tuple[str, float], ...]


def window_key(window: Window) -> WindowKey:
    """A hashable copy of ``window``, its order kept (``overlap`` sums in that order)."""
    return tuple(window.items())


@dataclass
class WindowGroups:
    """Items grouped by a key (their window and what else their score depends on).

    Add the items in order with ``add``, then ``seal``; ``candidates`` gives the groups
    sharing a word, by group number (the order of their first items).
    """

    members: list[list[int]] = field(default_factory=list)
    """The items of each group, in the order added."""
    windows: list[Window] = field(default_factory=list)
    """The window of each group's first item."""
    _numbers: dict[Hashable, int] = field(default_factory=dict)
    _postings: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    _sealed: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def add(
        self, key: Hashable, item: int, window: Window, words: Iterable[str] | None = None
    ) -> int:
        """Add ``item``; ``words`` (default: the window's) are those it is found by."""
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self.members)
            self.members.append([])
            self.windows.append(window)
            for word in window if words is None else words:
                weight = window.get(word, 0.0)
                self._postings.setdefault(word, []).append((-weight, number))
        self.members[number].append(item)
        return number

    def seal(self) -> WindowGroups:
        """Keep ``CANDIDATES`` groups per word; the groups in order for each."""
        for word, posting in self._postings.items():
            kept = sorted(posting)[:CANDIDATES] if len(posting) > CANDIDATES else posting
            self._sealed[word] = tuple(sorted(number for _, number in kept))
        self._postings = {}
        return self

    def candidates(self, words: Iterable[str]) -> list[int]:
        """The groups found by any of ``words``, ascending."""
        found: set[int] = set()
        for word in words:
            found.update(self._sealed.get(word, ()))
        return sorted(found)
