"""The answer every quoting judge is asked for: reasoning, verbatim quotes, a verdict.

The verdict has an ``unknown`` escape: a judge that cannot tell abstains instead of
guessing, and code never turns that abstention into a pass or a fail. Quotes are checked
in code by whoever reads the answer (the rubric, the judge panels); an answer whose
every quote is missing from what it was shown is an opinion, not evidence.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["QUOTED_VERDICTS", "Quote", "QuotedAnswer", "QuotedVerdict", "one_line"]

QuotedVerdict = Literal["pass", "fail", "unknown"]
"""A judge's verdict on one item; ``unknown`` abstains."""

QUOTED_VERDICTS: tuple[QuotedVerdict, ...] = ("pass", "fail", "unknown")
"""Every verdict, the abstention last."""


class Quote(BaseModel):
    """One passage a verdict rests on, copied from what the judge was shown."""

    model_config = ConfigDict(extra="forbid")

    quote: str = Field(description="Words copied exactly from the material shown.")
    """Words copied verbatim (checked in code)."""
    shows: str = Field(description="What the quote shows, in one sentence.")
    """What the quote shows."""


class QuotedAnswer(BaseModel):
    """Reasoning first, then the quotes, then a verdict that may be ``unknown``.

    Subclasses narrow the descriptions the model reads and add what they need (a score);
    the field order (reasoning before the verdict) is kept, so the model reasons first.
    """

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="Two or three sentences, before the verdict.")
    """Why, written before the verdict."""
    evidence: list[Quote] = Field(description="Passages quoted exactly.")
    """The passages the verdict rests on."""
    verdict: QuotedVerdict
    """The ruling; ``unknown`` when it cannot be told from what was shown."""


def one_line(text: object, limit: int) -> str:
    """A model's text made one bounded line: whitespace runs collapsed to one space, at
    most ``limit`` characters (then `` [...]``), read from at most ``4 * limit``
    characters, so a huge answer costs no more than a short one; not a string: ``""``.

    Model text lands in terminals, Markdown and HTML; each renderer still escapes it.

    Examples:
        >>> one_line("It is    fine.", 100), one_line("x" * 8, 5), one_line(None, 5)
        ('It is fine.', 'xxxxx [...]', '')
    """
    if not isinstance(text, str):
        return ""
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[:limit] + " [...]"
