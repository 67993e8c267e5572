"""The figures of a text, and whether a body of source numbers backs each one.

A figure is a number as the ``numeric`` scorer reads it (sign, thousands separators,
decimals, exponent: :mod:`arbiter.scoring.numeric`), plus what people write around it:

- a percent (``45%``, ``45 %``, ``45 percent``) also stands for the fraction 0.45;
- a scale word or letter (``1.2 million``, ``3bn``, ``4.5K``, ``2M``) multiplies it;
- its written precision is its tolerance: ``4.2`` is any source number that rounds to
  4.2 (4.15 to 4.25), ``12`` any that rounds to 12, ``1.2 million`` anything within
  50,000 of 1,200,000. So ``1,234.5`` / ``1234.50`` meet 1234.5, and ``12.3%`` meets
  0.1234.

Signs are compared as magnitudes: "fell 5%" and a source's -0.05 are the same figure.
An ordered-list marker at the start of a line (``1.``, ``2)``) and a citation marker
(``[2]``, ``[1, 3]``) are not figures.

A source (a tool result) is read as one JSON text (:func:`~arbiter.scoring.claims.json_text`:
its numbers, strings and keys) with the same grammar, less the sign and the ``.5`` form,
and without skipping markers (``[1, 2]`` is data there). A :class:`NumberIndex` holds
the source numbers sorted, so each figure is looked up by bisection: checking an answer
costs its figures times the log of the source's.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from arbiter.scoring.claims import json_text

# The numeric scorer's grammar of a written number, so both read numbers alike.
from arbiter.scoring.numeric import _NUMBER

__all__ = [
    "MAX_FIGURES",
    "MAX_SOURCE_FIGURES",
    "Figure",
    "NumberIndex",
    "figures_in",
    "json_numbers",
    "text_numbers",
    "texts_numbers",
]

MAX_FIGURES = 10_000
"""Figures of one answer read."""
MAX_SOURCE_FIGURES = 200_000
"""Figures of one source value (a tool result) read."""
# The numeric grammar without its sign (magnitudes are compared) and without the
# ``.5`` form JSON never writes: starting on a digit, it is several times faster to
# search than the full one, and a source is the bulk of what is read. The lookahead
# turns every position but a digit away at once (twice as fast on JSON text, the same
# matches).
_MAGNITUDE = re.compile(
    r"(?=[0-9])"
    r"(?P<body>(?:[0-9]{1,3}(?:,[0-9]{3}(?![0-9]))+|[0-9]+)(?:\.[0-9]+)?)"
    r"(?P<exponent>[eE][-+]?[0-9]+)?"
)

# The numeric grammar, told up front that a number starts on a sign, a point or a digit.
_FIGURE = re.compile(r"(?=[-+\u2212.0-9])" + _NUMBER.pattern)

_SCALES = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "mn": 1e6,
    "B": 1e9,
    "bn": 1e9,
    "T": 1e12,
}
# What may follow a number: a percent, or a scale (a word after a space, or a letter
# stuck to the digits), never more than a few characters: checked with match() at the
# number's end, so it costs a bounded look-ahead per number.
_AFTER = re.compile(
    r"(?P<percent>\s?%|\s(?:percent|per\s?cent)\b)"
    r"|\s?(?P<word>thousand|million|billion|trillion|bn|mn)\b"
    r"|(?P<letter>[kKMBT])(?![\w])"
)


@dataclass(frozen=True)
class Figure:
    """One number written in a text, with the tolerance its precision gives it."""

    value: float
    """Its magnitude, scaled (``1.2 million``: 1,200,000); a percent as written (45)."""
    tolerance: float
    """Half a unit of its last written digit, scaled."""
    percent: bool
    """Whether it was written as a percent (it then also stands for ``value / 100``)."""
    written: str
    """How the text wrote it."""
    at: int
    """The character it starts at."""

    def candidates(self) -> list[tuple[float, float]]:
        """The (value, tolerance) pairs a source number may match."""
        pairs = [(self.value, self.tolerance)]
        if self.percent:
            pairs.append((self.value / 100, self.tolerance / 100))
        return pairs


def _list_marker(text: str, start: int, end: int) -> bool:
    """Whether the integer at ``start:end`` numbers a list item (``1.`` or ``2)`` at a
    line's start, then a space)."""
    if text[end : end + 1] not in (".", ")") or not text[end + 1 : end + 2].isspace():
        return False
    line_start = max(text.rfind("\n", max(start - 16, 0), start) + 1, max(start - 16, 0))
    return start - line_start < 16 and text[line_start:start].strip(" \t*-#>") == ""


