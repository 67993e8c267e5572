"""One text read once: its tokens, figures and the words each figure attaches to.

Every lens runs every detector on the same task, context and output, so the reading of
a text is cached by the text itself.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress

from arbiter.jury.detectors.quantities import Quantity, extract_quantities
from arbiter.jury.detectors.text import Tokens, Window, clause_span, tokenize, window

__all__ = ["Analysis", "analyse"]

# Figures that name things rather than measure them ("DevSummit 2026", "Week 1") do
# not cut a neighbouring figure off from its words.
_NAMES = ("year", "label", "ordinal")


@dataclass(frozen=True)
class Analysis:
    """A text with its tokens, its figures and each figure's window of nearby words."""

    text: str
    tokens: Tokens
    quantities: tuple[Quantity, ...]
    windows: tuple[Window, ...]
    """``windows[i]`` holds the words ``quantities[i]`` attaches to."""

    @property
    def starts(self) -> tuple[int, ...]:
        """``starts[i]`` is where token ``i`` starts (for bisecting)."""
        return self.tokens.starts

    def clause(self, start: int, end: int) -> str:
        """The verbatim clause of the text around ``start:end``."""
        s, e = clause_span(self.text, start, end)
        return self.text[s:e]

    def segment_words(self, index: int) -> frozenset[str]:
        """The content stems of the segment of token ``index``."""
        tokens = self.tokens
        part = tokens.segment(index)
        return frozenset(
            compress(tokens.stems[part.start : part.stop], tokens.contents[part.start : part.stop])
        )


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
