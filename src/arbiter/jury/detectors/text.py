"""Text plumbing shared by the detectors: segments, clauses, words, stems and windows.

A *segment* is a sentence, a list item or a part of a sentence between semicolons; a
*clause* is a part of a segment between commas. Offsets always index the raw text, so
any span cut from it is verbatim.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "STOPWORDS",
    "Token",
    "Window",
    "clause_span",
    "overlap",
    "segment_bounds",
    "stem",
    "tokenize",
    "window",
]

Window = dict[str, float]
"""Stems near an anchor, each with its closeness weight (1 = adjacent)."""

WINDOW_WORDS = 6
"""Content words looked at on each side of an anchor."""
_CLAUSE_PENALTY = 0.5

# A segment ends after . ! ? followed by a space, at a line break, or at a semicolon.
_SEGMENT_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|\n|;")
_CLAUSE_BREAK = re.compile(r",(?=\s)|\s[-–—]\s|[()]")
# Words after a figure and past one of these belong to the next item or the next figure
# ("3 designers and 1 manager", "from 10 June to Thursday 12 June").
_CONJUNCTIONS = frozenset(
    {"and", "or", "but", "while", "whereas", "although", "to", "from", "than", "until"}
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*[A-Za-z]|[A-Za-z]")
_BULLET = re.compile(r"\s*(?:[-*•‣◦]|\d{1,2}[.)]|[a-z][.)])\s+")

_STOPWORD_TEXT = """a about above after again against all almost also although am among an and any
    anything are aren't around as at be because been before being below between both
    but by can could did do does doing don't done down during each either else even
    ever every few for from further get gets getting got had has have having he her
    here hers him his how however i if in into is isn't it it's its itself just keep
    let like made make makes many may me might more most much must my near need needs
    no nor not now of off on once one only or other our ours out over own per please
    put same she should so some still such than that the their theirs them then there
    these they this those though through thus to too under until up upon us very via
    was wasn't we were weren't what when where whether which while who whom whose why
    will with within without won't would yet you you'll you're you've your yours
    yourself x vs etc approximately roughly nearly around go goes going went come comes
    came coming take takes took give gives gave done i'll we'll they'll it'll he'll
    she'll can't cannot couldn't shouldn't wouldn't doesn't didn't haven't hasn't
    hadn't mustn't needn't shan't let's that's there's here's what's who's ll ve re
    s t d m n"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that never identify what a figure or a rule is about."""


@dataclass(frozen=True, slots=True)
class Token:
    """A word of the text, or a placeholder for a figure (``stem`` is empty)."""

    start: int
    end: int
    stem: str
    segment: int
    clause: int
    content: bool
    """A word that can identify a thing: not a stopword, not a figure."""
    barrier: bool
    """A figure that ends the window of a neighbouring figure (names like "Week 1" do not)."""


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A crude stem: lowercase, possessive and common suffixes stripped.

    Examples:
        >>> stem("Required"), stem("requires"), stem("booking"), stem("sites")
        ('requir', 'requir', 'book', 'sit')
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'-")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: -len(suffix)]
    return w


@lru_cache(maxsize=1024)
def segment_bounds(text: str) -> tuple[int, ...]:
    """Start offsets of the text's segments, the first being 0."""
    return (0, *(m.end() for m in _SEGMENT_END.finditer(text)))


def _clause_bounds(text: str) -> list[int]:
    return sorted([0, *(m.end() for m in _CLAUSE_BREAK.finditer(text)), *segment_bounds(text)])


