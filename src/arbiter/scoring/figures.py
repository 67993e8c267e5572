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
An ordered-list marker at the start of a line (``1.``, ``2)``) is not a figure.

A :class:`NumberIndex` holds the source numbers sorted, so each figure is looked up by
bisection: checking an answer costs its figures times the log of the source's.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import JsonValue

# The numeric scorer's grammar of a written number, so both read numbers alike.
from arbiter.scoring.numeric import _NUMBER

__all__ = ["Figure", "NumberIndex", "figures_in", "json_numbers"]

MAX_FIGURES = 10_000
"""Figures of one text read."""
_MAX_JSON_NODES = 200_000
"""JSON nodes of one value read for numbers."""

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


def figures_in(text: str, *, limit: int = MAX_FIGURES) -> Iterator[Figure]:
    """The figures of ``text``, in order (at most ``limit``).

    Examples:
        >>> [(f.value, f.tolerance, f.percent) for f in figures_in("Up 12.5% to $1.2 million")]
        [(12.5, 0.05, True), (1200000.0, 50000.0, False)]
    """
    count = 0
    for found in _NUMBER.finditer(text):
        body = found["body"]
        start, end = found.start(), found.end()
        if found["exponent"] is None and "." not in body and _list_marker(text, start, end):
            continue
        try:
            magnitude = abs(float(body.replace(",", "") + (found["exponent"] or "")))
        except OverflowError:  # pragma: no cover - float() returns inf, never raises here
            continue
        if not math.isfinite(magnitude):
            continue
        decimals = len(body.partition(".")[2])
        exponent = int(found["exponent"][1:]) if found["exponent"] else 0
        tolerance = 0.5 * 10.0 ** (exponent - decimals)
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


def json_numbers(value: JsonValue, *, limit: int = _MAX_JSON_NODES) -> Iterator[float]:
    """The numbers a JSON value holds: its numbers, and the figures of its strings."""
    stack: list[JsonValue] = [value]
    seen = 0
    while stack and seen < limit:
        node = stack.pop()
        seen += 1
        if isinstance(node, bool) or node is None:
            continue
        if isinstance(node, int | float):
            try:
                number = abs(float(node))
            except OverflowError:  # an integer too large for a float
                continue
            if math.isfinite(number):
                yield number
        elif isinstance(node, str):
            yield from _text_numbers(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        else:
            stack.extend(node)


def _text_numbers(text: str) -> Iterator[float]:
    for figure in figures_in(text):
        yield figure.value
        if figure.percent:
            yield figure.value / 100


class NumberIndex:
    """Source numbers (magnitudes) sorted for lookup.

    Args:
        numbers: The source's numbers (signs are dropped).
    """

    def __init__(self, numbers: Iterable[float] = ()) -> None:
        self._sorted = sorted({abs(n) for n in numbers if math.isfinite(n)})

    def __len__(self) -> int:
        return len(self._sorted)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> NumberIndex:
        """The numbers written in some texts (a percent counts as both of its values)."""
        return cls(n for text in texts for n in _text_numbers(text))

    def merged(self, other: NumberIndex) -> NumberIndex:
        """The numbers of both indexes."""
        return NumberIndex([*self._sorted, *other._sorted])

    def holds(self, figure: Figure) -> bool:
        """Whether some source number lies within the figure's tolerance of it."""
        for value, tolerance in figure.candidates():
            slack = tolerance + 1e-9 * max(abs(value), 1.0)
            at = bisect.bisect_left(self._sorted, value - slack)
            if at < len(self._sorted) and self._sorted[at] <= value + slack:
                return True
        return False
