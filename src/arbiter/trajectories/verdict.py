"""Whether one agent turn failed: the one predicate every pass rate is built on.

A turn fails when

- a check a **rule** measured (a deterministic scorer) landed in the danger band: a
  banded score with ``band == "danger"``, or a pass / fail rule that failed; or
- a gate withheld the answer (``withheld``), which no measurement can express.

What never convicts:

- the review band: it passes, flagged for a look ("warn, don't gate");
- a model's (a judge's) score alone: a model opined, no rule measured it;
- an abstention or an errored score: unknown is not a failure.

*Refinement pairs.* ``refinements`` maps a rule to the judge declared to refine it (two
checks of one property, the judge the finer one): when the rule is in danger and that
judge passed the turn, the rule's danger is **disputed**, named, and does not convict.
A judge that failed the turn too corroborates the conviction; a judge that abstained or
never ran leaves the rule standing alone, at full weight.

``Scorer.gating`` is deliberately not consulted: it splits a report into gating and
flagged checks; it does not decide a turn's fate.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from arbiter.contract import Score, ScorerSpec

__all__ = ["TurnVerdict", "rule_scorers_of", "turn_failed"]


@dataclass(frozen=True)
class TurnVerdict:
    """Whether a turn failed, and what says so."""

    failed: bool
    """The turn failed: a rule convicted it, or its answer was withheld."""
    convicted_by: list[str] = field(default_factory=list)
    """The rules in danger that convict, in score order."""
    disputed: list[str] = field(default_factory=list)
    """The rules in danger whose refining judge cleared the turn (they do not convict)."""
    withheld: bool = False
    """A gate withheld the answer."""
    reasons: list[str] = field(default_factory=list)
    """One line per conviction, dispute or withholding."""


def _in_danger(score: Score) -> bool:
    if score.error is not None or score.passed is None:
        return False
    return score.band == "danger" or (score.band is None and score.passed is False)


def rule_scorers_of(specs: Iterable[ScorerSpec]) -> frozenset[str]:
    """The names (as scores carry them) of the deterministic scorers among ``specs``."""
    return frozenset(spec.label for spec in specs if spec.kind == "deterministic")


def turn_failed(
    scores: Sequence[Score],
    *,
    rule_scorers: Collection[str],
    refinements: Mapping[str, str] | None = None,
    withheld: bool = False,
) -> TurnVerdict:
    """Decide whether one turn failed from its scores.

    Args:
        scores: The turn's scores, one per scorer (a name's first score counts).
        rule_scorers: Names of the scorers that are rules (deterministic); any other
            score is a model's and never convicts on its own.
        refinements: A rule's name to the name of the judge that refines it.
        withheld: A gate withheld the answer.

    Returns:
        The verdict, with the convicting and disputed rules named.

    Examples:
        >>> cost = Score(name="cost", value=1.2, passed=False, band="danger")
        >>> turn_failed([cost], rule_scorers={"cost"}).convicted_by
        ['cost']
        >>> judge = Score(name="groundedness", passed=True)
        >>> overlap = Score(name="grounded_overlap", passed=False, band="danger")
        >>> verdict = turn_failed([overlap, judge], rule_scorers={"grounded_overlap"},
        ...     refinements={"grounded_overlap": "groundedness"})
        >>> verdict.failed, verdict.disputed
        (False, ['grounded_overlap'])
    """
    pairs = refinements or {}
    by_name: dict[str, Score] = {}
    for score in scores:
        by_name.setdefault(score.name, score)
    convicted: list[str] = []
    disputed: list[str] = []
    reasons: list[str] = []
    for name, score in by_name.items():
        if name not in rule_scorers or not _in_danger(score):
            continue
        judge_name = pairs.get(name)
        judge = by_name.get(judge_name) if judge_name is not None else None
        judged = judge is not None and judge.error is None and judge.passed is not None
        if judged and judge is not None and judge.passed:
            disputed.append(name)
            reasons.append(f"{name} is in danger but its refining judge {judge_name} cleared it")
            continue
        convicted.append(name)
        line = f"{name} is in danger"
        if score.explanation:
            line += f": {score.explanation}"
        if judged:
            line += f" (corroborated by {judge_name})"
        reasons.append(line)
    if withheld:
        reasons.append("a gate withheld the answer")
    return TurnVerdict(
        failed=bool(convicted) or withheld,
        convicted_by=convicted,
        disputed=disputed,
        withheld=withheld,
        reasons=reasons,
    )