def tokenize(text: str, figures: Sequence[tuple[int, int, bool]]) -> list[Token]:
    """Words and figure placeholders of ``text`` in order; words inside figures are dropped.

    Args:
        text: The raw text.
        figures: Sorted, non-overlapping ``(start, end, barrier)`` of each figure.
    """
    items: list[tuple[int, int, str, bool, bool]] = [(s, e, "", False, b) for s, e, b in figures]
    fi = 0
    for match in _WORD.finditer(text):
        s, e = match.span()
        while fi < len(figures) and figures[fi][1] <= s:
            fi += 1
        if fi < len(figures) and figures[fi][0] < e:
            continue
        word = match.group()
        low = word.lower().replace("’", "'")
        items.append((s, e, stem(word), low not in STOPWORDS and len(low) > 1, False))
    items.sort()
    segments, clauses = segment_bounds(text), _clause_bounds(text)
    tokens: list[Token] = []
    segment = clause = 0
    for s, e, st, content, barrier in items:
        while segment + 1 < len(segments) and segments[segment + 1] <= s:
            segment += 1
        while clause + 1 < len(clauses) and clauses[clause + 1] <= s:
            clause += 1
        tokens.append(Token(s, e, st, segment, clause, content, barrier))
    return tokens


def window(
    tokens: Sequence[Token],
    first: int,
    last: int,
    *,
    ignore: Iterable[str] = (),
    stop_at_conjunction: bool = False,
) -> Window:
    """Content words around tokens ``first..last`` with closeness weights.

    The window stays inside the anchor's segment, stops at another figure, looks at up
    to ``WINDOW_WORDS`` content words each side, and halves the weight of words beyond
    a comma.

    Args:
        tokens: The tokenized text.
        first: Index of the anchor's first token.
        last: Index of the anchor's last token.
        ignore: Stems left out (e.g. the polarity word itself).
        stop_at_conjunction: End the right-hand side at "and", "or", "to", ... (for
            figures: in "3 designers and 1 manager" the manager is not the 3's).
    """
    skip = set(ignore)
    anchor = tokens[first]
    found: Window = {}
    for step, stop in ((-1, -1), (1, len(tokens))):
        index = first - 1 if step < 0 else last + 1
        distance = 0
        while index != stop and distance < WINDOW_WORDS:
            token = tokens[index]
            if token.segment != anchor.segment or token.barrier:
                break
            if step > 0 and stop_at_conjunction and token.stem in _CONJUNCTIONS:
                break
            if token.content and token.stem not in skip:
                distance += 1
                weight = 1.0 / distance
                if token.clause != anchor.clause:
                    weight *= _CLAUSE_PENALTY
                if weight > found.get(token.stem, 0.0):
                    found[token.stem] = weight
            index += step
    return found


def overlap(a: Window, b: Window) -> float:
    """How strongly two windows share words: sum of the products of shared weights."""
    if len(b) < len(a):
        a, b = b, a
    return sum(weight * b[word] for word, weight in a.items() if word in b)


@lru_cache(maxsize=4096)
def clause_span(text: str, start: int, end: int, *, min_words: int = 3) -> tuple[int, int]:
    """The clause around ``text[start:end]``, trimmed; its segment if the clause is tiny.

    The returned span never cuts ``start:end`` and is a verbatim slice of ``text``.
    """
    segments = segment_bounds(text)
    seg_start = segments[bisect_right(segments, start) - 1]
    seg_end = next((b for b in segments if b > start and b >= end), len(text))
    seg_end = _segment_stop(text, end, seg_end)
    left, right = seg_start, seg_end
    for match in _CLAUSE_BREAK.finditer(text, seg_start, seg_end):
        if match.end() <= start:
            left = match.end()
        elif match.start() >= end:
            right = match.start()
            break
    span = _trim(text, left, right)
    if len(_WORD.findall(text, span[0], span[1])) < min_words:
        span = _trim(text, seg_start, seg_end)
    return span


def _segment_stop(text: str, start: int, end: int) -> int:
    """Where the segment's own text stops: before its closing punctuation or line break."""
    match = _SEGMENT_END.search(text, start, end)
    return match.start() if match else end


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    bullet = _BULLET.match(text, start, end)
    if bullet and bullet.end() < end:
        start = bullet.end()
    while start < end and (text[start].isspace() or text[start] in ",;:-–—(\"'"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in ",;:-–—)\"'."):
        end -= 1
    return start, end
