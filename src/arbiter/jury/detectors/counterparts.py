"""Which context figure an output figure answers to: the same for every lens.

An output figure is backed when the context (or the task) states an equal one after
normalisation, or when it follows from stated figures by one step of arithmetic
(3 x £85 = £255, 312 of 400 = 78%, 14:05 to 14:50 = 45 minutes). Otherwise its
*counterpart* is the context figure of the same kind whose nearby words overlap most
with its own. Only how much overlap is enough, and how much slack a hedged figure
gets, differ between lenses: everything else is worked out once per (task, context,
output) and shared by the three lenses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Literal

from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.quantities import Quantity, same_value
from arbiter.jury.detectors.text import overlap, segment_bounds

__all__ = [
    "ACCOUNTED_DISCOUNT",
    "NAMES",
    "Leads",
    "Status",
    "all_leads",
    "comparable",
    "has_equal",
    "restated",
]

Status = Literal["equal", "derived", "contradicted", "unsupported", "unpaired"]

ACCOUNTED_DISCOUNT = 0.25
"""Weight of a context figure the output already restates correctly: a different output
figure near it is more likely about something else ("40 hours" beside a correct "3 hours")."""
NAMES = ("label", "ordinal", "year")
"""Kinds of figures that name things rather than measure them."""
_COUNTS = ("number", "duration")
_LONE_KINDS = ("money", "percent", "duration", "date", "time")
_ARITHMETIC_LIMIT = 40
_RESTATEMENT = re.compile(
    r"\s*(?:[-*•]\s+)?(?:in\s+short|in\s+summary|to\s+sum\s+up|to\s+summari[sz]e|to\s+confirm"
    r"|to\s+recap|overall|in\s+total|all\s+in\s+all|in\s+other\s+words)\b",
    re.IGNORECASE,
)
_DEFINITE = re.compile(r"\bthe\s+$", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def comparable(a: Quantity, b: Quantity) -> bool:
    """Whether two figures measure the same kind of thing (money: in one currency)."""
    if a.kind != b.kind:
        return False
    return a.unit == b.unit if a.kind in ("money", "label") else True


def has_equal(q: Quantity, source: Analysis, tolerance: float) -> bool:
    """Whether ``source`` states a figure equal to ``q`` (``tolerance``: see same_value)."""
    for c in source.quantities:
        if comparable(q, c) and same_value(q, c, tolerance=tolerance):
            return True
        lenient = q.kind in ("number", *NAMES) and c.kind in ("number", *NAMES)
        if lenient and q.value == c.value:
            return True
    return False


def _derived(q: Quantity, out: Analysis, ctx: Analysis) -> bool:
    """Whether ``q`` follows from other stated figures by one arithmetic step."""
    others = [x for x in (*ctx.quantities, *out.quantities) if x is not q][:_ARITHMETIC_LIMIT]
    # Money may be a rate times hours ("6 hours at £35"); a duration only a count times
    # a duration ("2 hours per door", 3 doors), never a duration times a duration.
    counts = [x.amount for x in others if x.kind in _COUNTS and x.amount >= 2]
    if q.kind == "money":
        money = [x.value for x in others if x.kind == "money" and x.unit == q.unit]
        mine = [x.value for x in out.quantities if x is not q and x.kind == "money"]
        return any(abs(a * n - q.value) < 0.005 for a, n in product(money, counts)) or any(
            abs(a + b - q.value) < 0.005 for a, b in product(mine, mine)
        )
    if q.kind == "percent":
        numbers = [x.value for x in others if x.kind == "number" and x.value > 0]
        return any(
            a < b and q.value in (round(100 * a / b), round(100 * a / b, 1))
            for a, b in product(numbers, numbers)
        )
    if q.kind == "duration":
        minutes = q.value * 1440
        times = [x.value for x in others if x.kind == "time"]
        if any(abs(b - a - minutes) < 0.5 for a, b in product(times, times)):
            return True
        same = [x.amount for x in others if x.kind == "duration" and x.surface == q.surface]
        numbers = [x.amount for x in others if x.kind == "number" and x.amount >= 2]
        return any(abs(a * n - q.amount) < 1e-9 for a, n in product(same, numbers))
    return False


@lru_cache(maxsize=256)
def restated(output: str) -> tuple[tuple[int, int], ...]:
    """Figures that restate an earlier one, mapped to it.

    A figure restates when its sentence opens with "In short", "To confirm" and the
    like, or when a definite article introduces it as known ("the 30-minute outage",
    "over the 5 weeks"). What it restates is the earlier figure of the same kind and
    unit: the only one, or the one sharing most words.

    Returns:
        ``(restating figure, restated figure)`` index pairs.
    """
    out = analyse(output)
    bounds = segment_bounds(output)
    openers = [b for b in bounds if _RESTATEMENT.match(output, b)]
    partners: dict[int, int] = {}
    for j, q in enumerate(out.quantities):
        if q.kind in NAMES:
            continue
        opener = next((b for b in reversed(openers) if b <= q.start), None)
        if opener is not None and any(opener < b <= q.start for b in bounds):
            opener = None  # the opener belongs to an earlier segment
        definite = q.kind in _LONE_KINDS and _DEFINITE.search(output, 0, q.start) is not None
        if opener is None and not definite:
            continue
        limit = opener if opener is not None else q.start
        earlier = [
            i
            for i, e in enumerate(out.quantities)
            if e.end <= limit and comparable(e, q) and e.surface == q.surface
        ]
        if len(earlier) == 1:
            partners[j] = earlier[0]
        elif earlier:
            score, best = max((overlap(out.windows[i], out.windows[j]), i) for i in earlier)
            if score > 0:
                partners[j] = best
    return tuple(partners.items())


@dataclass(frozen=True)
class Leads:
    """What an output figure is judged by, the same for every lens.

    ``figures`` judges the figure by these with the sensitivities of each lens.
    """

    derived: bool
    restated: int | None
    """The first context figure equal to the earlier output figure this one restates."""
    best: int | None
    """The context figure whose words overlap most with the figure's (score > 0)."""
    best_score: float
    lone: int | None
    """The one context figure of the same kind and unit not already restated, if one."""
    fallback: Status
    """``unsupported`` or ``unpaired``, when no counterpart is found."""


