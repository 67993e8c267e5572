"""Text plumbing shared by the detectors: segments, clauses, words, stems and windows.

A *segment* is a sentence, a list item or a part of a sentence between semicolons; a
*clause* is a part of a segment between commas. Offsets always index the raw text, so
any span cut from it is verbatim.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, islice

__all__ = [
    "STOPWORDS",
    "WORD_CACHE",
    "Tokens",
    "Window",
    "clause_span",
    "overlap",
    "segment_bounds",
    "stem",
    "tokenize",
    "window",
    "words_of",
]

Window = dict[str, float]
"""Stems near an anchor, each with its closeness weight (1 = adjacent)."""

WORD_CACHE = 16384
"""Entries of each cache keyed by a single word (about a large vocabulary)."""
WINDOW_WORDS = 6
"""Content words looked at on each side of an anchor."""
WINDOW_SCAN = 64
"""Tokens looked at on each side of an anchor at most (a cap for linear time): real text
gives its 6 content words within 37 (the most over the bundled cases and SummEdits)."""
_CLAUSE_PENALTY = 0.5

# A segment ends after . ! ? followed by a space, at a line break, or at a semicolon:
# r"[.!?]+[\"'”’)\]]*(?=\s|$)|\n|;", written to open with a character class (the
# lookbehinds tell which one it was) because the regex engine then jumps from one such
# character to the next instead of trying the pattern at every position of a long text.
_SEGMENT_END = re.compile(r"[.!?\n;](?:(?<=[.!?])[.!?]*[\"'”’)\]]*(?=\s|$)|(?<=[\n;]))")
_CLAUSE_BREAK = re.compile(r",(?=\s)|\s[-–—]\s|[()]")
_SEGMENT_SPLIT = re.compile(f"({_SEGMENT_END.pattern})")
# Words after a figure and past one of these belong to the next item or the next figure
# ("3 designers and 1 manager", "from 10 June to Thursday 12 June").
_CONJUNCTIONS = frozenset(
    {"and", "or", "but", "while", "whereas", "although", "to", "from", "than", "until"}
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*[A-Za-z]|[A-Za-z]")
_WORD_SPLIT = re.compile(f"({_WORD.pattern})")
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
class Tokens:
    """The words of a text and placeholders for its figures, in order, as columns.

    Token ``i`` is ``words[i]`` at ``starts[i]:ends[i]``, and so on. Columns rather than
    one object per token: a long context has over a thousand tokens, and building,
    collecting and scanning that many objects was most of the time spent on a text.
    Which segment or clause a token is in is looked up in the bounds when asked.
    """

    starts: tuple[int, ...]
    ends: tuple[int, ...]
    words: tuple[str, ...]
    """The word as written; empty for a figure."""
    stems: tuple[str, ...]
    """The word's stem; empty for a figure (a word's stem never is)."""
    contents: tuple[bool, ...]
    """A word that can identify a thing: not a stopword, not a figure."""
    barriers: tuple[bool, ...]
    """A figure that ends the window of a neighbouring figure (names like "Week 1" do not)."""
    segment_starts: tuple[int, ...]
    """Sorted start offsets of the segments, the first being 0."""
    clause_starts: tuple[int, ...]
    """Sorted start offsets of the clauses, the first being 0 (some twice)."""

    def __len__(self) -> int:
        return len(self.starts)

    def segment(self, index: int) -> range:
        """The indices of the tokens in the segment of token ``index``."""
        return self._part(self.segment_starts, index)

    def clause(self, index: int) -> range:
        """The indices of the tokens in the clause of token ``index``."""
        return self._part(self.clause_starts, index)

    def _part(self, bounds: tuple[int, ...], index: int) -> range:
        # bounds[k - 1] <= start < bounds[k]: the part's tokens start in that interval.
        k = bisect_right(bounds, self.starts[index])
        first = bisect_left(self.starts, bounds[k - 1])
        last = bisect_left(self.starts, bounds[k]) if k < len(bounds) else len(self.starts)
        return range(first, last)


@lru_cache(maxsize=WORD_CACHE)
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
    # Split into [gap, match, gap, ..., gap]: the running sums of their lengths.
    return (0, *list(accumulate(map(len, _SEGMENT_SPLIT.split(text))))[1::2])


@lru_cache(maxsize=256)
def _segment_ends(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(starts, ends)`` of the matches of ``_SEGMENT_END`` that end the segments."""
    offsets = tuple(accumulate(map(len, _SEGMENT_SPLIT.split(text))))
    return offsets[0:-1:2], offsets[1::2]


