"""Which context figure an output figure answers to: the same for every lens.

An output figure is backed when the context (or the task) states an equal one after
normalisation, or when it follows from stated figures by one step of arithmetic
(3 x £85 = £255, 312 of 400 = 78%, 14:05 to 14:50 = 45 minutes). Otherwise its
*counterpart* is the context figure of the same kind whose nearby words overlap most
with its own. Only how much overlap is enough, and how much slack a hedged figure
gets, differ between lenses: everything else is worked out once per (task, context,
output) and shared by the three lenses.

Equal figures are looked up (``equality``), and the figures sharing words with one are
found through their words (``overlaps``): the work per figure does not grow with the
length of the texts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.arithmetic import Arithmetic
from arbiter.jury.detectors.equality import (
    NAMES,
    BucketKey,
    bucket_key,
    comparable,
    figure_index,
)
from arbiter.jury.detectors.overlaps import SCAN_LIMIT, WindowGroups, WindowKey, window_key
from arbiter.jury.detectors.quantities import Quantity
from arbiter.jury.detectors.text import Window, overlap, segment_bounds

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
_LONE_KINDS = ("money", "percent", "duration", "date", "time")
_RESTATEMENT = re.compile(
    r"\s*(?:[-*•]\s+)?(?:in\s+short|in\s+summary|to\s+sum\s+up|to\s+summari[sz]e|to\s+confirm"
    r"|to\s+recap|overall|in\s+total|all\s+in\s+all|in\s+other\s+words)\b",
    re.IGNORECASE,
)
_DEFINITE = re.compile(r"\bthe\s+$", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def has_equal(q: Quantity, source: Analysis, tolerance: float) -> bool:
    """Whether ``source`` states a figure equal to ``q`` (``tolerance``: see same_value)."""
    index = figure_index(source.text)
    return index.any_equal(q, tolerance) or index.any_named(q)


# --------------------------------------------------------------------------- restated


def _openers(text: str, bounds: tuple[int, ...]) -> frozenset[int]:
    """The segment bounds where a restatement ("In short", "To confirm") opens."""
    found: set[int] = set()
    opens: dict[int, bool] = {}
    solid = -1  # the first non-space at or after the last bound read
    for bound in bounds:
        if solid < bound:
            solid = bound
            while solid < len(text) and text[solid].isspace():
                solid += 1
        # The pattern skips the spaces it opens with: it matches at the bound exactly
        # when it matches at the first non-space (read once for a run of line breaks).
        if solid not in opens:
            opens[solid] = _RESTATEMENT.match(text, solid) is not None
        if opens[solid]:
            found.add(bound)
    return frozenset(found)


def _definite(text: str, start: int) -> bool:
    """Whether ``text[:start]`` ends with "the" and spaces (``_DEFINITE``), looked back."""
    solid = start
    while solid > 0 and text[solid - 1].isspace():
        solid -= 1
    return solid < start and _DEFINITE.search(text, max(0, solid - 3), start) is not None


@dataclass
class _Earlier:
    """The output figures of one kind, unit and written unit, for finding earlier ones."""

    members: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    groups: WindowGroups | None = None
    """The figures grouped by window, once there are too many to scan."""
    group_ends: list[list[int]] = field(default_factory=list)

    def add(self, index: int, end: int, window: Window) -> None:
        self.members.append(index)
        self.ends.append(end)
        self.windows.append(window)

    def restated(self, window: Window, limit: int) -> int | None:
        """The figure ending by ``limit`` that a figure with ``window`` restates, if one.

        The only one; else the one sharing most words (the latest among equals).
        """
        count = bisect_right(self.ends, limit)
        if count <= 1:
            return self.members[0] if count else None
        if count <= SCAN_LIMIT:
            score, best = max(
                (overlap(self.windows[k], window), self.members[k]) for k in range(count)
            )
            return best if score > 0 else None
        groups = self._grouped()
        found: tuple[float, int] | None = None
        for number in groups.candidates(window):
            latest = bisect_right(self.group_ends[number], limit)
            if latest:
                candidate = (
                    overlap(groups.windows[number], window),
                    groups.members[number][latest - 1],
                )
                found = candidate if found is None else max(found, candidate)
        return found[1] if found is not None and found[0] > 0 else None

    def _grouped(self) -> WindowGroups:
        if self.groups is None:
            self.groups = WindowGroups()
            for index, end, window in zip(self.members, self.ends, self.windows, strict=True):
                number = self.groups.add(window_key(window), index, window)
                if number == len(self.group_ends):
                    self.group_ends.append([])
                self.group_ends[number].append(end)
            self.groups.seal()
        return self.groups


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
    openers = _openers(output, bounds)
    limits: dict[int, int] = {}
    """Each restating figure, with the offset the figures it restates end by."""
    for j, q in enumerate(out.quantities):
        if q.kind in NAMES:
            continue
        # An opener counts in its own segment only.
        first = bounds[bisect_right(bounds, q.start) - 1]
        if first in openers:
            limits[j] = first
        elif q.kind in _LONE_KINDS and _definite(output, q.start):
            limits[j] = q.start
    if not limits:
        return ()
    earlier: dict[tuple[BucketKey, str], _Earlier] = {}
    for i, e in enumerate(out.quantities):
        earlier.setdefault((bucket_key(e), e.surface), _Earlier()).add(i, e.end, out.windows[i])
    partners: dict[int, int] = {}
    for j, limit in limits.items():
        q = out.quantities[j]
        partner = earlier[(bucket_key(q), q.surface)].restated(out.windows[j], limit)
        if partner is not None:
            partners[j] = partner
    return tuple(partners.items())


# --------------------------------------------------------------------------- leads


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


class _Counterparts:
    """The context figures an output figure may answer to, indexed once per text pair.

    Context figures the output already restates correctly are *accounted*.
    """

    def __init__(self, out: Analysis, ctx: Analysis) -> None:
        self.out, self.ctx = out, ctx
        self.index = figure_index(ctx.text)
        mine = figure_index(out.text)
        self.accounted = frozenset(
            j for j, c in enumerate(ctx.quantities) if mine.any_equal(c, 0.0)
        )
        self.partners = dict(restated(out.text))
        self.arithmetic = Arithmetic(out, ctx)
        self.groups: dict[BucketKey, WindowGroups] = {}
        """The context figures of a bucket too big to scan, by window (as asked)."""
        self.firsts: dict[tuple[BucketKey, bool], int] = {}
        """The first context figure of a bucket, accounted or not."""
        self.alike: dict[tuple[BucketKey, str], list[int]] = {}
        """The context figures of a bucket and written unit, not accounted (two at most)."""
        for j, c in enumerate(ctx.quantities):
            key, accounted = bucket_key(c), j in self.accounted
            self.firsts.setdefault((key, accounted), j)
            if not accounted:
                alike = self.alike.setdefault((key, c.surface), [])
                if len(alike) < 2:
                    alike.append(j)
        self._best: dict[tuple[BucketKey, WindowKey], tuple[int | None, float]] = {}

    def best(self, q: Quantity, window: Window) -> tuple[int | None, float]:
        """The context figure sharing most words with ``q`` (the first among equals)."""
        key = bucket_key(q)
        members = self.index.bucket(key)
        if len(members) <= SCAN_LIMIT:
            return self._first_best(q, members, window)
        memo = (key, window_key(window))
        if memo not in self._best:
            groups = self._grouped(key, members)
            # Figures sharing no word score 0, or for a label 1 (a quarter if accounted):
            # the first one of each kind stands for all the others, the rest can only tie.
            found = {groups.members[number][0] for number in groups.candidates(window)}
            if q.kind == "label":
                found.update(
                    self.firsts[k] for k in ((key, False), (key, True)) if k in self.firsts
                )
            self._best[memo] = self._first_best(q, sorted(found), window)
        return self._best[memo]

    def _grouped(self, key: BucketKey, members: Sequence[int]) -> WindowGroups:
        if key not in self.groups:
            groups = self.groups[key] = WindowGroups()
            for j in members:
                window = self.ctx.windows[j]
                groups.add((window_key(window), j in self.accounted), j, window)
            groups.seal()
        return self.groups[key]

    def _first_best(
        self, q: Quantity, candidates: Sequence[int], window: Window
    ) -> tuple[int | None, float]:
        """The first of ``candidates`` (ascending) with the best score above 0."""
        best, best_score = None, 0.0
        for j in candidates:
            score = overlap(window, self.ctx.windows[j])
            if q.kind == "label":
                score += 1.0
            if j in self.accounted:
                score *= ACCOUNTED_DISCOUNT
            if score > best_score:
                best, best_score = j, score
        return best, best_score

    def lead(self, index: int) -> Leads:
        """The leads of output figure ``index``."""
        q = self.out.quantities[index]
        backer = None
        partner = self.partners.get(index)
        if partner is not None:
            backer = self.index.first_equal(self.out.quantities[partner])
        best, best_score = self.best(q, self.out.windows[index])
        lone = None
        if q.kind in _LONE_KINDS:
            alike = self.alike.get((bucket_key(q), q.surface), [])
            lone = alike[0] if len(alike) == 1 else None
        unsupported = q.kind in (*_LONE_KINDS, "year") or (
            q.kind == "number" and _DIGIT.search(q.text) is not None
        )
        return Leads(
            self.arithmetic.derived(q),
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
    out, ctx = analyse(output), analyse(context)
    sources = (figure_index(context), figure_index(task))
    counterparts: _Counterparts | None = None
    leads: list[Leads | None] = []
    for i, q in enumerate(out.quantities):
        # Equal with no tolerance is equal with any (the lenses only differ in tolerance).
        if any(s.any_equal(q, 0.0) or s.any_named(q) for s in sources):
            leads.append(None)
            continue
        if counterparts is None:
            counterparts = _Counterparts(out, ctx)
        leads.append(counterparts.lead(i))
    return tuple(leads)
