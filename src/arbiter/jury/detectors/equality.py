"""Which figures of a text equal a given one: ``same_value`` looked up, not scanned.

Figures are comparable when they measure the same kind of thing (money: in one
currency), so a text's figures are kept in buckets by kind (and currency or label),
each bucket's values sorted: the figures equal to one lie in a narrow band of values,
found by bisection and then checked with ``same_value`` itself. Dates are looked up by
month, year and day. Built once per text and cached; a small bucket is just scanned.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from arbiter.jury.detectors.analysis import analyse
from arbiter.jury.detectors.overlaps import SCAN_LIMIT
from arbiter.jury.detectors.quantities import UNIT_TOLERANCE, Quantity, same_value

__all__ = ["NAMES", "BucketKey", "FigureIndex", "bucket_key", "comparable", "figure_index"]

NAMES = ("label", "ordinal", "year")
"""Kinds of figures that name things rather than measure them."""
_LENIENT = ("number", *NAMES)
"""Kinds whose figures are equal by bare value, whatever their kind among these."""

BucketKey = tuple[str, str]
"""A figure's kind, and its currency or label word where comparing needs them equal."""


def bucket_key(q: Quantity) -> BucketKey:
    """Equal for two figures exactly when they are ``comparable``."""
    return (q.kind, q.unit if q.kind in ("money", "label") else "")


def comparable(a: Quantity, b: Quantity) -> bool:
    """Whether two figures measure the same kind of thing (money: in one currency)."""
    if a.kind != b.kind:
        return False
    return a.unit == b.unit if a.kind in ("money", "label") else True


def _first(members: Sequence[int], exclude: int) -> int | None:
    """The first of the ascending ``members`` other than ``exclude``."""
    for index in members[:2]:
        if index != exclude:
            return index
    return None


@dataclass
class _Values:
    """The figures of one bucket with one hedging: distinct values, sorted."""

    values: list[float] = field(default_factory=list)
    """The distinct finite values, ascending."""
    members: list[list[int]] = field(default_factory=list)
    """The indices of the figures with ``values[k]``, ascending."""
    reps: list[Quantity] = field(default_factory=list)
    """A figure with ``values[k]``: all of them compare alike."""
    unbounded: list[int] = field(default_factory=list)
    """The indices of the figures whose value is not finite (a 400-digit number)."""
    unbounded_rep: Quantity | None = None
    finite_first: list[int] = field(default_factory=list)
    """The two lowest indices of a finite value."""


def _build_values(pairs: list[tuple[float, int, Quantity]]) -> _Values:
    built = _Values()
    finite: list[int] = []
    for value, index, q in sorted(pairs, key=lambda p: (p[0], p[1])):
        if not math.isfinite(value):
            built.unbounded.append(index)
            built.unbounded_rep = built.unbounded_rep or q
        elif built.values and built.values[-1] == value:
            built.members[-1].append(index)
        else:
            built.values.append(value)
            built.members.append([index])
            built.reps.append(q)
        if math.isfinite(value):
            finite.append(index)
    built.unbounded.sort()
    built.finite_first = sorted(finite)[:2]
    return built


def _candidates(
    values: _Values, q: Quantity, slack: float
) -> Iterator[tuple[Quantity, Sequence[int]]]:
    """``(representative, member indices)`` of every value that may equal ``q``'s.

    A superset: the caller checks each representative with ``same_value``. ``slack`` is
    the relative slack ``same_value`` allows between ``q`` and these figures.
    """
    v = q.value
    if values.unbounded_rep is not None:
        yield values.unbounded_rep, values.unbounded
    if not values.reps:
        return
    if math.isinf(v):
        # |inf - c| <= slack * inf holds for every finite c when slack > 0, else for none.
        yield values.reps[0], values.finite_first
        return
    if not (math.isfinite(v) and 0.0 <= slack < 0.5):
        yield from zip(values.reps, values.members, strict=True)
        return
    # |v - c| <= slack * max(|v|, |c|) + 1e-9 implies |v - c| <= (slack |v| + 1e-9) / (1 - slack).
    reach = (slack * abs(v) + 1e-9) / (1.0 - slack) + 1e-12 * (abs(v) + 1.0)
    lo = bisect_left(values.values, v - reach)
    hi = bisect_right(values.values, v + reach)
    yield from zip(values.reps[lo:hi], values.members[lo:hi], strict=True)


