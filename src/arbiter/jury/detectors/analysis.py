"""One text read once: its tokens, figures and the words each figure attaches to.

Every lens runs every detector on the same task, context and output, so the reading of
a text is cached by the text itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from arbiter.jury.detectors.quantities import Quantity, extract_quantities
from arbiter.jury.detectors.text import Token, Window, clause_span, tokenize, window

__all__ = ["Analysis", "analyse"]

# Figures that name things rather than measure them ("DevSummit 2026", "Week 1") do
# not cut a neighbouring figure off from its words.
_NAMES = ("year", "label", "ordinal")


@dataclass(frozen=True)
class Analysis:
    """A text with its tokens, its figures and each figure's window of nearby words."""

    text: str
    tokens: tuple[Token, ...]
    quantities: tuple[Quantity, ...]
    windows: tuple[Window, ...]
    """``windows[i]`` holds the words ``quantities[i]`` attaches to."""
    starts: tuple[int, ...]
    """``starts[i]`` is where ``tokens[i]`` starts (for bisecting)."""
    segment_words: tuple[frozenset[str], ...]
    """The content stems of each segment."""

    def clause(self, start: int, end: int) -> str:
        """The verbatim clause of the text around ``start:end``."""
        s, e = clause_span(self.text, start, end)
        return self.text[s:e]


@lru_cache(maxsize=256)
def analyse(text: str) -> Analysis:
    """Read ``text`` once (cached: the three lenses share the reading)."""
    quantities = tuple(extract_quantities(text))
    figures = [(q.start, q.end, q.kind not in _NAMES) for q in quantities]
    tokens = tuple(tokenize(text, figures))
    position = {t.start: i for i, t in enumerate(tokens) if not t.stem}
    windows = tuple(
        window(tokens, position[q.start], position[q.start], stop_at_conjunction=True)
        for q in quantities
    )
    segments: dict[int, set[str]] = {}
    for token in tokens:
        if token.content:
            segments.setdefault(token.segment, set()).add(token.stem)
    last = tokens[-1].segment if tokens else 0
    segment_words = tuple(frozenset(segments.get(i, ())) for i in range(last + 1))
    starts = tuple(t.start for t in tokens)
    return Analysis(text, tokens, quantities, windows, starts, segment_words)
