"""How good is the jury? Detection, verdicts, calibration, ablation, critic agreement.

Everything here is computed from stored or fresh critic outcomes; the ablation
re-synthesizes subsets of the same outcomes, so it costs no further model call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations

import numpy as np
from pydantic import BaseModel, Field

from arbiter.contract import Case, CriticOutcome, Decision, Interval, Verdict
from arbiter.errors import InputError
from arbiter.jury.synthesis import synthesize
from arbiter.scoring.quotes import locate, overlap_ratio
from arbiter.stats import cohen_kappa, expected_calibration_error, wilson_interval

__all__ = [
    "AblationRow",
    "DetectionFigures",
    "JuryEvaluation",
    "KappaRow",
    "detection_figures",
    "evaluate_jury",
    "gate_failures",
    "group_detection",
]

DECISIONS: tuple[Decision, ...] = ("ACCEPT", "REVISE", "REJECT")
MAX_OVERCONFIDENCE = 0.15
"""Gate: mean confidence may exceed accuracy by at most this much."""
ESCALATE_RANGE = (0.05, 0.40)
"""Gate: a flag that fires on everything or nothing is decoration."""


class DetectionFigures(BaseModel):
    """Defective-or-not, case by case: the jury flags a case unless it ACCEPTs."""

    n: int
    """Cases with a known ``defective`` label."""
    tp: int
    """Defective and flagged."""
    fp: int
    """Clean but flagged."""
    fn: int
    """Defective but accepted."""
    tn: int
    """Clean and accepted."""
    precision: Interval
    """TP / (TP + FP), Wilson interval."""
    recall: Interval
    """TP / (TP + FN), Wilson interval."""
    balanced_accuracy: float | None
    """Mean of recall and specificity (SummEdits' metric); None without both classes."""
    recall_string: Interval | None = None
    """Recall over cases with at least one string-detectable defect."""
    recall_semantic_only: Interval | None = None
    """Recall over cases whose defects are all semantic."""


class AblationRow(BaseModel):
    """The same figures for a sub-jury (a non-empty subset of the critics)."""

    critics: list[str]
    """Names of the critics in the subset."""
    precision: float
    """Detection precision (0 when nothing is flagged)."""
    recall: float
    """Detection recall."""
    accuracy: float | None
    """Exact-verdict accuracy where ``expected`` is known."""


class KappaRow(BaseModel):
    """Cohen's κ between two critics' solo verdicts."""

    a: str
    """First critic."""
    b: str
    """Second critic."""
    kappa: float | None
    """κ over the cases both answered; None when undefined (both constant and equal)."""
    n: int
    """Cases both critics answered."""


class JuryEvaluation(BaseModel):
    """Every figure of ``arbiter jury eval``."""

    n_cases: int
    """Cases judged."""
    detection: DetectionFigures | None
    """Detection figures (cases with a defective label)."""
    verdict_accuracy: Interval | None
    """Exact-verdict accuracy where ``expected`` is given."""
    confusion: dict[str, dict[str, int]]
    """Expected → decided → count, where ``expected`` is given."""
    escalate_rate: float
    """Share of verdicts that escalate."""
    corroboration_rate: float | None
    """Share of findings raised by two critics or more."""
    coverage: float
    """Share of cases not escalated."""
    accuracy_at_coverage: float | None
    """Accuracy over the labelled, non-escalated cases."""
    mean_confidence: float
    """Mean stated confidence over the labelled cases."""
    accuracy: float
    """Share of labelled cases judged right: exact verdict where known, else detection."""
    ece: float
    """Expected calibration error of the confidence against correctness."""
    ece_interval: tuple[float, float]
    """Seeded bootstrap 95% interval of the ECE."""
    confidence_when_right: float | None
    """Mean confidence of correct verdicts."""
    confidence_when_wrong: float | None
    """Mean confidence of wrong verdicts."""
    defect_recall: Interval | None = None
    """Labelled defects whose quote overlaps a finding's quote (span level)."""
    ablation: list[AblationRow] = Field(default_factory=list)
    """Every non-empty subset of critics."""
    kappa: list[KappaRow] = Field(default_factory=list)
    """Every pair of critics."""
    gate_failures: list[str] = Field(default_factory=list)
    """Calibration and escalation gates missed (exit 1 when any)."""


def _interval(successes: int, n: int) -> Interval:
    low, high = wilson_interval(successes, n)
    return Interval(estimate=successes / n if n else 0.0, low=low, high=high, method="wilson", n=n)


def _flagged(verdict: Verdict) -> bool:
    return verdict.decision != "ACCEPT"


def _correct(case: Case, verdict: Verdict) -> bool:
    if case.expected is not None:
        return verdict.decision == case.expected
    return _flagged(verdict) == bool(case.defective)


def detection_figures(
    cases: Sequence[Case], verdicts: Sequence[Verdict]
) -> DetectionFigures | None:
    """Case-level detection of defects."""
    pairs = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c.defective is not None]
    if not pairs:
        return None
    tp = sum(1 for c, v in pairs if c.defective and _flagged(v))
    fp = sum(1 for c, v in pairs if not c.defective and _flagged(v))
    fn = sum(1 for c, v in pairs if c.defective and not _flagged(v))
    tn = len(pairs) - tp - fp - fn
    specificity = tn / (tn + fp) if tn + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    string_cases = [(c, v) for c, v in pairs if any(d.detectable == "string" for d in c.defects)]
    semantic_cases = [
        (c, v) for c, v in pairs if c.defects and all(d.detectable == "semantic" for d in c.defects)
    ]
    return DetectionFigures(
        n=len(pairs),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=_interval(tp, tp + fp),
        recall=_interval(tp, tp + fn),
        balanced_accuracy=(recall + specificity) / 2 if tp + fn and tn + fp else None,
        recall_string=_interval(sum(_flagged(v) for _, v in string_cases), len(string_cases))
        if string_cases
        else None,
        recall_semantic_only=_interval(
            sum(_flagged(v) for _, v in semantic_cases), len(semantic_cases)
        )
        if semantic_cases
        else None,
    )


