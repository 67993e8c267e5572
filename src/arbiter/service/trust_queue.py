"""What a person should look at next: the judges' recent rulings on ingested runs, and
the ambiguous tail, the escalated items no judge could decide.

The tail has two sources: ingested runs whose judges all abstained (no judge had what it
needs, each model failed, or the budget cut them off), and online results (``arbiter
online score``) that were escalated and that the judge chain did not resolve (it fell
back to the heuristics). Online results belong to no key, so only an administrator (or
an open server) sees them. A person's label on either is calibration evidence
(``POST /v1/annotations``, ``POST /v1/votes``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.trust import JudgeRuling
from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.trust_judging_repository import list_rulings, online_tail, undecided_runs

__all__ = ["AmbiguousTail", "OnlineTailItem", "UndecidedRun", "ambiguous_tail", "recent_rulings"]

_MAX_LIMIT = 500


def _check(limit: int, what: str) -> None:
    if not 1 <= limit <= _MAX_LIMIT:
        raise InputError(f"The 'limit' parameter of {what} must be in [1, 500]. Got {limit}.")


def recent_rulings(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    judge: str | None = None,
    verdict: str | None = None,
    before: int | None = None,
    limit: int = 50,
) -> list[JudgeRuling]:
    """The judges' rulings on ingested runs ``viewer`` may see, newest first.

    Raises:
        InputError: ``limit`` outside [1, 500], or a verdict that is not pass, fail or
            unknown.
    """
    _check(limit, "recent_rulings")
    if verdict is not None and verdict not in ("pass", "fail", "unknown"):
        raise InputError(f"verdict: expected pass, fail or unknown, got {verdict[:40]!r}")
    return list_rulings(
        store, viewer=viewer, agent=agent, judge=judge, verdict=verdict, before=before, limit=limit
    )


class UndecidedRun(BaseModel):
    """An ingested run the judges were asked about, none of whom decided."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    agent: str
    owner: str | None = None
    trigger: str
    """Why it went to the judges."""
    judges_asked: int
    at: datetime


class OnlineTailItem(BaseModel):
    """An escalated online result no judge resolved."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str
    prediction_id: str
    label: str | None = None
    judge_source: str | None = None
    """``heuristics_fallback`` when every judge of the chain failed; None: none answered."""
    reasons: list[str] = Field(default_factory=list)
    """Why it was escalated."""
    at: datetime


class AmbiguousTail(BaseModel):
    """The escalated items no judge could decide, newest first."""

    model_config = ConfigDict(extra="forbid")

    runs: list[UndecidedRun] = Field(default_factory=list)
    online: list[OnlineTailItem] = Field(default_factory=list)
    """Only for an administrator: online results belong to no key."""


def ambiguous_tail(store: Store, *, viewer: str | None = None, limit: int = 50) -> AmbiguousTail:
    """The ambiguous tail ``viewer`` may see (at most ``limit`` of each source).

    Raises:
        InputError: ``limit`` outside [1, 500].
    """
    _check(limit, "ambiguous_tail")
    runs = [
        UndecidedRun(
            run_id=run_id, agent=agent, owner=owner, trigger=trigger, judges_asked=asked, at=at
        )
        for run_id, agent, owner, trigger, asked, at in undecided_runs(
            store, viewer=viewer, limit=limit
        )
    ]
    online: list[OnlineTailItem] = []
    if viewer is None:
        online = [
            OnlineTailItem(
                batch_id=batch,
                prediction_id=prediction,
                label=label,
                judge_source=source,
                reasons=reasons,
                at=at,
            )
            for batch, prediction, label, source, reasons, at in online_tail(store, limit=limit)
        ]
    return AmbiguousTail(runs=runs, online=online)
