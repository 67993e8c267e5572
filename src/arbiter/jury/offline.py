"""The offline critic: the deterministic string detectors, run directly as a juror.

A critic whose provider is ``mock`` (the default roster) is this one. It answers the
critique a model would, scored by :func:`critique_of`, with no provider call: the
detectors read the case itself, so nothing about them travels through a provider
request.
"""

from __future__ import annotations

import time

from arbiter.contract import DIMENSIONS, Callout, Case, CriticOutcome, Critique, Usage
from arbiter.jury.detectors import run_detectors
from arbiter.jury.synthesis import MAX_CALLOUTS, most_severe

__all__ = [
    "CONTRADICTED_SCORE",
    "OFFLINE_PROVIDER",
    "UNSUPPORTED_SCORE",
    "critique_of",
    "run_offline_critic",
]

OFFLINE_PROVIDER = "mock"
"""The provider name that makes a critic the offline one."""
CONTRADICTED_SCORE = 2
"""Rating of a dimension with a contradiction callout."""
UNSUPPORTED_SCORE = 3
"""Rating of a dimension with an unsupported-claim callout (and no contradiction)."""
_CLEAN_SCORE = 5
MAX_REPORTED = 4 * MAX_CALLOUTS
"""Callouts an offline critique lists at most (synthesis weighs ``MAX_CALLOUTS`` of them)."""


def critique_of(callouts: list[Callout], *, listed: int | None = None) -> Critique:
    """The critique a detector critic gives: each dimension rated by its worst callout.

    Args:
        callouts: The detectors' findings.
        listed: List at most this many callouts, the most severe first kept (the ratings
            still count every finding); None lists them all.

    Returns:
        5 on a dimension with no callout, ``UNSUPPORTED_SCORE`` with only unsupported
        ones, ``CONTRADICTED_SCORE`` with a contradiction; the callouts in order.
    """
    scores = dict.fromkeys(DIMENSIONS, _CLEAN_SCORE)
    for callout in callouts:
        score = CONTRADICTED_SCORE if callout.kind == "contradicted" else UNSUPPORTED_SCORE
        scores[callout.dimension] = min(scores[callout.dimension], score)
    shown = callouts if listed is None else most_severe(callouts, listed)
    return Critique.model_validate({**scores, "callouts": shown})


def run_offline_critic(name: str, lens: str, model: str, case: Case) -> CriticOutcome:
    """The offline critic's outcome on one case: the detectors with ``lens``'s sensitivity.

    Args:
        name: The critic's name.
        lens: Its lens (factual, logical, adversary; any other gets the default settings).
        model: The model name to record (``mock`` in the default roster).
        case: The case to judge.

    Examples:
        >>> case = Case(id="c", task="Summarise.", context="Refunds within 30 days.",
        ...             output="Refunds within 45 days.")
        >>> run_offline_critic("factual", "factual", "mock", case).critique.accuracy
        2
    """
    started = time.perf_counter()
    found = run_detectors(case.task, case.context, case.output, lens=lens)
    # Reported as a model would: a bounded critique, the most severe findings first kept.
    critique = critique_of(found, listed=MAX_REPORTED)
    return CriticOutcome(
        critic=name,
        lens=lens,
        model=model,
        status="ok",
        critique=critique,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        usage=Usage(),
        raw=critique.model_dump_json(),
    )
