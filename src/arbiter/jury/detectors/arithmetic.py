"""Whether a figure follows from stated figures by one step of arithmetic.

3 x £85 = £255, £120 + £135 = £255, 312 of 400 = 78%, 14:05 to 14:50 = 45 minutes,
2 hours per door x 3 doors = 6 hours. The terms are the first ``ARITHMETIC_LIMIT``
figures of the context then the output (the figure itself left out) and, for a sum of
money, two of the output's money figures (among its first ``MONEY_TERMS`` amounts).
Every product, ratio and difference of the terms is worked out once per (output,
context) and sorted, so a figure is checked by bisection rather than against every pair.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain, islice, product

from arbiter.jury.detectors.analysis import Analysis
from arbiter.jury.detectors.quantities import Quantity

__all__ = ["ARITHMETIC_LIMIT", "MONEY_TERMS", "Arithmetic"]

ARITHMETIC_LIMIT = 40
"""Figures (context first, then output) that products, ratios and differences use."""
MONEY_TERMS = 256
"""Distinct money values of the output whose pairwise sums are tried (the first ones).

A cap for linear time: trying every pair of a long output's money figures for every
money figure is cubic. Outputs have a handful (6 at most over the bundled cases and
SummEdits, 50 distinct amounts in all their outputs together); only an output with over
256 distinct amounts, and a sum involving one past them, is read differently.
"""
_COUNTS = ("number", "duration")


def _near(sorted_values: Sequence[float], target: float, within: float) -> bool:
    """Whether some ``x`` of ``sorted_values`` has ``abs(x - target) < within``.

    The test is monotone in ``x`` on either side of ``target``, so only the nearest value
    on each side can pass it.
    """
    at = bisect_left(sorted_values, target)
    return any(abs(x - target) < within for x in sorted_values[max(0, at - 1) : at + 1])


def _finite_sorted(values: Iterable[float]) -> list[float]:
    return sorted(x for x in set(values) if math.isfinite(x))


def _derived_among(q: Quantity, others: Sequence[Quantity]) -> bool:
    """Whether ``q`` is a product, ratio or difference of ``others`` (checked pairwise)."""
    counts = [x.amount for x in others if x.kind in _COUNTS and x.amount >= 2]
    if q.kind == "money":
        money = [x.value for x in others if x.kind == "money" and x.unit == q.unit]
        return any(abs(a * n - q.value) < 0.005 for a, n in product(money, counts))
    if q.kind == "percent":
        numbers = [x.value for x in others if x.kind == "number" and x.value > 0]
        return q.value in _ratios(numbers)
    if q.kind == "duration":
        minutes = q.value * 1440
        times = [x.value for x in others if x.kind == "time"]
        if any(abs(b - a - minutes) < 0.5 for a, b in product(times, times)):
            return True
        same = [x.amount for x in others if x.kind == "duration" and x.surface == q.surface]
        numbers = [x.amount for x in others if x.kind == "number" and x.amount >= 2]
        return any(abs(a * n - q.amount) < 1e-9 for a, n in product(same, numbers))
    return False


def _ratios(numbers: Sequence[float]) -> set[float]:
    """Every percentage one number makes of a larger one, whole and to one decimal."""
    found: set[float] = set()
    for a, b in product(numbers, numbers):
        if a < b:
            ratio = 100 * a / b
            if math.isfinite(ratio):  # an overflowing ratio is no percentage
                found.update((round(ratio), round(ratio, 1)))
    return found


class _Steps:
    """``_derived_among`` for one list of terms, worked out for every figure at once.

    Each kind's products, ratios or differences are worked out when first asked for.
    """

    def __init__(self, others: Sequence[Quantity]) -> None:
        self.others = others
        self._products: dict[str, list[float]] = {}
        self._ratios: set[float] | None = None
        self._gaps: list[float] | None = None
        self._multiples: dict[str, list[float]] = {}

    def derived(self, q: Quantity) -> bool:
        others = self.others
        if q.kind == "money":
            if q.unit not in self._products:
                counts = [x.amount for x in others if x.kind in _COUNTS and x.amount >= 2]
                money = [x.value for x in others if x.kind == "money" and x.unit == q.unit]
                self._products[q.unit] = _finite_sorted(a * n for a, n in product(money, counts))
            return _near(self._products[q.unit], q.value, 0.005)
        if q.kind == "percent":
            if self._ratios is None:
                self._ratios = _ratios(
                    [x.value for x in others if x.kind == "number" and x.value > 0]
                )
            return q.value in self._ratios
        if q.kind == "duration":
            if self._gaps is None:
                times = [x.value for x in others if x.kind == "time"]
                self._gaps = _finite_sorted(b - a for a, b in product(times, times))
            if _near(self._gaps, q.value * 1440, 0.5):
                return True
            if q.surface not in self._multiples:
                same = [x.amount for x in others if x.kind == "duration" and x.surface == q.surface]
                numbers = [x.amount for x in others if x.kind == "number" and x.amount >= 2]
                self._multiples[q.surface] = _finite_sorted(
                    a * n for a, n in product(same, numbers)
                )
            return _near(self._multiples[q.surface], q.amount, 1e-9)
        return False


class _MoneySums:
    """Sums of two of the output's money values (one may be taken twice).

    The values are the first ``MONEY_TERMS`` distinct ones, in order of appearance.
    """

    def __init__(self, out: Analysis) -> None:
        self.counts = Counter(x.value for x in out.quantities if x.kind == "money")
        values = sorted(list(self.counts)[:MONEY_TERMS])
        pairs = [(a + b, a, b) for i, a in enumerate(values) for b in values[i:]]
        self.pairs = sorted(p for p in pairs if math.isfinite(p[0]))
        self.sums = [s for s, _, _ in self.pairs]

    def has_sum(self, q: Quantity) -> bool:
        """Whether two output money figures other than ``q`` add up to it (to half a cent)."""
        v = q.value
        if not math.isfinite(v):
            return False
        # Without q, its value is a term only if another figure has it too.
        missing = v if self.counts[v] == 1 else None
        lo = bisect_left(self.sums, v - 0.006)
        hi = bisect_right(self.sums, v + 0.006)
        return any(
            abs(a + b - v) < 0.005 and missing not in (a, b) for _, a, b in self.pairs[lo:hi]
        )


class Arithmetic:
    """Whether output figures follow from the figures of the output and its context."""

    def __init__(self, out: Analysis, ctx: Analysis) -> None:
        self._out, self._ctx = out, ctx
        head = list(islice(chain(ctx.quantities, out.quantities), ARITHMETIC_LIMIT + 1))
        self._head = {id(x) for x in head}
        self._steps = _Steps(head[:ARITHMETIC_LIMIT])
        self._sums: _MoneySums | None = None

    def derived(self, q: Quantity) -> bool:
        """Whether output figure ``q`` follows from other stated figures by one step."""
        if id(q) in self._head:  # q is one of the terms: the others are other terms
            terms = (x for x in chain(self._ctx.quantities, self._out.quantities) if x is not q)
            if _derived_among(q, list(islice(terms, ARITHMETIC_LIMIT))):
                return True
        elif self._steps.derived(q):
            return True
        if q.kind != "money":
            return False
        if self._sums is None:
            self._sums = _MoneySums(self._out)
        return self._sums.has_sum(q)
