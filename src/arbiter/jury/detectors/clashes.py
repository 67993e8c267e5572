"""Two output figures for one quantity: which clash, and with which other figure.

Two output figures clash when the context backs neither and their nearby words overlap
enough; when a sentence opening "In short" or "To confirm" restates an earlier figure
differently; or when both answer the same context figure, one equal to it and one not.
The suspect is the later or the unbacked one.

Figures that share no word score at most ``SAME_UNIT_BONUS``, under every lens's
threshold, so the pairs are found through the words (``overlaps``); a short output, or a
threshold at or below the bonus (a custom setting), has all its pairs compared.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from arbiter.jury.detectors.analysis import Analysis
from arbiter.jury.detectors.counterparts import NAMES, Status, comparable, restated
from arbiter.jury.detectors.equality import bucket_key, figure_index
from arbiter.jury.detectors.overlaps import SCAN_LIMIT, WindowGroups, window_key
from arbiter.jury.detectors.quantities import same_value
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import overlap

__all__ = ["SAME_UNIT_BONUS", "clashes"]

SAME_UNIT_BONUS = 0.25
"""Added when two output figures share their written unit (both "minutes", both "%")."""
_UNBACKED = ("unsupported", "unpaired", "derived")

Keep = Callable[[int, int, float], None]


def _pair_score(out: Analysis, i: int, j: int) -> float:
    """The score of output figures ``i < j`` as one quantity."""
    a, b = out.quantities[i], out.quantities[j]
    score = overlap(out.windows[i], out.windows[j])
    if a.surface and a.surface == b.surface:
        score += SAME_UNIT_BONUS
    return score


def _all_pairs(
    out: Analysis, status: Sequence[Status], settings: DetectorSettings, keep: Keep
) -> None:
    """Every pair of unbacked output figures, later one first (any threshold)."""
    quantities = out.quantities
    for j, b in enumerate(quantities):
        for i in range(j):
            a = quantities[i]
            if status[i] not in _UNBACKED or status[j] not in _UNBACKED:
                continue
            if status[i] == status[j] == "derived" or a.kind in NAMES:
                continue
            if not comparable(a, b) or same_value(a, b, tolerance=settings.hedge_tolerance):
                continue
            score = _pair_score(out, i, j)
            if score >= settings.inconsistency_match:
                suspect, partner = (i, j) if status[j] == "derived" else (j, i)
                keep(suspect, partner, score)


def _word_pairs(
    out: Analysis, status: Sequence[Status], settings: DetectorSettings, keep: Keep
) -> None:
    """The pairs of ``_all_pairs`` that share a word: the only ones that can score enough.

    A derived figure is never the suspect of such a pair (two derived figures never
    pair). For any other figure, ``_all_pairs`` tries its partners in order (the earlier
    ones, then the later derived ones) and keeps the first best. Here they are looked
    for in groups of figures with one window, written unit and derivedness (which score
    alike): in each, the first earlier figure and the first later one of another value.
    """
    quantities = out.quantities
    groups: dict[tuple[str, str], WindowGroups] = {}
    firsts: dict[tuple[str, str], list[list[int]]] = {}
    """Per bucket and group: its first figure of each value (and hedging), in order."""
    seen: set[tuple[tuple[str, str], int, float, bool]] = set()
    for x, q in enumerate(quantities):
        if status[x] in _UNBACKED and q.kind not in NAMES:
            key = bucket_key(q)
            alike = (window_key(out.windows[x]), q.surface, status[x] == "derived")
            number = groups.setdefault(key, WindowGroups()).add(alike, x, out.windows[x])
            bucket_firsts = firsts.setdefault(key, [])
            if number == len(bucket_firsts):
                bucket_firsts.append([])
            if (key, number, q.value, q.hedged) not in seen:
                seen.add((key, number, q.value, q.hedged))
                bucket_firsts[number].append(x)
    for bucket in groups.values():
        bucket.seal()
    threshold, tolerance = settings.inconsistency_match, settings.hedge_tolerance
    for x, q in enumerate(quantities):
        if status[x] not in _UNBACKED or status[x] == "derived" or q.kind in NAMES:
            continue
        key = bucket_key(q)
        bucket = groups[key]
        best: tuple[float, int] | None = None
        for number in bucket.candidates(out.windows[x]):
            members = bucket.members[number]
            partners: list[int] = []
            # The first earlier figure of another value: the first of its value.
            for first in firsts[key][number]:
                if first >= x:
                    break
                if not same_value(q, quantities[first], tolerance=tolerance):
                    partners.append(first)
                    break
            if status[members[0]] == "derived":  # later partners are derived ones only
                at = bisect_right(members, x)
                while at < len(members):
                    if not same_value(q, quantities[members[at]], tolerance=tolerance):
                        partners.append(members[at])
                        break
                    at += 1
            for y in partners:
                score = _pair_score(out, y, x) if y < x else _pair_score(out, x, y)
                if score >= threshold and (best is None or (-score, y) < (-best[0], best[1])):
                    best = (score, y)
        if best is not None:
            keep(x, best[1], best[0])


def clashes(
    out: Analysis,
    ctx: Analysis,
    status: Sequence[Status],
    counterparts: Sequence[int | None],
    settings: DetectorSettings,
) -> dict[int, int]:
    """Each suspect output figure mapped to the output figure it clashes with.

    Args:
        out: The output read.
        ctx: The context read.
        status: Each output figure's status with this lens.
        counterparts: Each output figure's context counterpart, if it is contradicted.
        settings: The lens's sensitivities.
    """
    found: dict[int, tuple[float, int]] = {}

    def keep(suspect: int, partner: int, score: float) -> None:
        if score > found.get(suspect, (-1.0, -1))[0]:
            found[suspect] = (score, partner)

    quantities = out.quantities
    if settings.inconsistency_match > SAME_UNIT_BONUS and len(quantities) > SCAN_LIMIT:
        _word_pairs(out, status, settings, keep)
    else:
        _all_pairs(out, status, settings, keep)
    if settings.restatements:
        for j, i in restated(out.text):
            backed = status[j] in ("equal", "derived")
            if not backed and not same_value(
                quantities[i], quantities[j], tolerance=settings.hedge_tolerance
            ):
                keep(j, i, float("inf"))
    # Two output figures for one context figure: one restates it, the other does not.
    for j, counterpart in enumerate(counterparts):
        if status[j] != "contradicted" or counterpart is None:
            continue
        # The first output figure equal to it decides (later ones tie).
        first = figure_index(out.text).first_equal(ctx.quantities[counterpart], exclude=j)
        if first is not None:
            keep(j, first, settings.inconsistency_match)
    return {suspect: partner for suspect, (_, partner) in found.items()}
