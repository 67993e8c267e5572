"""Figures compared with the context, and with the output's own other figures.

An output figure is backed when the context (or the task) states an equal one after
normalisation, or when it follows from stated figures by one step of arithmetic
(3 x £85 = £255, 312 of 400 = 78%, 14:05 to 14:50 = 45 minutes). Otherwise its
*counterpart* is the context figure of the same kind whose nearby words overlap most
with its own: a counterpart with another value is a contradiction, no counterpart makes
the figure unsupported.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Literal

from arbiter.contract import Callout
from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.quantities import Quantity, same_value
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import overlap, segment_bounds

__all__ = ["contradicted_figures", "inconsistent_figures"]

Status = Literal["equal", "derived", "contradicted", "unsupported", "unpaired"]

ACCOUNTED_DISCOUNT = 0.25
"""Weight of a context figure the output already restates correctly: a different output
figure near it is more likely about something else ("40 hours" beside a correct "3 hours")."""
SAME_UNIT_BONUS = 0.25
"""Added when two output figures share their written unit (both "minutes", both "%")."""
_NAMES = ("label", "ordinal", "year")
_COUNTS = ("number", "duration")
_LONE_KINDS = ("money", "percent", "duration", "date", "time")
_UNBACKED = ("unsupported", "unpaired", "derived")
_ARITHMETIC_LIMIT = 40
_RESTATEMENT = re.compile(
    r"\s*(?:[-*•]\s+)?(?:in\s+short|in\s+summary|to\s+sum\s+up|to\s+summari[sz]e|to\s+confirm"
    r"|to\s+recap|overall|in\s+total|all\s+in\s+all|in\s+other\s+words)\b",
    re.IGNORECASE,
)
_DEFINITE = re.compile(r"\bthe\s+$", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_PROPOSAL = re.compile(
    r"\b(?:propose|suggest|recommend|plan|design|brainstorm|estimate|invent|imagine)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Judgement:
    status: Status
    counterpart: int | None = None


@dataclass(frozen=True)
class _Reading:
    out: Analysis
    ctx: Analysis
    judgements: tuple[_Judgement, ...]


def _comparable(a: Quantity, b: Quantity) -> bool:
    if a.kind != b.kind:
        return False
    return a.unit == b.unit if a.kind in ("money", "label") else True


def _has_equal(q: Quantity, source: Analysis, tolerance: float) -> bool:
    for c in source.quantities:
        if _comparable(q, c) and same_value(q, c, tolerance=tolerance):
            return True
        lenient = q.kind in ("number", *_NAMES) and c.kind in ("number", *_NAMES)
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
def _restated(output: str) -> tuple[tuple[int, int], ...]:
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
        if q.kind in _NAMES:
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
            if e.end <= limit and _comparable(e, q) and e.surface == q.surface
        ]
        if len(earlier) == 1:
            partners[j] = earlier[0]
        elif earlier:
            score, best = max((overlap(out.windows[i], out.windows[j]), i) for i in earlier)
            if score > 0:
                partners[j] = best
    return tuple(partners.items())


def _judge(
    index: int,
    out: Analysis,
    sources: tuple[Analysis, Analysis],
    accounted: set[int],
    settings: DetectorSettings,
) -> _Judgement:
    ctx, task = sources
    q = out.quantities[index]
    if _has_equal(q, ctx, settings.hedge_tolerance) or _has_equal(q, task, 0.0):
        return _Judgement("equal")
    if _derived(q, out, ctx):
        return _Judgement("derived")
    candidates = [j for j, c in enumerate(ctx.quantities) if _comparable(q, c)]
    partner = dict(_restated(out.text)).get(index) if settings.restatements else None
    if partner is not None:
        restated = out.quantities[partner]
        backing = [j for j in candidates if same_value(restated, ctx.quantities[j])]
        if backing:
            return _Judgement("contradicted", backing[0])
    best, best_score = None, 0.0
    for j in candidates:
        score = overlap(out.windows[index], ctx.windows[j])
        if q.kind == "label":
            score += 1.0
        if j in accounted:
            score *= ACCOUNTED_DISCOUNT
        if score > best_score:
            best, best_score = j, score
    if best is not None and best_score >= settings.figure_match:
        return _Judgement("contradicted", best)
    if settings.lone_counterpart and q.kind in _LONE_KINDS:
        alike = [
            j for j in candidates if ctx.quantities[j].surface == q.surface and j not in accounted
        ]
        if len(alike) == 1:
            return _Judgement("contradicted", alike[0])
    if q.kind in (*_LONE_KINDS, "year") or (q.kind == "number" and _DIGIT.search(q.text)):
        return _Judgement("unsupported")
    return _Judgement("unpaired")


@lru_cache(maxsize=256)
def _read(output: str, context: str, task: str, settings: DetectorSettings) -> _Reading:
    """The output's figures judged against the context (cached: two detectors ask)."""
    out, ctx = analyse(output), analyse(context)
    return _Reading(out, ctx, tuple(_judgements(out, ctx, analyse(task), settings)))


def _unpack(reading: _Reading) -> tuple[Analysis, Analysis, tuple[_Judgement, ...]]:
    return reading.out, reading.ctx, reading.judgements


def _judgements(
    out: Analysis, ctx: Analysis, task: Analysis, settings: DetectorSettings
) -> list[_Judgement]:
    accounted = {
        j
        for j, c in enumerate(ctx.quantities)
        if any(_comparable(o, c) and same_value(o, c) for o in out.quantities)
    }
    return [_judge(i, out, (ctx, task), accounted, settings) for i in range(len(out.quantities))]


