"""Label-level figures of a run: accuracy, per-label and averaged P/R/F1, confusion.

Every figure equals scikit-learn's (``zero_division=0``) on the same labels, where a
failed call (``None`` prediction) stands for a label outside ``labels``: it is wrong
for accuracy, lowers the recall of its true label and counts towards no label's
precision. One core counts the confusion matrix; everything else derives from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from arbiter.contract import ClassificationMetrics, Interval, LabelMetrics
from arbiter.params import invalid
from arbiter.stats import wilson_interval

__all__ = ["WILDCARD", "apply_label_map", "binary_label_map", "classification_metrics", "map_label"]


@dataclass(frozen=True)
class _Counts:
    """Sufficient statistics of a labelling, over ``labels``."""

    labels: list[str]
    n: int
    correct: int
    confusion: NDArray[np.int64]
    true_count: NDArray[np.int64]
    pred_count: NDArray[np.int64]

    @property
    def tp(self) -> NDArray[np.int64]:
        return np.diagonal(self.confusion)


def _check_labels(labels: Sequence[str]) -> list[str]:
    chosen = list(labels)
    if not chosen or None in chosen or len(set(chosen)) != len(chosen):
        rule = "a non-empty sequence of unique labels"
        raise invalid("labels", "classification_metrics", rule, chosen)
    return chosen


def _count(
    y_true: Sequence[str], y_pred: Sequence[str | None], labels: Sequence[str] | None
) -> _Counts:
    """Factorise both label sequences into codes and count them into one matrix."""
    n = len(y_true)
    if len(y_pred) != n:
        raise ValueError(
            f"y_true and y_pred must have the same length. Got {n} and {len(y_pred)} instead."
        )
    if n == 0:
        raise ValueError("classification_metrics needs at least one prediction. Got none.")
    true_vocab = set(y_true)
    if any(label is None for label in true_vocab):
        raise ValueError(
            "y_true must not contain None: every example needs an expected label "
            "(a failed call is a None in y_pred)."
        )
    pred_vocab = {label for label in set(y_pred) if label is not None}
    seen = true_vocab | pred_vocab
    chosen = sorted(seen) if labels is None else _check_labels(labels)
    # Labels outside ``chosen`` get codes of their own after it, so accuracy still sees
    # them; None (a failed call) gets the last code and never matches a true label.
    # Hashing into a dict of the few distinct labels is an order of magnitude faster
    # than np.unique's sort of a million strings.
    vocab: list[str | None] = [*chosen, *(seen - set(chosen)), None]
    code = {label: i for i, label in enumerate(vocab)}
    size = len(vocab)
    true_codes = np.fromiter(map(code.__getitem__, y_true), dtype=np.intp, count=n)
    pred_codes = np.fromiter(map(code.__getitem__, y_pred), dtype=np.intp, count=n)
    full = np.bincount(true_codes * size + pred_codes, minlength=size * size)
    full = full.reshape(size, size).astype(np.int64, copy=False)
    k = len(chosen)
    return _Counts(
        labels=chosen,
        n=n,
        correct=int(np.trace(full)),
        confusion=full[:k, :k],
        true_count=full[:k, :].sum(axis=1),
        pred_count=full[:, :k].sum(axis=0),
    )


def _divide(
    numerator: NDArray[np.float64], denominator: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Elementwise division with 0 where the denominator is 0 (``zero_division=0``)."""
    zero = denominator == 0
    result = numerator / np.where(zero, 1.0, denominator)
    result[zero] = 0.0
    return result