def _citation_marker(text: str, start: int, end: int) -> bool:
    """Whether the integer at ``start:end`` sits in a citation marker (``[2]``, ``[^1]``,
    ``[1, 3]``): looked for no further than 40 characters either side."""
    opening = text.rfind("[", max(start - 40, 0), start)
    closing = text.find("]", end, end + 40)
    if opening < 0 or closing < 0:
        return False
    inside = text[opening + 1 : closing]
    return bool(inside) and all(c.isdigit() or c in ",; ^" for c in inside)


def figures_in(text: str, *, limit: int = MAX_FIGURES, markers: bool = True) -> Iterator[Figure]:
    """The figures of ``text``, in order (at most ``limit``).

    Args:
        text: The text.
        limit: Most figures read.
        markers: Leave out list and citation markers (an answer's); False for a source,
            where ``[1, 2]`` is data.

    Examples:
        >>> [(f.value, f.tolerance, f.percent) for f in figures_in("Up 12.5% to $1.2 million")]
        [(12.5, 0.05, True), (1200000.0, 50000.0, False)]
    """
    count = 0
    for found in _FIGURE.finditer(text):
        body = found["body"]
        start, end = found.start(), found.end()
        plain = markers and found["exponent"] is None and "." not in body
        if plain and (_list_marker(text, start, end) or _citation_marker(text, start, end)):
            continue
        magnitude = abs(float(body.replace(",", "") + (found["exponent"] or "")))
        if not math.isfinite(magnitude):
            continue
        decimals = len(body.partition(".")[2])
        tolerance = 0.5 * 10.0 ** max(min(_exponent(found["exponent"]) - decimals, 300), -300)
        after = _AFTER.match(text, end)
        percent = False
        written_end = end
        if after is not None:
            if after["percent"]:
                percent = True
            else:
                scale = _SCALES[after["word"] or after["letter"]]
                magnitude *= scale
                tolerance *= scale
            written_end = after.end()
        yield Figure(magnitude, tolerance, percent, text[start:written_end].strip(), start)
        count += 1
        if count >= limit:
            return


def _exponent(written: str | None) -> int:
    """An exponent as written (``e-3``), clamped: ``0e99999`` is zero, not an overflow."""
    if not written:
        return 0
    digits = written[1:]
    if len(digits.lstrip("+-")) > 4:
        return -9999 if digits.startswith("-") else 9999
    return int(digits)


def json_numbers(value: JsonValue) -> Iterator[float]:
    """The numbers a JSON value holds: in its numbers, strings and keys (a pivot table's
    ``"2024"``), as figures without their precision (a percent counts as both of its
    values)."""
    return text_numbers(json_text(value))


def text_numbers(text: str) -> Iterator[float]:
    """:func:`json_numbers` of the value whose :func:`~arbiter.scoring.claims.json_text`
    is ``text`` (for a caller that has the text already)."""
    for count, found in enumerate(_MAGNITUDE.finditer(text)):
        if count >= MAX_SOURCE_FIGURES:
            return
        magnitude = abs(float(found["body"].replace(",", "") + (found["exponent"] or "")))
        if not math.isfinite(magnitude):
            continue
        end = found.end()
        following = text[end : end + 1]
        # Only a percent sign, a space or a letter can start what _AFTER reads.
        after = _AFTER.match(text, end) if following and following not in ',."]}:' else None
        if after is None:
            yield magnitude
        elif after["percent"]:
            yield magnitude
            yield magnitude / 100
        else:
            yield magnitude * _SCALES[after["word"] or after["letter"]]


def texts_numbers(texts: Sequence[str]) -> Iterator[float]:
    """:func:`text_numbers` of each text, in order, read as one search when they are short.

    Joined with NUL, which no part of the grammar reads (a number, a percent or a scale
    cannot run past the end of its text), and only below :data:`MAX_SOURCE_FIGURES`
    characters in all, so no text could have reached its cap alone.
    """
    if sum(len(text) for text in texts) + len(texts) < MAX_SOURCE_FIGURES:
        return text_numbers("\x00".join(texts))
    return (number for text in texts for number in text_numbers(text))


class NumberIndex:
    """Source numbers (magnitudes) sorted for lookup.

    Args:
        numbers: The source's numbers (signs are dropped).
    """

    def __init__(self, numbers: Iterable[float] = ()) -> None:
        self._sorted = sorted({abs(n) for n in numbers if math.isfinite(n)})

    def __len__(self) -> int:
        return len(self._sorted)

    def holds(self, figure: Figure) -> bool:
        """Whether some source number lies within the figure's tolerance of it."""
        for value, tolerance in figure.candidates():
            slack = tolerance + 1e-9 * max(abs(value), 1.0)
            at = bisect.bisect_left(self._sorted, value - slack)
            if at < len(self._sorted) and self._sorted[at] <= value + slack:
                return True
        return False