def _lead(index: int, out: Analysis, ctx: Analysis, accounted: set[int]) -> Leads:
    """The leads of output figure ``index``; ``accounted``: context figures it restates."""
    q = out.quantities[index]
    candidates = [j for j, c in enumerate(ctx.quantities) if comparable(q, c)]
    backer = None
    partner = dict(restated(out.text)).get(index)
    if partner is not None:
        earlier = out.quantities[partner]
        backing = [j for j in candidates if same_value(earlier, ctx.quantities[j])]
        backer = backing[0] if backing else None
    best, best_score = None, 0.0
    for j in candidates:
        score = overlap(out.windows[index], ctx.windows[j])
        if q.kind == "label":
            score += 1.0
        if j in accounted:
            score *= ACCOUNTED_DISCOUNT
        if score > best_score:
            best, best_score = j, score
    lone = None
    if q.kind in _LONE_KINDS:
        alike = [
            j for j in candidates if ctx.quantities[j].surface == q.surface and j not in accounted
        ]
        lone = alike[0] if len(alike) == 1 else None
    unsupported = q.kind in (*_LONE_KINDS, "year") or (
        q.kind == "number" and _DIGIT.search(q.text) is not None
    )
    return Leads(
        _derived(q, out, ctx),
        backer,
        best,
        best_score,
        lone,
        "unsupported" if unsupported else "unpaired",
    )


@lru_cache(maxsize=256)
def all_leads(output: str, context: str, task: str) -> tuple[Leads | None, ...]:
    """The leads of each output figure; None for one every lens finds equal to a figure
    of the context or the task (cached: the three lenses share them).
    """
    out, ctx, source = analyse(output), analyse(context), analyse(task)
    accounted = {
        j
        for j, c in enumerate(ctx.quantities)
        if any(comparable(o, c) and same_value(o, c) for o in out.quantities)
    }
    # Equal with no tolerance is equal with any (the lenses only differ in tolerance).
    return tuple(
        None
        if has_equal(q, ctx, 0.0) or has_equal(q, source, 0.0)
        else _lead(i, out, ctx, accounted)
        for i, q in enumerate(out.quantities)
    )
