"""Diff two runs of one case: the tool calls that differ, side by side, and flipped verdicts.

Tool calls are aligned by a longest common subsequence over ``(name, canonical
arguments)``: calls equal on both sides line up. Between two aligned calls, calls of
the same tool are lined up by a second LCS over names alone (``changed``: other
arguments), and the rest paired in order: another tool is ``replaced``, a call only in
A ``removed``, one only in B ``added``.

The alignment is Hirschberg's: memory linear in the two lengths, time their product,
so each side is bounded (:data:`MAX_ALIGNED_CALLS`) and calls past the bound are paired
by position, which the result says. A common head and tail are matched first, so two
runs that differ in a few calls cost little whatever their length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from arbiter.contract import Band, Score, ToolCall

__all__ = [
    "MAX_ALIGNED_CALLS",
    "MAX_SHOWN_ARGUMENTS",
    "CallChange",
    "CallDiff",
    "CallView",
    "VerdictFlip",
    "align",
    "call_key",
    "diff_calls",
    "flipped_verdicts",
]

MAX_ALIGNED_CALLS = 2_000
"""Calls of each side aligned by the LCS; later ones are paired by position."""

MAX_SHOWN_ARGUMENTS = 2_000
"""Characters of a call's canonical arguments kept in a diff (they may be huge)."""

ChangeKind = Literal["same", "changed", "replaced", "removed", "added"]
"""How a row of a call diff reads: equal on both sides, the same tool with other
arguments, another tool, a call only in A, a call only in B."""


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls the same: the tool's name and its arguments as canonical JSON."""
    return call.name, json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class CallView:
    """One side of a row: a tool call as the diff shows it."""

    index: int
    """Its position among the run's scored tool calls (0-based)."""
    name: str
    """The tool's name."""
    arguments: str
    """Its arguments as canonical JSON, clipped to :data:`MAX_SHOWN_ARGUMENTS`."""
    error: str | None = None
    """Why the call failed, if it did."""


@dataclass(frozen=True)
class CallChange:
    """One row of a call diff."""

    kind: ChangeKind
    """How the two sides relate."""
    a: CallView | None
    """The call of run A; None for ``added``."""
    b: CallView | None
    """The call of run B; None for ``removed``."""


@dataclass
class CallDiff:
    """The rows of two runs' tool calls, aligned."""

    rows: list[CallChange] = field(default_factory=list)
    """Every row, in order (``same`` rows included)."""
    positional_from: int | None = None
    """The first row paired by position past :data:`MAX_ALIGNED_CALLS`; None: all aligned."""

    @property
    def changes(self) -> list[CallChange]:
        """The rows that differ."""
        return [row for row in self.rows if row.kind != "same"]


@dataclass(frozen=True)
class VerdictFlip:
    """A scorer whose verdict or band differs between the two runs."""

    name: str
    """The scorer."""
    a_passed: bool | None
    """Its verdict on run A (None: abstained or errored)."""
    b_passed: bool | None
    """Its verdict on run B."""
    a_band: Band | None = None
    """Its band on run A, for banded metrics."""
    b_band: Band | None = None
    """Its band on run B."""

    @property
    def direction(self) -> Literal["broken", "fixed", "changed"]:
        """``broken``: passed in A, failed in B; ``fixed``: the reverse; else ``changed``."""
        if self.a_passed is True and self.b_passed is False:
            return "broken"
        if self.a_passed is False and self.b_passed is True:
            return "fixed"
        return "changed"


def align(a: Sequence[object], b: Sequence[object]) -> list[tuple[int, int]]:
    """The index pairs of a longest common subsequence of ``a`` and ``b``, in order.

    Hirschberg's algorithm: memory ``O(len(a) + len(b))``, time ``O(len(a) * len(b))``.
    Items are compared with ``==``.

    Examples:
        >>> align("abcd", "acd")
        [(0, 0), (2, 1), (3, 2)]
    """
    pairs: list[tuple[int, int]] = []
    # An explicit stack of subproblems: recursion depth would grow with the length.
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a_lo, a_hi, b_lo, b_hi = stack.pop()
        # Common head and tail first: cheap, and most of two similar runs.
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            pairs.append((a_lo, b_lo))
            a_lo, b_lo = a_lo + 1, b_lo + 1
        while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
            a_hi, b_hi = a_hi - 1, b_hi - 1
            pairs.append((a_hi, b_hi))
        if a_lo == a_hi or b_lo == b_hi:
            continue
        if a_hi - a_lo == 1:
            found = next((j for j in range(b_lo, b_hi) if b[j] == a[a_lo]), None)
            if found is not None:
                pairs.append((a_lo, found))
            continue
        middle = (a_lo + a_hi) // 2
        forward = _lcs_lengths(a, b, a_lo, middle, b_lo, b_hi, reverse=False)
        backward = _lcs_lengths(a, b, middle, a_hi, b_lo, b_hi, reverse=True)
        width = b_hi - b_lo
        split = max(range(width + 1), key=lambda j: forward[j] + backward[width - j])
        stack.append((a_lo, middle, b_lo, b_lo + split))
        stack.append((middle, a_hi, b_lo + split, b_hi))
    pairs.sort()
    return pairs