def _defect_recall(cases: Sequence[Case], verdicts: Sequence[Verdict]) -> Interval | None:
    caught = total = 0
    for case, verdict in zip(cases, verdicts, strict=True):
        spans = [s for f in verdict.findings if (s := locate(f.quote, case.output))]
        for defect in case.defects:
            target = locate(defect.quote, case.output)
            if target is None:
                continue
            total += 1
            caught += any(overlap_ratio(target, s) > 0 for s in spans)
    return _interval(caught, total) if total else None


def _ece_interval(conf: np.ndarray, hits: np.ndarray, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    n = len(conf)
    draws = rng.integers(0, n, size=(1000, n))
    values = [expected_calibration_error(conf[i], hits[i]) for i in draws]
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


def _solo_decisions(
    cases: Sequence[Case], outcomes: Sequence[Sequence[CriticOutcome]], index: int
) -> list[Decision | None]:
    """Each case's verdict had the critic sat alone (None where it is dead)."""
    return [
        synthesize(case.output, [row[index]]).decision if row[index].status == "ok" else None
        for case, row in zip(cases, outcomes, strict=True)
    ]


def evaluate_jury(
    cases: Sequence[Case],
    outcomes: Sequence[Sequence[CriticOutcome]],
    *,
    seed: int = 0,
    synthesize_fn: Callable[[str, Sequence[CriticOutcome]], Verdict] = synthesize,
) -> JuryEvaluation:
    """Evaluate a jury from its critics' outcomes on labelled cases.

    Args:
        cases: The cases, each with ``expected`` and/or ``defective``.
        outcomes: Per case, every critic's outcome in roster order.
        seed: Seed of the ECE bootstrap.
        synthesize_fn: The synthesis to evaluate (for tests of alternatives).
    """
    if not cases:
        raise ValueError("no cases to evaluate")
    verdicts = [synthesize_fn(c.output, o) for c, o in zip(cases, outcomes, strict=True)]
    labelled = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c.expected is not None]
    confusion = {e: dict.fromkeys(DECISIONS, 0) for e in DECISIONS}
    for case, verdict in labelled:
        confusion[case.expected or "ACCEPT"][verdict.decision] += 1
    # Correctness (and so calibration) is only defined where a case carries a label.
    graded = [i for i, c in enumerate(cases) if c.expected is not None or c.defective is not None]
    if not graded:
        raise InputError("no case carries a label ('expected' or 'defective') to evaluate against")
    correct = np.array([_correct(cases[i], verdicts[i]) for i in graded], dtype=float)
    conf = np.array([verdicts[i].confidence for i in graded])
    kept = [i for i, v in enumerate(verdicts) if not v.escalate]
    kept_graded = [j for j, i in enumerate(graded) if not verdicts[i].escalate]
    findings = [f for v in verdicts for f in v.findings]
    names = [o.critic for o in outcomes[0]]
    evaluation = JuryEvaluation(
        n_cases=len(cases),
        detection=detection_figures(cases, verdicts),
        verdict_accuracy=_interval(
            sum(v.decision == c.expected for c, v in labelled), len(labelled)
        )
        if labelled
        else None,
        confusion=confusion if labelled else {},
        escalate_rate=1 - len(kept) / len(cases),
        corroboration_rate=sum(f.corroborated for f in findings) / len(findings)
        if findings
        else None,
        coverage=len(kept) / len(cases),
        accuracy_at_coverage=float(correct[kept_graded].mean()) if kept_graded else None,
        mean_confidence=float(conf.mean()),
        accuracy=float(correct.mean()),
        ece=expected_calibration_error(conf, correct),
        ece_interval=_ece_interval(conf, correct, seed),
        confidence_when_right=float(conf[correct == 1].mean()) if correct.any() else None,
        confidence_when_wrong=float(conf[correct == 0].mean()) if (correct == 0).any() else None,
        defect_recall=_defect_recall(cases, verdicts),
        ablation=_ablation(cases, outcomes, names, synthesize_fn),
        kappa=_kappa(cases, outcomes, names),
    )
    evaluation.gate_failures = gate_failures(evaluation)
    return evaluation