def _scores(
    tp: NDArray[np.int64], true_count: NDArray[np.int64], pred_count: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Precision, recall and F1 per entry, in scikit-learn's arithmetic."""
    tp_f = tp.astype(np.float64)
    true_f = true_count.astype(np.float64)
    pred_f = pred_count.astype(np.float64)
    precision = _divide(tp_f, pred_f)
    recall = _divide(tp_f, true_f)
    f1 = _divide(2.0 * tp_f, true_f + pred_f)
    return precision, recall, f1


def _metrics_from_counts(counts: _Counts) -> ClassificationMetrics:
    precision, recall, f1 = _scores(counts.tp, counts.true_count, counts.pred_count)
    total_support = int(counts.true_count.sum())
    per_label = {
        label: LabelMetrics(
            precision=float(precision[i]),
            recall=float(recall[i]),
            f1=float(f1[i]),
            support=int(counts.true_count[i]),
        )
        for i, label in enumerate(counts.labels)
    }
    macro = LabelMetrics(
        precision=float(np.mean(precision)),
        recall=float(np.mean(recall)),
        f1=float(np.mean(f1)),
        support=total_support,
    )
    # scikit-learn falls back to the unweighted mean when every support is zero.
    weights = counts.true_count if total_support > 0 else None
    weighted = LabelMetrics(
        precision=float(np.average(precision, weights=weights)),
        recall=float(np.average(recall, weights=weights)),
        f1=float(np.average(f1, weights=weights)),
        support=total_support,
    )
    micro_p, micro_r, micro_f1 = _scores(
        counts.tp.sum(keepdims=True),
        counts.true_count.sum(keepdims=True),
        counts.pred_count.sum(keepdims=True),
    )
    micro = LabelMetrics(
        precision=float(micro_p[0]),
        recall=float(micro_r[0]),
        f1=float(micro_f1[0]),
        support=total_support,
    )
    low, high = wilson_interval(counts.correct, counts.n)
    accuracy = Interval(
        estimate=counts.correct / counts.n, low=low, high=high, method="wilson", n=counts.n
    )
    return ClassificationMetrics(
        labels=counts.labels,
        n=counts.n,
        accuracy=accuracy,
        per_label=per_label,
        macro=macro,
        micro=micro,
        weighted=weighted,
        confusion=counts.confusion.tolist(),
    )


def classification_metrics(
    y_true: Sequence[str],
    y_pred: Sequence[str | None],
    *,
    labels: Sequence[str] | None = None,
) -> ClassificationMetrics:
    """Accuracy, per-label and averaged precision/recall/F1 and the confusion matrix.

    A ``None`` prediction is a failed call: it counts wrong for accuracy, lowers the
    recall of its true label and counts towards no label's precision. Each figure
    equals scikit-learn's with ``zero_division=0`` and ``labels=labels`` when every
    ``None`` is replaced by a string outside ``labels``.

    Args:
        y_true: Expected labels.
        y_pred: Predicted labels, item for item; None where the call failed.
        labels: Labels to report, in matrix order. Defaults to the sorted union of the
            expected and the (non-None) predicted labels. Pairs whose labels fall
            outside still count for accuracy and ``n``.

    Returns:
        The figures; averages carry the total support of ``labels``, and accuracy a
        Wilson interval over all pairs.

    Raises:
        ValueError: If the inputs are empty or differ in length, ``y_true`` holds
            None, or ``labels`` is empty or repeats a label.

    Examples:
        >>> m = classification_metrics(["a", "b", "b"], ["a", "b", None])
        >>> m.accuracy.estimate, m.per_label["b"].recall, m.per_label["b"].precision
        (0.6666666666666666, 0.5, 1.0)
    """
    return _metrics_from_counts(_count(y_true, y_pred, labels))


def apply_label_map(labels: Sequence[str | None], label_map: Mapping[str, str]) -> list[str | None]:
    """Translate labels through a map (see :func:`map_label`); None stays None.

    Args:
        labels: Labels to translate.
        label_map: Old label → new label; the key ``"*"`` catches every other label.

    Returns:
        The translated labels, in order.

    Examples:
        >>> apply_label_map(["low", "high", None, "odd"], {"low": "safe", "high": "threat"})
        ['safe', 'threat', None, 'odd']
    """
    return [None if label is None else map_label(label, label_map) for label in labels]


WILDCARD = "*"
"""Key of a label map that catches every label the map does not name."""


def map_label(label: str, label_map: Mapping[str, str]) -> str:
    """One label through a map: its own entry, else the ``"*"`` entry, else unchanged.

    Examples:
        >>> map_label("critical", {"low": "low", "*": "high"})
        'high'
    """
    return label_map.get(label, label_map.get(WILDCARD, label))


def binary_label_map(
    vocabulary: Iterable[str], *, negative: str = "low", positive: str = "high"
) -> dict[str, str]:
    """A map collapsing a graded vocabulary to two labels: exactly ``negative`` or not.

    Args:
        vocabulary: The labels to map.
        negative: The one label that stays negative; everything else is positive.
        positive: The label every other entry maps to.

    Returns:
        ``{label: negative if label == negative else positive}`` for each label.

    Raises:
        ValueError: If ``negative`` equals ``positive``.

    Examples:
        >>> binary_label_map(["low", "medium", "high", "critical"])
        {'low': 'low', 'medium': 'high', 'high': 'high', 'critical': 'high'}
    """
    if negative == positive:
        raise ValueError(
            "The 'negative' and 'positive' parameters of binary_label_map must differ. "
            f"Got {negative!r} for both."
        )
    return {label: negative if label == negative else positive for label in vocabulary}
