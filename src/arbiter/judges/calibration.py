"""Calibrating a judge against human labels: kappa, agreement, precision / recall, alpha.

A judge is worth what its agreement with humans says. :func:`calibrate` takes pairs of
(judge label, human label) and reports, per judge and dimension, Cohen's kappa (equal
to scikit-learn's ``cohen_kappa_score``), raw agreement and the judge's precision and
recall on the ``positive`` label against the human's, each with a seeded bootstrap
interval, and Krippendorff's alpha among the humans where several labelled the same
items: the human ceiling beside the judge. A pair where either side abstained is left
out and counted. Below :data:`MIN_PAIRS` pairs kappa is reported but the status is never
``calibrated``; ``calibrated`` makes a judge *eligible* for promotion to gating, which
stays an explicit configuration act.

Any rater can be the judge: the jury's decision against a human's is calibrated the
same way, labels and all (ACCEPT / REVISE / REJECT).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Literal

import numpy as np

from arbiter.contract import Annotation
from arbiter.stats_agreement import (
    agreement_intervals,
    kappa_of_table,
    krippendorff_alpha_nominal,
    precision_recall_of_table,
    raw_agreement_of_table,
)

__all__ = [
    "KAPPA_THRESHOLD",
    "MIN_PAIRS",
    "CalibrationReport",
    "CalibrationStatus",
    "Estimate",
    "JudgeCalibration",
    "LabelPair",
    "calibrate",
    "calibration_status",
    "pairs_from_annotations",
]

MIN_PAIRS = 10
"""Pairs below which kappa is reported but can never make a judge ``calibrated``."""

KAPPA_THRESHOLD = 0.6
"""Kappa at or above which a judge with enough pairs is ``calibrated``."""

CalibrationStatus = Literal["calibrated", "uncalibrated", "too_few_pairs"]


@dataclass(frozen=True, slots=True)
class LabelPair:
    """A judge's label and a human's on one item; None on either side is an abstention."""

    judge_label: str | None
    human_label: str | None
    judge: str = "judge"
    dimension: str = ""
    item_id: str = ""
    annotator: str = ""


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval; nan where undefined."""

    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float | None]:
        """JSON-able, nan as null."""
        return {
            k: _finite(v)
            for k, v in (("value", self.value), ("low", self.low), ("high", self.high))
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


@dataclass(frozen=True)
class JudgeCalibration:
    """How one judge agrees with the humans on one dimension."""

    judge: str
    dimension: str
    n_pairs: int
    """Pairs with a label on both sides: the n of every figure."""
    n_judge_abstained: int
    """Pairs left out because the judge abstained."""
    n_human_unknown: int
    """Pairs left out because the human's label is unknown (the judge did label)."""
    labels: tuple[str, ...]
    positive: str
    """The label precision and recall are about."""
    kappa: Estimate
    agreement: Estimate
    precision: Estimate
    recall: Estimate
    human_alpha: float | None
    """Krippendorff's alpha among the humans; None with fewer than two annotators."""
    n_alpha_items: int
    """Items labelled by two or more humans (those alpha is over)."""
    n_annotators: int
    status: CalibrationStatus
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-able, nan as null."""
        return {
            "judge": self.judge,
            "dimension": self.dimension,
            "n_pairs": self.n_pairs,
            "n_judge_abstained": self.n_judge_abstained,
            "n_human_unknown": self.n_human_unknown,
            "labels": list(self.labels),
            "positive": self.positive,
            "kappa": self.kappa.as_dict(),
            "agreement": self.agreement.as_dict(),
            "precision": self.precision.as_dict(),
            "recall": self.recall.as_dict(),
            "human_alpha": _finite(self.human_alpha),
            "n_alpha_items": self.n_alpha_items,
            "n_annotators": self.n_annotators,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CalibrationReport:
    """Every judge and dimension calibrated, in (judge, dimension) order."""

    judges: list[JudgeCalibration] = field(default_factory=list)
    seed: int = 0
    n_resamples: int = 2000
    excluded: dict[str, int] = field(default_factory=dict)
    """Labels left out before pairing, by reason (notes, propagated, ...)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able, nan as null."""
        return {
            "judges": [j.as_dict() for j in self.judges],
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "excluded": dict(self.excluded),
            "min_pairs": MIN_PAIRS,
            "kappa_threshold": KAPPA_THRESHOLD,
        }


def calibration_status(
    kappa: float, n_pairs: int, *, min_pairs: int = MIN_PAIRS, threshold: float = KAPPA_THRESHOLD
) -> tuple[CalibrationStatus, str]:
    """The status a kappa over ``n_pairs`` earns, and why.

    Examples:
        >>> calibration_status(0.9, 9)[0]
        'too_few_pairs'
        >>> calibration_status(0.6, 10)[0]
        'calibrated'
    """
    if n_pairs < min_pairs:
        return "too_few_pairs", f"{n_pairs} pairs, fewer than the {min_pairs} needed"
    if math.isnan(kappa):
        return "uncalibrated", "kappa is undefined: every label on both sides is the same"
    if kappa >= threshold:
        return "calibrated", f"kappa {kappa:.3f} >= {threshold} over {n_pairs} pairs"
    return "uncalibrated", f"kappa {kappa:.3f} < {threshold} over {n_pairs} pairs"


_CELL = attrgetter("judge", "dimension", "judge_label", "human_label")
_ANNOTATOR = attrgetter("annotator")


def calibrate(
    pairs: Iterable[LabelPair],
    *,
    positive: str = "fail",
    seed: int = 0,
    n_resamples: int = 2000,
    min_pairs: int = MIN_PAIRS,
    threshold: float = KAPPA_THRESHOLD,
    excluded: dict[str, int] | None = None,
) -> CalibrationReport:
    """Calibrate every judge and dimension found in ``pairs`` against the human labels.

    Args:
        pairs: The labelled pairs, any number of judges and dimensions.
        positive: The label precision and recall are about ("fail": the judge's
            catching of failures); nan for a judge whose pairs never carry it.
        seed: Seed of the bootstrap; the same pairs and seed give the same report.
        n_resamples: Bootstrap resamples per judge.
        min_pairs: Pairs a judge needs before it can be ``calibrated``.
        threshold: Kappa a judge needs to be ``calibrated``.
        excluded: Counts of labels left out before pairing, carried into the report.

    Returns:
        The report; a judge with no usable pair is still listed, with nan figures.
    """
    pairs = pairs if isinstance(pairs, Sequence) else list(pairs)
    # One C-level pass counts the cells; everything else is a function of the counts.
    cells = Counter(map(_CELL, pairs))
    several_annotators = len(set(map(_ANNOTATOR, pairs))) > 1
    humans = _human_labels(pairs) if several_annotators else {}
    by_group: dict[tuple[str, str], dict[tuple[str | None, str | None], int]] = {}
    for (judge, dimension, judge_label, human_label), count in cells.items():
        by_group.setdefault((judge, dimension), {})[(judge_label, human_label)] = count
    results = [
        _calibrate_group(
            key, counts, humans.get(key, {}), positive, seed, n_resamples, min_pairs, threshold
        )
        for key, counts in sorted(by_group.items())
    ]
    return CalibrationReport(results, seed, n_resamples, dict(excluded or {}))


def _human_labels(
    pairs: Sequence[LabelPair],
) -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    """Per (judge, dimension): item -> annotator -> the human's label (known labels only)."""
    humans: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for pair in pairs:
        if pair.human_label is not None:
            items = humans.setdefault((pair.judge, pair.dimension), {})
            items.setdefault(pair.item_id, {})[pair.annotator] = pair.human_label
    return humans


def _human_alpha(items: dict[str, dict[str, str]]) -> tuple[float | None, int, int]:
    """Alpha among the annotators, the items it is over and how many annotators there are."""
    annotators = sorted({a for labels in items.values() for a in labels})
    shared = [labels for labels in items.values() if len(labels) >= 2]
    if len(annotators) < 2 or not shared:
        return None, len(shared), len(annotators)
    ratings = [[labels.get(a) for labels in shared] for a in annotators]
    return krippendorff_alpha_nominal(ratings), len(shared), len(annotators)


def _calibrate_group(
    key: tuple[str, str],
    counts: dict[tuple[str | None, str | None], int],
    humans: dict[str, dict[str, str]],
    positive: str,
    seed: int,
    n_resamples: int,
    min_pairs: int,
    threshold: float,
) -> JudgeCalibration:
    judge_abstained = sum(c for (j, _), c in counts.items() if j is None)
    human_unknown = sum(c for (j, h), c in counts.items() if j is not None and h is None)
    paired = {(j, h): c for (j, h), c in counts.items() if j is not None and h is not None}
    # Sorted labels, as scikit-learn orders them, so kappa's arithmetic matches its own.
    labels = tuple(sorted({j for j, _ in paired} | {h for _, h in paired}))
    code = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for (j, h), c in paired.items():
        table[code[j], code[h]] += c
    n = int(table.sum())
    wanted = code.get(positive)
    kappa = kappa_of_table(table) if n else math.nan
    agreement = raw_agreement_of_table(table)
    precision, recall = (
        precision_recall_of_table(table, wanted) if wanted is not None else (math.nan, math.nan)
    )
    intervals = agreement_intervals(table, positive=wanted, n_resamples=n_resamples, seed=seed)
    alpha, n_alpha_items, n_annotators = _human_alpha(humans)
    if not humans:
        n_annotators = 1 if n else 0
    status, reason = calibration_status(kappa, n, min_pairs=min_pairs, threshold=threshold)
    return JudgeCalibration(
        judge=key[0],
        dimension=key[1],
        n_pairs=n,
        n_judge_abstained=judge_abstained,
        n_human_unknown=human_unknown,
        labels=labels,
        positive=positive,
        kappa=Estimate(kappa, *intervals.kappa),
        agreement=Estimate(agreement, *intervals.agreement),
        precision=Estimate(precision, *intervals.precision),
        recall=Estimate(recall, *intervals.recall),
        human_alpha=alpha,
        n_alpha_items=n_alpha_items,
        n_annotators=n_annotators,
        status=status,
        reason=reason,
    )


def pairs_from_annotations(
    annotations: Iterable[Annotation], *, include_propagated: bool = False
) -> tuple[list[LabelPair], dict[str, int]]:
    """The calibration pairs of annotations, and what was left out and why.

    The judge's label is the frozen ruling's verdict (``unknown`` is an abstention), the
    human's is :attr:`Annotation.human_passed`. Notes (no ruling on screen) are never
    evidence; propagated (second-hand) labels are left out unless asked for.

    Returns:
        ``(pairs, excluded)`` where ``excluded`` counts ``notes`` and ``propagated``.
    """
    pairs: list[LabelPair] = []
    excluded = {"notes": 0, "propagated": 0}
    for annotation in annotations:
        ruling = annotation.ruling
        if ruling is None:
            excluded["notes"] += 1
            continue
        if annotation.propagated and not include_propagated:
            excluded["propagated"] += 1
            continue
        human = annotation.human_passed
        pairs.append(
            LabelPair(
                judge_label=None if ruling.verdict == "unknown" else ruling.verdict,
                human_label=None if human is None else ("pass" if human else "fail"),
                judge=ruling.judge,
                dimension=annotation.dimension,
                item_id=annotation.item_id,
                annotator=annotation.annotator,
            )
        )
    return pairs, excluded
