"""What one judge model answers, parsed leniently, its quotes checked in code.

A judge is asked for ``{verdict, score, evidence, reasoning}`` under a strict JSON
schema, but small models and models without constrained decoding drift: a fenced
block, ``"PASS"``, a score as a string, evidence as bare strings. :func:`parse_ruling`
accepts those, and nothing that changes the meaning; what it cannot read is an
:class:`~arbiter.errors.InvalidResponse`, which the panel turns into an ``unknown`` vote.

:func:`checked_ruling` then looks each quote up verbatim (the jury's normaliser,
:func:`arbiter.scoring.quotes.locate`) in the texts the judge was shown. As in the jury
and the ``rubric`` scorer, a verdict whose every quote is missing is demoted to
``unknown``: the judge was not reading this item, so its verdict is an opinion. A
verdict with no quote stands (a failure by omission has nothing to quote).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from arbiter.contract import Evidence
from arbiter.errors import InvalidResponse
from arbiter.judging import Quote, QuotedAnswer, QuotedVerdict, one_line
from arbiter.scoring.quotes import locate

__all__ = [
    "MAX_QUOTES",
    "JudgeAnswer",
    "JudgeQuote",
    "MemberRuling",
    "Vote",
    "checked_ruling",
    "parse_ruling",
]

Vote = QuotedVerdict
"""One judge's verdict on one item; ``unknown`` abstains."""

MAX_QUOTES = 8
"""Quotes of one answer that are checked and kept."""
_MAX_TEXT = 300
"""Characters kept of a quote, of what it shows, and of the reasoning (model text)."""
_MAX_ANSWER_CHARS = 64_000
"""Longest answer text read; a longer one is not a ruling."""
_VERDICTS: dict[str, Vote] = {
    "pass": "pass",
    "passed": "pass",
    "yes": "pass",
    "true": "pass",
    "faithful": "pass",
    "fail": "fail",
    "failed": "fail",
    "no": "fail",
    "false": "fail",
    "drifted": "fail",
    "unknown": "unknown",
    "abstain": "unknown",
    "n/a": "unknown",
}


class JudgeQuote(Quote):
    """One passage a judge's verdict rests on (the request's schema)."""

    model_config = ConfigDict(extra="forbid")

    quote: str = Field(description="Words copied exactly from the material shown.")
    """Words copied from what the judge was shown (checked in code)."""
    shows: str = Field(description="What the quote shows, in one sentence.")
    """What the quote shows."""


class JudgeAnswer(QuotedAnswer):
    """What every decomposed judge is asked to answer: the strict JSON schema."""

    model_config = ConfigDict(extra="forbid")

    evidence: list[JudgeQuote] = Field(  # type: ignore[assignment]  # narrowed quote
        description="Passages quoted exactly."
    )
    """The passages the verdict rests on."""
    score: float = Field(description="From 0.0 (not at all) to 1.0 (fully).")
    """How well the item meets the dimension, in [0, 1]; outside it the score is ignored."""


@dataclass(frozen=True)
class MemberRuling:
    """One judge model's answer, read and checked."""

    verdict: Vote
    """The verdict after demotion (``unknown`` when every quote was missing)."""
    score: float | None
    """The score when it was a number in [0, 1]; None otherwise."""
    reasoning: str
    """The model's reasoning, one bounded line."""
    evidence: tuple[Evidence, ...] = ()
    """Its quotes, each marked verified or not."""
    demoted: bool = False
    """The model's verdict was set to ``unknown`` because no quote of it was found."""
    answered: Vote = "unknown"
    """The verdict the model gave, before demotion."""


def parse_ruling(text: str) -> JudgeAnswer:
    """Read a judge's answer text: strict JSON, or the near misses models produce.

    Args:
        text: The model's answer (bare JSON or a fenced block).

    Raises:
        InvalidResponse: The text is not JSON, not an object, or has no readable verdict.

    Examples:
        >>> parse_ruling('{"verdict": "PASS", "score": "0.9", "evidence": ["ok"]}').verdict
        'pass'
    """
    from arbiter.judging import json_document

    if len(text) > _MAX_ANSWER_CHARS:
        raise InvalidResponse(f"answer of {len(text):,} characters is too long to be a ruling")
    document = json_document(text)
    if not isinstance(document, dict):
        raise InvalidResponse(f"answer is JSON {type(document).__name__}, not an object")
    raw_verdict = document.get("verdict")
    verdict = _VERDICTS.get(raw_verdict.strip().lower()) if isinstance(raw_verdict, str) else None
    if verdict is None:
        raise InvalidResponse(f"answer has no verdict pass / fail / unknown: {raw_verdict!r:.60}")
    return JudgeAnswer(
        reasoning=_line(document.get("reasoning")),
        evidence=_quotes(document.get("evidence")),
        verdict=verdict,
        score=_number(document.get("score")),
    )


def checked_ruling(answer: JudgeAnswer, shown: Sequence[str]) -> MemberRuling:
    """The answer with its quotes looked up verbatim in ``shown`` and demoted if none is.

    Args:
        answer: The parsed answer.
        shown: The texts the judge was shown (answer, chunks, tool results, ...); a quote
            is verified when it occurs in any of them.
    """
    evidence = tuple(
        Evidence(
            quote=_line(q.quote),
            verified=any(locate(q.quote, text) is not None for text in shown),
            note=_line(q.shows),
        )
        for q in answer.evidence[:MAX_QUOTES]
    )
    demoted = (
        answer.verdict != "unknown" and bool(evidence) and not any(e.verified for e in evidence)
    )
    in_range = 0.0 <= answer.score <= 1.0  # NaN fails too: ignored
    return MemberRuling(
        verdict="unknown" if demoted else answer.verdict,
        score=answer.score if in_range else None,
        reasoning=answer.reasoning,
        evidence=evidence,
        demoted=demoted,
        answered=answer.verdict,
    )


def _quotes(value: Any) -> list[JudgeQuote]:
    if isinstance(value, str | dict):
        value = [value]
    if not isinstance(value, list):
        return []
    quotes = []
    for item in value[: MAX_QUOTES * 4]:
        if isinstance(item, str) and item.strip():
            quotes.append(JudgeQuote(quote=item[: _MAX_TEXT * 4], shows=""))
        elif isinstance(item, dict) and isinstance(item.get("quote"), str) and item["quote"]:
            quotes.append(
                JudgeQuote(quote=item["quote"][: _MAX_TEXT * 4], shows=_line(item.get("shows")))
            )
    return quotes


def _number(value: Any) -> float:
    """The score as a float; NaN (ignored later) when it is not a number."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip()[:32])
        except ValueError:
            return math.nan
    return math.nan


def _line(value: Any, limit: int = _MAX_TEXT) -> str:
    return one_line(value, limit)
