"""Checking that a quote really is in the output, and where.

Model judges (the jury's critics, the ``rubric`` scorer) must quote the span their
finding rests on; the quote is checked here, in code. Before a quote is compared with the
output, both are normalised the same way: Unicode dashes become ``-``, curly quotes
become straight ones, runs of whitespace become one space, and the quote loses the
quotation marks and ellipses a model likes to wrap it in. Case is kept: "verbatim"
means verbatim.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from functools import lru_cache

__all__ = ["Span", "locate", "normalize", "overlap_ratio", "sentence_index"]

Span = tuple[int, int]
"""Start and end offsets in the normalised output."""

_DASHES = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe63\uff0d"), "-"
)
_QUOTES = {
    **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032"), "'"),
    **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u2033"), '"'),
}
_WHITESPACE = re.compile(r"\s+")
_WRAPPERS = "\"'` \u2026."
# After normalisation line breaks are spaces: a sentence ends at . ! ? or a list bullet.
_SENTENCE_END = re.compile(r"(?<=[.!?])( )|( )(?=[-•*] )")


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Fold dashes and quotes, collapse whitespace, NFC-compose; keep case."""
    text = unicodedata.normalize("NFC", text).translate(_DASHES).translate(_QUOTES)
    return _WHITESPACE.sub(" ", text).strip()


def _clean_quote(quote: str) -> str:
    text = normalize(quote)
    while text and (text[0] in _WRAPPERS or text[-1] in _WRAPPERS or text.endswith("...")):
        text = text.strip(_WRAPPERS)
    return text


def locate(quote: str, output: str) -> Span | None:
    """Where ``quote`` occurs in ``output`` (both normalised), or None if it does not.

    Args:
        quote: The span a critic quoted.
        output: The output under judgement (raw; normalised here).

    Returns:
        ``(start, end)`` of the first occurrence in ``normalize(output)``, or None for an
        empty quote or one that is not verbatim in the output.
    """
    needle = _clean_quote(quote)
    if not needle:
        return None
    haystack = normalize(output)
    start = haystack.find(needle)
    return None if start < 0 else (start, start + len(needle))


def overlap_ratio(a: Span, b: Span) -> float:
    """Characters two spans share, over the length of the shorter one."""
    shared = min(a[1], b[1]) - max(a[0], b[0])
    shorter = min(a[1] - a[0], b[1] - b[0])
    return max(shared, 0) / shorter if shorter > 0 else 0.0


@lru_cache(maxsize=64)
def _sentence_breaks(normalized: str) -> list[int]:
    """Where each sentence break of a normalised text is complete: the offset a text
    must reach to hold it (a bullet break needs the two characters it looks ahead at)."""
    return sorted(
        m.end() if m.group(1) is not None else m.end() + 2
        for m in _SENTENCE_END.finditer(normalized)
    )


def sentence_index(output: str, position: int) -> int:
    """Index of the sentence of ``normalize(output)`` that holds ``position``.

    The breaks of a text are found once and bisected, so placing every quote of a long
    output costs one pass over it, not one per quote.
    """
    return bisect.bisect_right(_sentence_breaks(normalize(output)), position)
