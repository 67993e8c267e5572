"""Human annotations: a person's label on one scored item and dimension.

An annotation is append-only: a change of mind is a new row, and readers take the latest
per (item, dimension, annotator). It carries the judge ruling the human saw, *frozen* at
that moment (copied, never re-read), because a later re-score can flip a verdict and
would silently rewrite what the human was reacting to. A row without a frozen ruling is
a note: it is kept, but it is never calibration evidence.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arbiter.contract.common import SCHEMA_VERSION
from arbiter.contract.scores import Evidence, Score

__all__ = ["Annotation", "AnnotationLabel", "FrozenRuling", "RulingVerdict"]

AnnotationLabel = Literal["agree", "disagree", "pass", "fail"]
"""``agree`` / ``disagree`` with the ruling shown, or a direct ``pass`` / ``fail``."""

RulingVerdict = Literal["pass", "fail", "unknown"]
"""A judge's verdict as it was shown; ``unknown`` is an abstention."""


class FrozenRuling(BaseModel):
    """The judge ruling a human saw when labelling, copied at that moment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str = Field(min_length=1, max_length=200)
    """The judge (scorer) that ruled."""
    verdict: RulingVerdict
    """What it ruled."""
    score: float | None = None
    """Its score, when it gave one."""
    evidence: tuple[Evidence, ...] = ()
    """The evidence it quoted, as shown."""

    @classmethod
    def of(cls, score: Score, *, judge: str | None = None) -> FrozenRuling:
        """A copy of a judge's score as shown now: later changes to ``score`` do not reach it.

        An errored score or an abstention is ``unknown``.

        Args:
            score: The judge's score.
            judge: The judge's name (default: the score's).
        """
        verdict: RulingVerdict = (
            "unknown"
            if score.error is not None or score.passed is None
            else ("pass" if score.passed else "fail")
        )
        return cls(
            judge=judge or score.name,
            verdict=verdict,
            score=score.value,
            evidence=tuple(e.model_copy(deep=True) for e in score.evidence),
        )


class Annotation(BaseModel):
    """One human label on (item, dimension), with the ruling the human saw."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    item_id: str = Field(min_length=1, max_length=200)
    """The scored item (an example, a turn, a case)."""
    dimension: str = Field(min_length=1, max_length=100)
    """What was judged (groundedness, answer_correctness, ...)."""
    label: AnnotationLabel
    """The human's label."""
    ruling: FrozenRuling | None = None
    """The ruling shown to the human, frozen; None makes the row a note."""
    annotator: str = Field(min_length=1, max_length=200)
    """Who labelled."""
    created_at: datetime
    """When the label was given (timezone-aware)."""
    propagated: bool = False
    """The label arrived second-hand (propagated from another item), not given directly."""
    comment: str = Field(default="", max_length=10_000)
    """Free text the annotator wrote."""
    owner: str | None = Field(default=None, max_length=200)
    """Who the label belongs to: the API key id that made it; None from the command line."""

    @model_validator(mode="after")
    def _relative_labels_need_a_ruling(self) -> Annotation:
        if self.label in ("agree", "disagree") and self.ruling is None:
            raise ValueError(f"a label {self.label!r} needs the ruling it is about")
        if self.created_at.tzinfo is None:
            raise ValueError("created_at must be timezone-aware")
        return self

    @property
    def is_note(self) -> bool:
        """No ruling was on screen: the row is a note, never calibration evidence."""
        return self.ruling is None

    @property
    def human_passed(self) -> bool | None:
        """The human's own pass / fail: direct, or read off the ruling agreed with.

        None when it cannot be told: agreeing or disagreeing with an ``unknown`` ruling.
        """
        if self.label == "pass":
            return True
        if self.label == "fail":
            return False
        assert self.ruling is not None  # the validator guarantees it
        if self.ruling.verdict == "unknown":
            return None
        shown = self.ruling.verdict == "pass"
        return shown if self.label == "agree" else not shown
