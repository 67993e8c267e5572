"""One text read once: its tokens, figures and the words each figure attaches to.

Every lens runs every detector on the same task, context and output, so the reading of
a text is cached by the text itself.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress

from arbiter.jury.detectors.quantities import Quantity, extract_quantities
from arbiter.jury.detectors.text import Tokens, Window, clause_span, tokenize, window

__all__ = ["Analysis", "analyse"]

# Figures that name things rather than measure them ("DevSummit 2026", "Week 1") do
# not cut a neighbouring figure off from its words.
_NAMES = ("year", "label", "ordinal")
SEGMENT_REACH = 256
"""Tokens on each side of an anchor that its segment's words are read from at most.

A cap for linear time, past any real sentence (144 tokens at most over the bundled cases
and SummEdits): in a text without sentence breaks, the words of the whole text are not
gathered again for every rule word in it.
"""


@dataclass(frozen=True)
class Analysis:
    """A text with its tokens, its figures and each figure's window of nearby words."""

    text: str
    tokens: Tokens
    quantities: tuple[Quantity, ...]
    windows: tuple[Window, ...]
    """``windows[i]`` holds the words ``quantities[i]`` attaches to."""
    _words: dict[tuple[int, int], frozenset[str]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The content stems of token ranges, as asked (the mentions of a segment share them)."""

    @property
    def starts(self) -> tuple[int, ...]:
        """``starts[i]`` is where token ``i`` starts (for bisecting)."""
        return self.tokens.starts

    def clause(self, start: int, end: int) -> str:
        """The verbatim clause of the text around ``start:end``."""
        return _verbatim(self.text, *clause_span(self.text, start, end))

    def segment_words(self, index: int) -> frozenset[str]:
        """The content stems of the segment of token ``index`` (``SEGMENT_REACH`` of it)."""
        tokens = self.tokens
        part = tokens.segment(index)
        span = (max(part.start, index - SEGMENT_REACH), min(part.stop, index + SEGMENT_REACH + 1))
        found = self._words.get(span)
        if found is None:
            start, stop = span
            found = frozenset(compress(tokens.stems[start:stop], tokens.contents[start:stop]))
            self._words[span] = found
        return found


@lru_cache(maxsize=4096)
def _verbatim(text: str, start: int, end: int) -> str:
    """``text[start:end]``, one string for one span (cached): the figures of one long
    clause quote it without copying it, nor hashing it, once each."""
    return text[start:end]


@lru_cache(maxsize=256)
def analyse(text: str) -> Analysis:
    """Read ``text`` once (cached: the three lenses share the reading)."""
    quantities = tuple(extract_quantities(text))
    figures = [(q.start, q.end, q.kind not in _NAMES) for q in quantities]
    tokens = tokenize(text, figures)
    # Every figure is a token of its own, starting where the figure starts.
    positions = [bisect_left(tokens.starts, q.start) for q in quantities]
    windows = tuple(window(tokens, i, i, stop_at_conjunction=True) for i in positions)
    return Analysis(text, tokens, quantities, windows)
