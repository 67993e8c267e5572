"""The words figures are written with, and where in a text a figure can start.

A figure starts at an *anchor*: a digit or a currency sign, or a whole word (a maximal
run of word characters) that is a number word, a month or a currency code, or that
names a dollar ("US" in "US$5", the anchor then ending after the "$").
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import accumulate, compress

from arbiter.jury.detectors.text import WORD_CACHE, words_of

__all__ = ["MONTH", "MONTH_NUMBER", "NUMBER_WORD", "SCALES", "WORD_VALUES", "anchors"]

_SMALL_TEXT = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
)
_TENS_TEXT = "twenty thirty forty fifty sixty seventy eighty ninety"
_SMALL = _SMALL_TEXT.split()
_TENS = _TENS_TEXT.split()
SCALES = {"hundred": 100.0, "thousand": 1e3, "million": 1e6, "billion": 1e9}
"""Number words that multiply the ones before them."""
WORD_VALUES = {
    **{w: float(i) for i, w in enumerate(_SMALL)},
    **{w: float(20 + 10 * i) for i, w in enumerate(_TENS)},
}
"""The other number words, with their values."""
NUMBER_WORD = "|".join(sorted([*WORD_VALUES, *SCALES], key=len, reverse=True))
"""Regex alternation of the number words, longest first."""
_MONTHS_TEXT = (
    "January February March April May June July August September October November December"
)
_MONTHS = _MONTHS_TEXT.split()
MONTH_NUMBER = {m: i + 1 for i, m in enumerate(_MONTHS)} | {
    m[:3]: i + 1 for i, m in enumerate(_MONTHS)
}
MONTH_NUMBER["Sept"] = 9
"""Each month's name and abbreviations, with its number."""
MONTH = "(?-i:" + "|".join(sorted(MONTH_NUMBER, key=len, reverse=True)) + ")"
"""Regex of a month's name or abbreviation, case-sensitive, longest first."""

# The figure pattern of ``quantities`` is only tried at anchors, several times faster
# than at every position; and the anchors are found among the words rather than with
# one regex tried at every position, several times faster again.
_ANCHOR_SIGN = re.compile(r"[\d$€£¥₹]")
_ANCHOR_WORD = re.compile(rf"(?:USD|EUR|GBP)|(?i:half|{NUMBER_WORD})|{MONTH}")
_DOLLAR_NAMES = frozenset({"US", "A", "C", "NZ", "HK"})
_WORD_RUN = re.compile(r"(\w+)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_LETTERS = re.compile(r"[A-Za-z]+")


@lru_cache(maxsize=WORD_CACHE)
def _is_anchor_word(word: str) -> bool:
    return word in _DOLLAR_NAMES or _ANCHOR_WORD.fullmatch(word) is not None


def _is_word_char(char: str) -> bool:
    """Whether ``\\w`` matches ``char``."""
    return char.isalnum() or char == "_"


@lru_cache(maxsize=WORD_CACHE)
def _anchor_parts(word: str) -> tuple[tuple[int, int], ...]:
    """The spans of ``word`` (a ``text.words_of`` word) that are anchor words if whole."""
    if word.isalpha():
        return ((0, len(word)),) if _is_anchor_word(word) else ()
    return tuple(m.span() for m in _LETTERS.finditer(word) if _is_anchor_word(m.group()))


def anchors(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every anchor of ``text``, in order."""
    found = [m.span() for m in _ANCHOR_SIGN.finditer(text)]
    found.extend(_word_anchors(text))
    found.sort()
    return found


def _word_anchors(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the anchors that are words (or dollar names), in order."""
    if not text.isascii() and any(map(_is_word_char, set(_NON_ASCII.findall(text)))):
        return _word_anchors_anywhere(text)
    # Every word character of the text is an ASCII letter, digit or underscore, so every
    # anchor word is made of the letters of a word of ``words_of`` (which the tokens are
    # made of anyway): one of the runs of letters its hyphens and apostrophes separate,
    # with no digit or underscore on either side.
    starts, _, words = words_of(text)
    found: list[tuple[int, int]] = []
    for i in compress(range(len(words)), map(_anchor_parts, words)):
        for a, b in _anchor_parts(words[i]):
            start, end = starts[i] + a, starts[i] + b
            if start and _is_word_char(text[start - 1]):
                continue
            if end < len(text) and _is_word_char(text[end]):
                continue
            if words[i][a:b] in _DOLLAR_NAMES:
                if not text.startswith("$", end):
                    continue
                end += 1
            found.append((start, end))
    return found


def _word_anchors_anywhere(text: str) -> list[tuple[int, int]]:
    """``_word_anchors`` of any text: its runs of word characters, one by one."""
    # Splitting on the captured runs gives [gap, run, gap, run, ..., gap]; the running
    # sum of their lengths gives every offset, with no Match object per run.
    pieces = _WORD_RUN.split(text)
    runs = pieces[1::2]
    offsets = list(accumulate(map(len, pieces)))
    found: list[tuple[int, int]] = []
    for i in compress(range(len(runs)), map(_is_anchor_word, runs)):
        start, end = offsets[2 * i], offsets[2 * i + 1]
        if runs[i] in _DOLLAR_NAMES:
            if not text.startswith("$", end):
                continue
            end += 1
        found.append((start, end))
    return found