def _clause_breaks(text: str) -> list[int]:
    """Where each match of ``_CLAUSE_BREAK`` in ``text`` ends.

    Found from the few characters a break is made of with ``str.find``, many times faster
    on a long text than a regex scan.
    """
    ends: list[int] = []
    for char in ",()":
        at = text.find(char)
        while at >= 0:
            if char != "," or text[at + 1 : at + 2].isspace():
                ends.append(at + 1)
            at = text.find(char, at + 1)
    dashes: list[int] = []
    for char in "-–—":
        at = text.find(char)
        while at >= 0:
            dashes.append(at)
            at = text.find(char, at + 1)
    taken = 0
    for at in sorted(dashes):
        # A spaced dash cannot take the space after the previous one as its space before
        # (a scan for _CLAUSE_BREAK reads " - - " as one break).
        if at - 1 >= taken and text[at - 1 : at].isspace() and text[at + 1 : at + 2].isspace():
            taken = at + 2
            ends.append(taken)
    return ends


def _clause_bounds(text: str) -> tuple[int, ...]:
    return tuple(sorted([0, *_clause_breaks(text), *segment_bounds(text)]))


@lru_cache(maxsize=WORD_CACHE)
def _is_content(word: str) -> bool:
    """Whether a word can identify a thing: not a stopword, not a single letter."""
    low = word.lower().replace("’", "'")
    return low not in STOPWORDS and len(low) > 1


@lru_cache(maxsize=16)
def words_of(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]:
    """``(starts, ends, words)`` of the words of ``text``, figures not yet taken out.

    Cached, briefly: the figures of a text are found from its words, then its tokens
    made of them, one right after the other.
    """
    # Splitting on the captured words gives [gap, word, gap, word, ..., gap]; the running
    # sum of their lengths gives every offset, with no Match object per word.
    pieces = _WORD_SPLIT.split(text)
    offsets = tuple(accumulate(map(len, pieces)))
    return offsets[0:-1:2], offsets[1::2], tuple(pieces[1::2])


def tokenize(text: str, figures: Sequence[tuple[int, int, bool]]) -> Tokens:
    """Words and figure placeholders of ``text`` in order; words inside figures are dropped.

    Args:
        text: The raw text.
        figures: Sorted, non-overlapping ``(start, end, barrier)`` of each figure.
    """
    word_starts, word_ends, word_texts = words_of(text)
    # A figure replaces every word it overlaps; ``limit`` keeps a word overlapping two
    # figures from being replaced twice (it goes to the later one). The spans replaced
    # are found right to left, then the columns are built left to right in one pass.
    spans: list[tuple[int, int]] = []
    limit = len(word_texts)
    for start, end, _ in reversed(figures):
        hi = min(bisect_left(word_starts, end), limit)
        lo = min(bisect_right(word_ends, start), hi)
        spans.append((lo, hi))
        limit = lo
    starts: list[int] = []
    ends: list[int] = []
    words: list[str] = []
    placed: list[int] = []
    taken = 0
    for lo, hi in reversed(spans):
        starts += word_starts[taken:lo]
        ends += word_ends[taken:lo]
        words += word_texts[taken:lo]
        placed.append(len(words))
        words.append("")
        starts.append(0)
        ends.append(0)
        taken = hi
    starts += word_starts[taken:]
    ends += word_ends[taken:]
    words += word_texts[taken:]
    barriers = [False] * len(words)
    for at, (start, end, barrier) in zip(placed, figures, strict=True):
        starts[at], ends[at], barriers[at] = start, end, barrier
    # Column by column with ``map``, the per-word work runs in C.
    return Tokens(
        starts=tuple(starts),
        ends=tuple(ends),
        words=tuple(words),
        stems=tuple(map(stem, words)),
        contents=tuple(map(_is_content, words)),
        barriers=tuple(barriers),
        segment_starts=segment_bounds(text),
        clause_starts=_clause_bounds(text),
    )


