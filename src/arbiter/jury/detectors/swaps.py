"""Swapped attachments: a figure or a weekday / month name moved to the wrong noun.

Every figure of "re-elected with 61% of the vote; turnout was 52%" is in a context that
says 52% of the vote and 61% turnout, so a detector asking "does the context state this
figure?" finds nothing wrong. This one asks what the figure is *attached to*: the words
of its window (see :func:`~arbiter.jury.detectors.text.window`). An output figure whose
words match a context figure of another value far better than any context figure of its
own value has been moved onto the other one's noun. Weekday and month names are read the
same way ("closed on Friday" where the context closes on Wednesday), whether or not the
output's name occurs elsewhere in the context.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from arbiter.contract import Callout
from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.equality import NAMES, comparable, figure_index
from arbiter.jury.detectors.quantities import same_value
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import WINDOW_SCAN, WINDOW_WORDS, Tokens, Window, overlap, stem

__all__ = ["CALENDAR_WORDS", "MAX_MENTIONS", "swapped_calendar_names", "swapped_figures"]

MAX_MENTIONS = 256
"""Figures or calendar names read per text at most: a cap for linear time (the pairs
compared are at most its square, whatever the text's length)."""
SWAP_MATCH = 0.25
"""Least overlap with the rival's telling words: one word second-next to both."""
SWAP_MARGIN = 2.0
"""How many times better the rival's telling words must match than the output's own."""

_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_TEXT = (
    "january february march april may june july august september october november december"
)
_MONTHS = tuple(_MONTH_TEXT.split())
_SHORT = {
    **{d[:3]: d for d in _DAYS},
    "tues": "tuesday",
    "thur": "thursday",
    "thurs": "thursday",
    **{m[:3]: m for m in _MONTHS if m != "may"},
    "sept": "september",
}
# Capitalised names only, and an abbreviation only as a whole word ("Sun" is also a noun,
# but a capitalised "Sun" next to a date or a time is the day; the window decides).
_CALENDAR = re.compile(
    r"\b(?:"
    + "|".join(sorted({n.capitalize() for n in (*_DAYS, *_MONTHS, *_SHORT)}, key=len, reverse=True))
    + r")(?:s\b|\b)"
)
CALENDAR_WORDS = frozenset((*_DAYS, *_MONTHS, *_SHORT))
"""Weekday and month names and their abbreviations, lowercase."""
_CALENDAR_STEMS = frozenset(stem(n) for n in (*_DAYS, *_MONTHS, *_SHORT, *(d + "s" for d in _DAYS)))


@dataclass(frozen=True, slots=True)
class _Name:
    """One weekday or month name: its class, canonical name, span and window."""

    kind: str
    name: str
    start: int
    end: int
    window: Window


def _canonical(word: str) -> tuple[str, str]:
    low = word.lower()
    if low.endswith("s") and low[:-1] in _DAYS:
        low = low[:-1]
    low = _SHORT.get(low, low)
    return ("day" if low in _DAYS else "month"), low


def _opens_sentence(text: str, start: int) -> bool:
    before = start
    while before > 0 and text[before - 1].isspace():
        before -= 1
    return before == 0 or text[before - 1] in ".!?:\n"


def _calendar_window(tokens: Tokens, index: int) -> Window:
    """Content words around token ``index`` in its segment, reaching past figures.

    Unlike a figure's window this one does not stop at a figure: in "the first two weeks
    of May" the words that say what May is for lie beyond "two weeks".
    """
    segment, clause = tokens.segment(index), tokens.clause(index)
    found: Window = {}
    for step in (-1, 1):
        at, distance, scanned = index + step, 0, 0
        while at in segment and distance < WINDOW_WORDS and scanned < WINDOW_SCAN:
            word = tokens.stems[at]
            if tokens.contents[at] and word not in _CALENDAR_STEMS:
                distance += 1
                weight = (1.0 if at in clause else 0.5) / distance
                found[word] = max(weight, found.get(word, 0.0))
            at += step
            scanned += 1
    return found


@lru_cache(maxsize=256)
def _calendar_names(text: str) -> tuple[_Name, ...]:
    analysis = analyse(text)
    tokens = analysis.tokens
    found: list[_Name] = []
    for match in _CALENDAR.finditer(text):
        start, end = match.span()
        word = match.group()
        # "May I ..." opens a sentence and is not the month.
        if word == "May" and _opens_sentence(text, start):
            continue
        index = max(0, bisect_right(tokens.starts, start) - 1)
        kind, name = _canonical(word)
        near = _calendar_window(tokens, index)
        found.append(_Name(kind, name, start, end, near))
        if len(found) >= MAX_MENTIONS:
            break
    return tuple(found)


def _distinct(windows: Sequence[Window]) -> Window:
    """The union of ``windows``, each word at its greatest weight."""
    union: Window = {}
    for near in windows:
        for word, weight in near.items():
            union[word] = max(weight, union.get(word, 0.0))
    return union


def _swap_rival(
    near: Window, same: Sequence[Window], others: Sequence[Window], needed: float
) -> int:
    """The index of the rival ``near`` was taken from, or -1.

    Only the words that tell the two apart count: in "the north wing has 120 beds and the
    south wing has 45 beds", "wing" and "beds" are everyone's, "north" is the 120's.
    """
    own = _distinct(same)
    best, at = 0.0, -1
    for i, other in enumerate(others):
        theirs = {w: x for w, x in other.items() if w not in own}
        score = overlap(near, theirs)
        if score > best:
            best, at = score, i
    if at < 0:
        return -1
    rival = others[at]
    kept = overlap(near, {w: x for w, x in own.items() if w not in rival})
    return at if best >= needed and best > SWAP_MARGIN * kept else -1


def _callout(
    analysis: Analysis, context: Analysis, span: tuple[int, int], rival: tuple[int, int], what: str
) -> Callout:
    said = analysis.text[span[0] : span[1]]
    source = context.text[rival[0] : rival[1]]
    return Callout(
        dimension="accuracy",
        kind="contradicted",
        claim=f"The output attaches '{said}' where the context has '{source}' ({what}).",
        quote=analysis.clause(*span),
        rival=context.clause(*rival),
    )


def swapped_calendar_names(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Weekday and month names the output attaches where the context has another one.

    Args:
        task: Unused.
        context: The source.
        output: The output under judgement.
        settings: Unused (the margins are fixed; see ``SWAP_MATCH``, ``SWAP_MARGIN``).

    Returns:
        ``accuracy``/``contradicted`` callouts quoting the output's clause.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in swapped_calendar_names("", "The pool is closed on Monday.",
        ...     "The pool is closed on Friday.", DetectorSettings())]
        ['The pool is closed on Friday']
    """
    del task, settings
    said, source = _calendar_names(output), _calendar_names(context)
    if not said or not source:
        return []
    callouts: list[Callout] = []
    for mention in said:
        same = [s.window for s in source if s.kind == mention.kind and s.name == mention.name]
        others = [s for s in source if s.kind == mention.kind and s.name != mention.name]
        if not others:
            continue
        # A name the context also uses elsewhere needs a clear rival to be called moved.
        needed = 4 * SWAP_MATCH if same else SWAP_MATCH
        at = _swap_rival(mention.window, same, [s.window for s in others], needed)
        if at >= 0:
            rival = others[at]
            callouts.append(
                _callout(
                    analyse(output),
                    analyse(context),
                    (mention.start, mention.end),
                    (rival.start, rival.end),
                    "another day or month",
                )
            )
    return callouts


def swapped_figures(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Figures stated in both texts that the output attaches to the other one's noun.

    Only a swap between figures the output states both of counts ("both present in both
    texts"): a figure that matches no context value is the figures detector's business.

    Args:
        task: Unused.
        context: The source.
        output: The output under judgement.
        settings: ``hedge_tolerance`` decides which values are equal.

    Returns:
        ``accuracy``/``contradicted`` callouts quoting the output's clause.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> context = "The north wing has 120 beds and the south wing has 45 beds."
        >>> output = "The north wing has 45 beds and the south wing has 120 beds."
        >>> [c.claim[:40] for c in swapped_figures("", context, output, DetectorSettings())]
        ["The output attaches '45' where the conte", "The output attaches '120' where the cont"]
    """
    del task
    out, ctx = analyse(output), analyse(context)
    said = [i for i, q in enumerate(out.quantities[:MAX_MENTIONS]) if q.kind not in NAMES]
    source = [i for i, q in enumerate(ctx.quantities[:MAX_MENTIONS]) if q.kind not in NAMES]
    if len(said) < 2 or len(source) < 2:
        return []
    tolerance = settings.hedge_tolerance
    restated = figure_index(output)
    taken: dict[int, int] = {}  # output figure -> the context figure it took the place of
    for i in said:
        q = out.quantities[i]
        near = out.windows[i]
        if not near:
            continue
        same: list[Window] = []
        others: list[int] = []
        for j in source:
            c = ctx.quantities[j]
            # Same kind and unit as written: "2200 W" and "1.7 l" are not one quantity.
            if not comparable(q, c) or (q.kind, q.surface) != (c.kind, c.surface):
                continue
            if same_value(q, c, tolerance=tolerance if (q.hedged or c.hedged) else 0.0):
                same.append(ctx.windows[j])
            elif restated.first_equal(c, exclude=i) is not None:
                others.append(j)  # the rival value is stated by the output too
        if not same or not others:
            continue  # no figure of its own value: for the figures detector
        at = _swap_rival(near, same, [ctx.windows[j] for j in others], SWAP_MATCH)
        if at >= 0:
            taken[i] = others[at]
    # A swap is mutual: the rival's value, where the output states it, took this one's
    # place in turn. A figure merely near a busy list of others is not a swap.
    callouts: list[Callout] = []
    for i, j in taken.items():
        q, rival = out.quantities[i], ctx.quantities[j]
        if any(
            k != i and same_value(out.quantities[k], rival) and same_value(q, ctx.quantities[m])
            for k, m in taken.items()
        ):
            callouts.append(
                _callout(
                    out,
                    ctx,
                    (q.start, q.end),
                    (rival.start, rival.end),
                    "the figure of another noun",
                )
            )
    return callouts
