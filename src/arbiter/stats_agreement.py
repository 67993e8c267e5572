"""Agreement between raters: kappa, raw agreement, precision / recall, Krippendorff's alpha.

Pure numpy over *confusion tables*: ``confusion[j, h]`` counts the items the first rater
(a judge) labelled ``j`` and the second (a human) labelled ``h``, labels in sorted order
as scikit-learn orders them. Everything a pair of raters can be asked is a function of
that table, so a bootstrap of it is drawn as multinomial cell counts: the same
distribution as resampling the pairs, at a cost independent of how many pairs there are.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from arbiter.params import invalid

__all__ = [
    "AgreementIntervals",
    "agreement_intervals",
    "confusion_table",
    "kappa_of_table",
    "krippendorff_alpha_nominal",
    "precision_recall_of_table",
    "raw_agreement_of_table",
]


def confusion_table(first: ArrayLike, second: ArrayLike, n_labels: int) -> NDArray[np.int64]:
    """The ``n_labels x n_labels`` table of two raters' integer label codes.

    Args:
        first: Codes (0 .. n_labels - 1) of the first rater (rows).
        second: Codes of the second rater (columns), item for item.
        n_labels: Number of distinct labels.

    Raises:
        ValueError: If the code arrays differ in length.
    """
    rows = np.asarray(first, dtype=np.int64)
    cols = np.asarray(second, dtype=np.int64)
    if rows.shape != cols.shape:
        raise invalid(
            "second",
            "confusion_table",
            f"as long as 'first' ({rows.size})",
            None,
            shown=f"{cols.size} codes",
        )
    cells = np.bincount(rows * n_labels + cols, minlength=n_labels * n_labels)
    return cells.reshape(n_labels, n_labels).astype(np.int64)


def kappa_of_table(confusion: ArrayLike) -> float:
    """Cohen's kappa of a confusion table, nan when undefined.

    The arithmetic and its order are scikit-learn's (``cohen_kappa_score``), so the two
    agree to the last digit when the table's labels are in sorted order.

    Examples:
        >>> kappa_of_table([[2, 0], [1, 1]])
        0.5
    """
    table = np.asarray(confusion, dtype=np.float64)
    n_labels = table.shape[0]
    sum0 = table.sum(axis=0)
    sum1 = table.sum(axis=1)
    if sum0.sum() == 0:
        return math.nan
    expected = np.outer(sum0, sum1) / sum0.sum()
    disagreement = np.ones((n_labels, n_labels)) - np.eye(n_labels)
    expected_disagreement = float(np.sum(disagreement * expected))
    if expected_disagreement == 0.0:
        return math.nan
    return float(1.0 - float(np.sum(disagreement * table)) / expected_disagreement)


def raw_agreement_of_table(confusion: ArrayLike) -> float:
    """The share of items both raters labelled alike (nan for an empty table)."""
    table = np.asarray(confusion, dtype=np.float64)
    total = float(table.sum())
    return float(np.trace(table)) / total if total else math.nan


def precision_recall_of_table(confusion: ArrayLike, positive: int) -> tuple[float, float]:
    """The first rater's precision and recall on label ``positive`` against the second.

    Rows are the predictions (the judge), columns the truth (the human). Either is nan
    when undefined: precision when the judge never said ``positive``, recall when the
    human never did.
    """
    table = np.asarray(confusion, dtype=np.float64)
    hits = float(table[positive, positive])
    said = float(table[positive, :].sum())
    true = float(table[:, positive].sum())
    return (hits / said if said else math.nan, hits / true if true else math.nan)


def _kappas(tables: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kappa of each table of a ``(resamples, L, L)`` stack, nan where undefined."""
    n_labels = tables.shape[1]
    sum0 = tables.sum(axis=1)
    sum1 = tables.sum(axis=2)
    total = sum0.sum(axis=1)
    off = np.ones((n_labels, n_labels)) - np.eye(n_labels)
    expected = np.einsum("ri,rj,ij->r", sum0, sum1, off) / total
    observed = np.einsum("rij,ij->r", tables, off)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - observed / expected, np.nan)


def _ratio(numerator: NDArray[np.float64], denominator: NDArray[np.float64]) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


@dataclass(frozen=True)
class AgreementIntervals:
    """Percentile bootstrap intervals ``(low, high)`` of what a confusion table says.

    An interval is ``(nan, nan)`` when the statistic is undefined in most resamples.
    """

    kappa: tuple[float, float]
    agreement: tuple[float, float]
    precision: tuple[float, float]
    recall: tuple[float, float]