def window(
    tokens: Tokens,
    first: int,
    last: int,
    *,
    ignore: Iterable[str] = (),
    stop_at_conjunction: bool = False,
) -> Window:
    """Content words around tokens ``first..last`` with closeness weights.

    The window stays inside the anchor's segment, stops at another figure, looks at up
    to ``WINDOW_WORDS`` content words (and ``WINDOW_SCAN`` tokens) each side, and halves
    the weight of words beyond a comma.

    Args:
        tokens: The tokenized text.
        first: Index of the anchor's first token.
        last: Index of the anchor's last token.
        ignore: Stems left out (e.g. the polarity word itself).
        stop_at_conjunction: End the right-hand side at "and", "or", "to", ... (for
            figures: in "3 designers and 1 manager" the manager is not the 3's).
    """
    skip = set(ignore)
    stems, contents, barriers = tokens.stems, tokens.contents, tokens.barriers
    segment, clause = tokens.segment(first), tokens.clause(first)
    found: Window = {}
    for step in (-1, 1):
        index = first - 1 if step < 0 else last + 1
        # The segment's tokens on this side, at most WINDOW_SCAN of them.
        low, high = segment.start, segment.stop
        if step < 0:
            low = max(low, index - WINDOW_SCAN + 1)
        else:
            high = min(high, index + WINDOW_SCAN)
        distance = 0
        while low <= index < high and distance < WINDOW_WORDS:
            if barriers[index]:
                break
            word = stems[index]
            if step > 0 and stop_at_conjunction and word in _CONJUNCTIONS:
                break
            if contents[index] and word not in skip:
                distance += 1
                weight = 1.0 / distance
                if index not in clause:
                    weight *= _CLAUSE_PENALTY
                if weight > found.get(word, 0.0):
                    found[word] = weight
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
    # The first segment bound past start and not before end; its segment's own text.
    after = bisect_left(segments, max(start + 1, end))
    seg_end = _segment_stop(text, start, end, after)
    left, right = seg_start, seg_end
    # A clause break is a match of _CLAUSE_BREAK scanned from seg_start to seg_end.
    break_starts, break_ends = _clause_breaks_in(text, seg_start, seg_end)
    before = bisect_right(break_ends, start)
    if before:
        left = break_ends[before - 1]
    following = bisect_left(break_starts, end)
    if following < len(break_starts):
        right = break_starts[following]
    span = _trim(text, left, right)
    if _word_count(text, span[0], span[1], min_words) < min_words:
        span = _trim(text, seg_start, seg_end)
    return span


def _segment_stop(text: str, start: int, end: int, after: int) -> int:
    """Where the segment's own text stops: before its closing punctuation or line break.

    The first match of ``_SEGMENT_END`` from ``end`` up to ``segment_bounds(text)[after]``
    (the end of the text when there is no such bound), read from the matches that made
    the bounds: up to a bound, the match ending there is the first one.
    """
    match_starts, match_ends = _segment_ends(text)
    if after <= len(match_ends):  # after >= 1: segment_bounds(text)[0] is 0
        seg_end = match_ends[after - 1]
        if end > start and match_starts[after - 1] >= end:
            return match_starts[after - 1]
    else:
        seg_end = len(text)
        if end > start:
            return seg_end  # no segment ends from here on
    match = _SEGMENT_END.search(text, end, seg_end)
    return match.start() if match else seg_end


@lru_cache(maxsize=1024)
def _clause_breaks_in(text: str, start: int, end: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(starts, ends)`` of the matches of ``_CLAUSE_BREAK`` in ``text[start:end]``.

    Cached: the figures of one long segment share its scan.
    """
    spans = [m.span() for m in _CLAUSE_BREAK.finditer(text, start, end)]
    return tuple(s for s, _ in spans), tuple(e for _, e in spans)


def _word_count(text: str, start: int, end: int, enough: int) -> int:
    """How many matches ``_WORD.findall(text, start, end)`` gives, or at least ``enough``.

    Counted on the text's words (``words_of``) when no word crosses either end of the
    span, the usual case; a long span is never scanned again.
    """
    starts, ends, _ = words_of(text)
    first = bisect_left(starts, start)
    last = bisect_right(ends, end)
    crossed = (first > 0 and ends[first - 1] > start) or (last < len(starts) and starts[last] < end)
    if not crossed:
        return max(0, last - first)
    return sum(1 for _ in islice(_WORD.finditer(text, start, end), enough))


@lru_cache(maxsize=4096)
def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    bullet = _BULLET.match(text, start, end)
    if bullet and bullet.end() < end:
        start = bullet.end()
    while start < end and (text[start].isspace() or text[start] in ",;:-–—(\"'"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in ",;:-–—)\"'."):
        end -= 1
    return start, end
