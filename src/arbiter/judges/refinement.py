"""Refinement pairs: a rule and the judge declared to refine it, read together per item.

A declared pair (``grounded_overlap`` refined by ``groundedness``) claims that two
checks measure one property, the judge the finer one. Per item the pair has a
*standing*, and the standing, not the worse of the two, sets what the rule contributes
to the turn-failed predicate (:func:`arbiter.trajectories.verdict.turn_failed` applies
the same rule through its ``refinements`` argument):

=====================  ==============================  ================
standing               rule / judge                    rule convicts
=====================  ==============================  ================
corroborated_failure   danger / failed                 yes
rule_only_failure      danger / abstained or absent    yes (full weight)
disputed               danger / passed                 no
judge_only_failure     not in danger / failed          no
clean                  anything else                   no
=====================  ==============================  ================

A judge alone never convicts: a model opined, no rule measured it. An abstention or an
errored score is unknown, never a failure.
"""

from __future__ import annotations

from typing import Literal

from arbiter.contract import Score

__all__ = [
    "REFINEMENT_PAIRS",
    "RefinementStanding",
    "refinement_standing",
    "rule_convicts",
]

RefinementStanding = Literal[
    "corroborated_failure", "rule_only_failure", "disputed", "judge_only_failure", "clean"
]

REFINEMENT_PAIRS: dict[str, str] = {"grounded_overlap": "groundedness"}
"""The declared pairs: a rule's name to the judge that refines it."""


def _rule_in_danger(score: Score) -> bool:
    if score.error is not None or score.passed is None:
        return False
    return score.band == "danger" or (score.band is None and score.passed is False)


def _judge_passed(score: Score | None) -> bool | None:
    if score is None or score.error is not None:
        return None
    return score.passed


def refinement_standing(rule_score: Score, judge_score: Score | None) -> RefinementStanding:
    """The standing of one item under a refinement pair.

    Args:
        rule_score: The rule's score (a deterministic scorer).
        judge_score: The refining judge's score, None when it never ran.

    Examples:
        >>> overlap = Score(name="grounded_overlap", passed=False, band="danger")
        >>> refinement_standing(overlap, Score(name="groundedness", passed=True))
        'disputed'
        >>> refinement_standing(Score(name="grounded_overlap", passed=True),
        ...     Score(name="groundedness", passed=False))
        'judge_only_failure'
    """
    judged = _judge_passed(judge_score)
    if _rule_in_danger(rule_score):
        if judged is None:
            return "rule_only_failure"
        return "disputed" if judged else "corroborated_failure"
    return "judge_only_failure" if judged is False else "clean"


def rule_convicts(standing: RefinementStanding) -> bool:
    """Whether the rule of a pair in this standing counts toward the turn failing."""
    return standing in ("corroborated_failure", "rule_only_failure")