def _as_written(analysis: Analysis, q: Quantity) -> str:
    """The figure as written, with the noun it counts when it is a bare number."""
    if q.kind != "number":
        return analysis.text[q.start : q.end]
    tokens = analysis.tokens
    after = bisect_left(tokens.starts, q.end)
    if after < len(tokens) and tokens.stems[after] and tokens.starts[after] - q.end <= 1:
        return analysis.text[q.start : tokens.ends[after]]
    return analysis.text[q.start : q.end]


def contradicted_figures(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Output figures that differ from their context counterpart, or have none.

    Args:
        task: What the output was asked to do; its figures count as backed.
        context: The source.
        output: The output under judgement.
        settings: The lens's sensitivities.

    Returns:
        ``accuracy`` callouts: ``contradicted`` with the context figure as rival, or
        ``unsupported`` (only when ``settings.unsupported_figures``, and never when the
        task asks to propose, plan or estimate: new figures are then the answer).

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.rival for c in contradicted_figures(
        ...     "", "Enrolled 240 participants across 6 sites.",
        ...     "Enrolled 240 participants across 8 sites.", DetectorSettings())]
        ['6 sites']
    """
    out, ctx, judgements = _unpack(_read(output, context, task, settings))
    callouts: list[Callout] = []
    # When the task asks for a proposal, the output's new figures are the proposal.
    unsupported = settings.unsupported_figures and not _PROPOSAL.search(task)
    for q, judgement in zip(out.quantities, judgements, strict=True):
        quote = out.clause(q.start, q.end)
        if judgement.status == "contradicted" and judgement.counterpart is not None:
            rival = _as_written(ctx, ctx.quantities[judgement.counterpart])
            callouts.append(
                Callout(
                    dimension="accuracy",
                    kind="contradicted",
                    claim=f"The output says {q.text}, the context says {rival}.",
                    quote=quote,
                    rival=rival,
                )
            )
        elif judgement.status == "unsupported" and unsupported:
            callouts.append(
                Callout(
                    dimension="accuracy",
                    kind="unsupported",
                    claim=f"The output states {q.text}, a figure the context does not give.",
                    quote=quote,
                )
            )
    return callouts


def _clashes(
    out: Analysis, ctx: Analysis, judgements: Sequence[_Judgement], settings: DetectorSettings
) -> dict[int, int]:
    """Each suspect output figure mapped to the output figure it clashes with."""
    found: dict[int, tuple[float, int]] = {}

    def keep(suspect: int, partner: int, score: float) -> None:
        if score > found.get(suspect, (-1.0, -1))[0]:
            found[suspect] = (score, partner)

    quantities = out.quantities
    status = [j.status for j in judgements]
    for j, b in enumerate(quantities):
        for i in range(j):
            a = quantities[i]
            # Only figures the context says nothing about can clash by their words alone;
            # a figure with a context counterpart is judged against the counterpart.
            if status[i] not in _UNBACKED or status[j] not in _UNBACKED:
                continue
            if status[i] == status[j] == "derived" or a.kind in _NAMES:
                continue
            if not _comparable(a, b) or same_value(a, b, tolerance=settings.hedge_tolerance):
                continue
            score = overlap(out.windows[i], out.windows[j])
            if a.surface and a.surface == b.surface:
                score += SAME_UNIT_BONUS
            if score >= settings.inconsistency_match:
                suspect, partner = (i, j) if status[j] == "derived" else (j, i)
                keep(suspect, partner, score)
    if settings.restatements:
        for j, i in _restated(out.text):
            backed = status[j] in ("equal", "derived")
            if not backed and not same_value(
                quantities[i], quantities[j], tolerance=settings.hedge_tolerance
            ):
                keep(j, i, float("inf"))
    # Two output figures for one context figure: one restates it, the other does not.
    for j, judgement in enumerate(judgements):
        if judgement.status != "contradicted" or judgement.counterpart is None:
            continue
        anchor = ctx.quantities[judgement.counterpart]
        for i, a in enumerate(quantities):
            if i != j and _comparable(a, anchor) and same_value(a, anchor):
                keep(j, i, settings.inconsistency_match)
    return {suspect: partner for suspect, (_, partner) in found.items()}


def inconsistent_figures(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """One quantity stated twice in the output with different values.

    Two output figures clash when the context backs neither and their nearby words
    overlap enough; when a sentence opening "In short" or "To confirm" restates an
    earlier figure differently; or when both answer the same context figure, one equal
    to it and one not. The suspect is the later or the unbacked one.

    Args:
        task: What the output was asked to do; its figures count as backed.
        context: The source (to tell backed figures from unbacked ones).
        output: The output under judgement.
        settings: The lens's sensitivities.

    Returns:
        ``consistency``/``contradicted`` callouts whose rival is the other statement.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in inconsistent_figures("", "", "A total of £465. "
        ...     "To confirm, the total comes to £495.", DetectorSettings())]
        ['the total comes to £495']
    """
    out, ctx, judgements = _unpack(_read(output, context, task, settings))
    callouts: list[Callout] = []
    for suspect, partner in sorted(_clashes(out, ctx, judgements, settings).items()):
        q, other = out.quantities[suspect], out.quantities[partner]
        callouts.append(
            Callout(
                dimension="consistency",
                kind="contradicted",
                claim=f"The output says {q.text} here but {other.text} elsewhere.",
                quote=out.clause(q.start, q.end),
                rival=out.clause(other.start, other.end),
            )
        )
    return callouts
