"""A stored jury verdict shaped for its page: the output cut into plain and quoted spans.

Each finding's quote is found in the output (verbatim, else ignoring case) and marked
where it stands, numbered in order of appearance; a quote found nowhere is listed as
not found. The spans are plain strings: the template escapes them, so a quote cannot
add markup however it was written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arbiter.contract import CriticOutcome, Finding
from arbiter.service.browse import StoredVerdict

__all__ = ["CriticRow", "TextSegment", "mark_quotes", "verdict_context"]

OUTPUT_CHARS = 50_000
"""Characters of the judged output the page shows."""
_DIMENSIONS = ("accuracy", "consistency", "completeness")


@dataclass(frozen=True)
class TextSegment:
    """A stretch of the output: plain (``mark`` None) or the quote of finding ``mark``."""

    text: str
    mark: int | None = None
    kind: str = ""


def _find(text: str, quote: str, start_at: list[tuple[int, int]]) -> int:
    """Where ``quote`` first stands in ``text`` without overlapping a taken stretch."""
    for haystack, needle in ((text, quote), (text.lower(), quote.lower())):
        if len(haystack) != len(text) or len(needle) != len(quote):
            continue  # lower() changed a length: positions would not line up
        at = haystack.find(needle)
        while at != -1:
            end = at + len(needle)
            if all(end <= s or at >= e for s, e in start_at):
                return at
            at = haystack.find(needle, at + 1)
    return -1


def mark_quotes(text: str, findings: list[Finding]) -> tuple[list[TextSegment], dict[int, int]]:
    """Cut ``text`` into spans, each finding's quote marked where it stands.

    Returns:
        The spans in order, and for each finding (by its index) the number it is shown
        with; a finding whose quote is not in ``text`` has no number.
    """
    taken: list[tuple[int, int, int]] = []
    for i, finding in enumerate(findings):
        quote = finding.quote
        if not quote.strip():
            continue
        at = _find(text, quote, [(s, e) for s, e, _ in taken])
        if at >= 0:
            taken.append((at, at + len(quote), i))
    taken.sort()
    numbers = {i: n for n, (_, _, i) in enumerate(taken, start=1)}
    spans, cursor = [], 0
    for start, end, i in taken:
        if start > cursor:
            spans.append(TextSegment(text[cursor:start]))
        spans.append(TextSegment(text[start:end], numbers[i], findings[i].kind))
        cursor = end
    if cursor < len(text):
        spans.append(TextSegment(text[cursor:]))
    return spans, numbers


@dataclass(frozen=True)
class CriticRow:
    """One critic's line in the critics' table."""

    outcome: CriticOutcome
    scores: dict[str, int | None]
    callouts: int


def _critic_rows(outcomes: list[CriticOutcome]) -> list[CriticRow]:
    rows = []
    for outcome in outcomes:
        critique = outcome.critique
        scores: dict[str, int | None] = {
            d: critique.score(d) if critique is not None else None  # type: ignore[arg-type]
            for d in _DIMENSIONS
        }
        rows.append(CriticRow(outcome, scores, len(critique.callouts) if critique else 0))
    return rows


def verdict_context(stored: StoredVerdict) -> dict[str, Any]:
    """What the verdict page's template needs."""
    verdict = stored.verdict
    output = stored.case.output
    clipped = len(output) > OUTPUT_CHARS
    spans, numbers = mark_quotes(output[:OUTPUT_CHARS], verdict.findings)
    return {
        "stored": stored,
        "case": stored.case,
        "verdict": verdict,
        "spans": spans,
        "clipped": clipped,
        "numbered": [(numbers.get(i), f) for i, f in enumerate(verdict.findings)],
        "critics": _critic_rows(verdict.critiques),
        "dimensions": _DIMENSIONS,
    }