def gate_failures(evaluation: JuryEvaluation) -> list[str]:
    """The calibration and escalation gates this evaluation misses."""
    failures = []
    gap = evaluation.mean_confidence - evaluation.accuracy
    if gap > MAX_OVERCONFIDENCE:
        failures.append(
            f"overconfident: mean confidence {evaluation.mean_confidence:.3f} exceeds accuracy "
            f"{evaluation.accuracy:.3f} by {gap:.3f} (> {MAX_OVERCONFIDENCE})"
        )
    low, high = ESCALATE_RANGE
    if not low <= evaluation.escalate_rate <= high:
        failures.append(f"escalate rate {evaluation.escalate_rate:.3f} is outside [{low}, {high}]")
    return failures


def _ablation(
    cases: Sequence[Case],
    outcomes: Sequence[Sequence[CriticOutcome]],
    names: Sequence[str],
    synthesize_fn: Callable[[str, Sequence[CriticOutcome]], Verdict],
) -> list[AblationRow]:
    rows = []
    for size in range(1, len(names) + 1):
        for subset in combinations(range(len(names)), size):
            verdicts = [
                synthesize_fn(c.output, [o[i] for i in subset])
                for c, o in zip(cases, outcomes, strict=True)
            ]
            figures = detection_figures(cases, verdicts)
            labelled = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c.expected]
            rows.append(
                AblationRow(
                    critics=[names[i] for i in subset],
                    precision=figures.precision.estimate if figures else 0.0,
                    recall=figures.recall.estimate if figures else 0.0,
                    accuracy=sum(v.decision == c.expected for c, v in labelled) / len(labelled)
                    if labelled
                    else None,
                )
            )
    return rows


def _kappa(
    cases: Sequence[Case], outcomes: Sequence[Sequence[CriticOutcome]], names: Sequence[str]
) -> list[KappaRow]:
    solo = [_solo_decisions(cases, outcomes, i) for i in range(len(names))]
    rows = []
    for i, j in combinations(range(len(names)), 2):
        both = [(a, b) for a, b in zip(solo[i], solo[j], strict=True) if a and b]
        kappa: float | None = None
        if both:
            value = cohen_kappa([a for a, _ in both], [b for _, b in both])
            kappa = None if np.isnan(value) else value
        rows.append(KappaRow(a=names[i], b=names[j], kappa=kappa, n=len(both)))
    return rows


def group_detection(
    cases: Sequence[Case], verdicts: Sequence[Verdict], key: Callable[[Case], Sequence[str]]
) -> Mapping[str, DetectionFigures]:
    """Detection figures per group (a case may sit in several, e.g. several edit types)."""
    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        for name in key(case):
            groups.setdefault(name, []).append(i)
    result = {}
    for name in sorted(groups):
        figures = detection_figures(
            [cases[i] for i in groups[name]], [verdicts[i] for i in groups[name]]
        )
        if figures is not None:
            result[name] = figures
    return result