@dataclass
class _Dates:
    """The dates of a text by month, then by (year, day), day, year; 0 is unknown."""

    by_year_day: dict[tuple[int, int, int], list[int]] = field(default_factory=dict)
    by_day: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    by_year: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    by_month: dict[int, list[int]] = field(default_factory=dict)

    def add(self, value: float, index: int) -> None:
        y, m, d = _date_parts(value)
        self.by_year_day.setdefault((m, y, d), []).append(index)
        self.by_day.setdefault((m, d), []).append(index)
        self.by_year.setdefault((m, y), []).append(index)
        self.by_month.setdefault(m, []).append(index)

    def equal(self, value: float) -> list[Sequence[int]]:
        """The member lists of the dates ``_same_date`` finds equal to ``value``."""
        y, m, d = _date_parts(value)
        if y and d:
            keys = [(m, y, d), (m, 0, d), (m, y, 0), (m, 0, 0)]
            return [self.by_year_day[k] for k in keys if k in self.by_year_day]
        if d:
            return [self.by_day[k] for k in ((m, d), (m, 0)) if k in self.by_day]
        if y:
            return [self.by_year[k] for k in ((m, y), (m, 0)) if k in self.by_year]
        return [self.by_month[m]] if m in self.by_month else []


def _date_parts(value: float) -> tuple[int, int, int]:
    """Year, month and day of a date's value, as ``quantities._same_date`` reads them."""
    a = int(value)
    return a // 10000, a // 100 % 100, a % 100


class FigureIndex:
    """The figures of one text, for finding those equal to a figure.

    Args:
        quantities: The text's figures, in order.
    """

    def __init__(self, quantities: Sequence[Quantity]) -> None:
        self.quantities = tuple(quantities)
        buckets: dict[BucketKey, list[int]] = {}
        for index, q in enumerate(self.quantities):
            buckets.setdefault(bucket_key(q), []).append(index)
        self._buckets = {key: tuple(members) for key, members in buckets.items()}
        self._named = frozenset(q.value for q in self.quantities if q.kind in _LENIENT)
        # Sorted values (and dates by parts) of the buckets too big to scan, when asked.
        self._values: dict[tuple[BucketKey, bool], _Values] = {}
        self._dates: dict[BucketKey, _Dates] = {}

    def bucket(self, key: BucketKey) -> tuple[int, ...]:
        """The indices of the figures with ``key``, in order."""
        return self._buckets.get(key, ())

    def _equal(self, q: Quantity, tolerance: float) -> Iterator[Sequence[int]]:
        """The member lists of the values that ``same_value`` finds equal to ``q``'s."""
        key = bucket_key(q)
        members = self._buckets.get(key, ())
        if len(members) <= SCAN_LIMIT:
            for index in members:
                if same_value(q, self.quantities[index], tolerance=tolerance):
                    yield (index,)
            return
        if q.kind == "date":
            yield from self._dates_of(key, members).equal(q.value)
            return
        for hedged in (False, True):
            values = self._values_of(key, hedged, members)
            slack = tolerance if (q.hedged or hedged) else 0.0
            if q.kind == "duration":
                slack = max(slack, UNIT_TOLERANCE)
            for rep, alike in _candidates(values, q, slack):
                if same_value(q, rep, tolerance=tolerance):
                    yield alike

    def _dates_of(self, key: BucketKey, members: Sequence[int]) -> _Dates:
        if key not in self._dates:
            dates = self._dates[key] = _Dates()
            for index in members:
                dates.add(self.quantities[index].value, index)
        return self._dates[key]

    def _values_of(self, key: BucketKey, hedged: bool, members: Sequence[int]) -> _Values:
        if (key, hedged) not in self._values:
            quantities = self.quantities
            self._values[(key, hedged)] = _build_values(
                [
                    (quantities[i].value, i, quantities[i])
                    for i in members
                    if quantities[i].hedged == hedged
                ]
            )
        return self._values[(key, hedged)]

    def any_equal(self, q: Quantity, tolerance: float) -> bool:
        """Whether a comparable figure has the same value (``same_value``)."""
        return next(self._equal(q, tolerance), None) is not None

    def first_equal(self, q: Quantity, tolerance: float = 0.0, exclude: int = -1) -> int | None:
        """The first comparable figure with the same value, other than ``exclude``."""
        firsts = [_first(members, exclude) for members in self._equal(q, tolerance)]
        return min((i for i in firsts if i is not None), default=None)

    def any_named(self, q: Quantity) -> bool:
        """Whether a number, label, ordinal or year has ``q``'s bare value (``q`` one too)."""
        return q.kind in _LENIENT and q.value in self._named


@lru_cache(maxsize=256)
def figure_index(text: str) -> FigureIndex:
    """The ``FigureIndex`` of the figures of ``text`` (cached: every lens asks)."""
    return FigureIndex(analyse(text).quantities)