def _lcs_lengths(
    a: Sequence[object],
    b: Sequence[object],
    a_lo: int,
    a_hi: int,
    b_lo: int,
    b_hi: int,
    *,
    reverse: bool,
) -> list[int]:
    """LCS lengths of ``a[a_lo:a_hi]`` against each prefix (``reverse``: suffix) of
    ``b[b_lo:b_hi]``, in one row of memory."""
    rows = range(a_hi - 1, a_lo - 1, -1) if reverse else range(a_lo, a_hi)
    columns = range(b_hi - 1, b_lo - 1, -1) if reverse else range(b_lo, b_hi)
    row = [0] * (b_hi - b_lo + 1)
    for i in rows:
        item, diagonal = a[i], 0
        for position, j in enumerate(columns, start=1):
            above = row[position]
            if item == b[j]:
                row[position] = diagonal + 1
            elif row[position - 1] > above:
                row[position] = row[position - 1]
            diagonal = above
    return row


def diff_calls(a: Sequence[ToolCall], b: Sequence[ToolCall]) -> CallDiff:
    """Rows of two runs' tool calls: aligned by LCS, the gaps between paired by tool name."""
    keys_a, keys_b = [call_key(c) for c in a], [call_key(c) for c in b]
    bound_a, bound_b = min(len(a), MAX_ALIGNED_CALLS), min(len(b), MAX_ALIGNED_CALLS)
    rows = _Rows(a, b, keys_a, keys_b)
    i = j = 0
    for pair_i, pair_j in [*align(keys_a[:bound_a], keys_b[:bound_b]), (bound_a, bound_b)]:
        rows.gap(range(i, pair_i), range(j, pair_j))
        if pair_i < bound_a:
            rows.add(pair_i, pair_j)
        i, j = pair_i + 1, pair_j + 1
    diff = CallDiff(rows.rows)
    if len(a) > bound_a or len(b) > bound_b:
        diff.positional_from = len(diff.rows)
        rows.by_position(range(bound_a, len(a)), range(bound_b, len(b)))
    return diff


class _Rows:
    """The rows of a call diff, built in order."""

    def __init__(
        self,
        a: Sequence[ToolCall],
        b: Sequence[ToolCall],
        keys_a: Sequence[tuple[str, str]],
        keys_b: Sequence[tuple[str, str]],
    ) -> None:
        self.a, self.b, self.keys_a, self.keys_b = a, b, keys_a, keys_b
        self.rows: list[CallChange] = []

    def add(self, i: int | None, j: int | None) -> None:
        left = _view(self.a, self.keys_a, i) if i is not None else None
        right = _view(self.b, self.keys_b, j) if j is not None else None
        kind: ChangeKind
        if left is None:
            kind = "added"
        elif right is None:
            kind = "removed"
        elif left.name != right.name:
            kind = "replaced"
        else:
            kind = "same" if self.keys_a[left.index] == self.keys_b[right.index] else "changed"
        self.rows.append(CallChange(kind, left, right))

    def gap(self, only_a: range, only_b: range) -> None:
        """Calls between two aligned ones: the same tool lined up (``changed``), the
        rest paired in order."""
        names_a = [self.keys_a[i][0] for i in only_a]
        names_b = [self.keys_b[j][0] for j in only_b]
        i = j = 0
        for pair_i, pair_j in [*align(names_a, names_b), (len(only_a), len(only_b))]:
            self.by_position(only_a[i:pair_i], only_b[j:pair_j])
            if pair_i < len(only_a):
                self.add(only_a[pair_i], only_b[pair_j])
            i, j = pair_i + 1, pair_j + 1

    def by_position(self, only_a: range, only_b: range) -> None:
        for offset in range(max(len(only_a), len(only_b))):
            self.add(
                only_a[offset] if offset < len(only_a) else None,
                only_b[offset] if offset < len(only_b) else None,
            )


def _view(calls: Sequence[ToolCall], keys: Sequence[tuple[str, str]], index: int) -> CallView:
    arguments = keys[index][1]
    if len(arguments) > MAX_SHOWN_ARGUMENTS:
        arguments = arguments[: MAX_SHOWN_ARGUMENTS - 1] + "…"
    return CallView(index, calls[index].name, arguments, calls[index].error)


def flipped_verdicts(a: Sequence[Score], b: Sequence[Score]) -> list[VerdictFlip]:
    """The scorers, in A's order then B's, whose verdict or band differs between runs.

    A scorer that abstained on both sides never flips; one present on a side only is
    compared with an abstention.
    """
    by_name_a = {score.name: score for score in a}
    by_name_b = {score.name: score for score in b}
    flips: list[VerdictFlip] = []
    for name in dict.fromkeys([*by_name_a, *by_name_b]):
        left, right = by_name_a.get(name), by_name_b.get(name)
        a_passed = left.passed if left is not None else None
        b_passed = right.passed if right is not None else None
        a_band = left.band if left is not None else None
        b_band = right.band if right is not None else None
        if a_passed != b_passed or a_band != b_band:
            flips.append(VerdictFlip(name, a_passed, b_passed, a_band, b_band))
    return flips