def _interval(values: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size * 2 <= values.size:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return (float(low), float(high))


def agreement_intervals(
    confusion: ArrayLike,
    *,
    positive: int | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgreementIntervals:
    """Bootstrap intervals of kappa, raw agreement, precision and recall, on one set of draws.

    Each resample is a table of multinomial cell counts with the observed cell shares:
    exactly the table of a resample of the pairs with replacement, drawn in
    O(resamples x cells) whatever the number of pairs. Resamples where a statistic is
    undefined are left out of its interval.

    Args:
        confusion: The table (rows the judge, columns the human).
        positive: Code of the label precision and recall are about; None gives nan
            intervals for both.
        n_resamples: Number of resamples.
        confidence: Coverage of the intervals, in (0, 1).
        seed: Seed of ``np.random.default_rng``; the same seed gives the same intervals.

    Raises:
        ValueError: If an argument is out of range.
    """
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise invalid("n_resamples", "agreement_intervals", "an int >= 1", n_resamples)
    if not 0.0 < confidence < 1.0:
        raise invalid("confidence", "agreement_intervals", "in (0, 1)", confidence)
    if not isinstance(seed, int) or seed < 0:
        raise invalid("seed", "agreement_intervals", "an int >= 0", seed)
    table = np.asarray(confusion, dtype=np.int64)
    n_labels = table.shape[0]
    n = int(table.sum())
    nothing = (math.nan, math.nan)
    if n == 0:
        return AgreementIntervals(nothing, nothing, nothing, nothing)
    shares = table.ravel() / n
    draws = np.random.default_rng(seed).multinomial(n, shares, size=n_resamples)
    tables = draws.reshape(n_resamples, n_labels, n_labels).astype(np.float64)
    diagonal = np.trace(tables, axis1=1, axis2=2)
    kappa = _interval(_kappas(tables), confidence)
    agreement = _interval(diagonal / n, confidence)
    if positive is None:
        return AgreementIntervals(kappa, agreement, nothing, nothing)
    hits = tables[:, positive, positive]
    precision = _interval(_ratio(hits, tables[:, positive, :].sum(axis=1)), confidence)
    recall = _interval(_ratio(hits, tables[:, :, positive].sum(axis=1)), confidence)
    return AgreementIntervals(kappa, agreement, precision, recall)


def krippendorff_alpha_nominal(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha for nominal labels, several raters, missing values allowed.

    Args:
        ratings: One row per rater, one column per item (rows of one length); None
            marks an item the rater did not label. Items with fewer than two labels
            are not pairable and are left out.

    Returns:
        Alpha in (-1, 1], or nan when undefined: fewer than two pairable labels, or
        every pairable label the same (no expected disagreement).

    Raises:
        ValueError: If the rows differ in length.

    Examples:
        >>> krippendorff_alpha_nominal([["a", "a", "b"], ["a", "a", "b"]])
        1.0
    """
    lengths = {len(row) for row in ratings}
    if len(lengths) > 1:
        raise invalid(
            "ratings",
            "krippendorff_alpha_nominal",
            "rows of one length",
            None,
            shown=f"lengths {sorted(lengths)}",
        )
    n_items = lengths.pop() if lengths else 0
    units = [[row[i] for row in ratings if row[i] is not None] for i in range(n_items)]
    return _alpha_of_units(units)


def _alpha_of_units(units: Iterable[Sequence[Hashable]]) -> float:
    """Nominal alpha of items given as the labels each received."""
    codes: dict[Hashable, int] = {}
    counted = []
    for labels in units:
        if len(labels) >= 2:
            counted.append([codes.setdefault(label, len(codes)) for label in labels])
    if not counted:
        return math.nan
    counts = np.zeros((len(counted), max(1, len(codes))), dtype=np.float64)
    for row, unit in enumerate(counted):
        np.add.at(counts[row], unit, 1.0)
    pairable = counts.sum(axis=1)
    # Coincidences: each unit contributes its ordered pairs of distinct raters' labels,
    # weighted 1 / (m_u - 1); only the off-diagonal (disagreeing) mass is needed.
    per_label = counts.sum(axis=0)
    n = float(per_label.sum())
    observed = float(np.sum((pairable**2 - np.sum(counts**2, axis=1)) / (pairable - 1.0)))
    expected = (n**2 - float(np.sum(per_label**2))) / (n - 1.0)
    if expected == 0.0:
        return math.nan
    return 1.0 - observed / expected
