"""classification_metrics must equal scikit-learn figure for figure.

A None prediction (a failed call) is handed to scikit-learn as a sentinel string that
is not among the reported labels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics import (
    accuracy_score,
    classification_report,
    confusion_matrix,
    precision_recall_fscore_support,
)

from arbiter.contract import ClassificationMetrics
from arbiter.scoring import metrics as metrics_module
from arbiter.scoring.metrics import apply_label_map, binary_label_map, classification_metrics
from arbiter.stats import wilson_interval

SENTINEL = "<no prediction>"
POOL = ["critical", "high", "low", "medium", "none"]
RTOL = 1e-14

# scikit-learn warns about single-label inputs that these tests build on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")


def _with_sentinel(y_pred: Sequence[str | None]) -> list[str]:
    return [SENTINEL if p is None else p for p in y_pred]


def assert_matches_sklearn(
    y_true: list[str], y_pred: list[str | None], labels: list[str] | None = None
) -> ClassificationMetrics:
    ours = classification_metrics(y_true, y_pred, labels=labels)
    expected_labels = (
        labels if labels is not None else sorted(set(y_true) | {p for p in y_pred if p is not None})
    )
    y_sk = _with_sentinel(y_pred)
    assert ours.labels == expected_labels
    assert ours.n == len(y_true)

    assert ours.accuracy.estimate == accuracy_score(y_true, y_sk)
    correct = sum(t == p for t, p in zip(y_true, y_pred, strict=True))
    assert (ours.accuracy.low, ours.accuracy.high) == wilson_interval(correct, len(y_true))
    assert ours.accuracy.method == "wilson"
    assert ours.accuracy.n == len(y_true)

    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_sk, labels=expected_labels, average=None, zero_division=0
    )
    per_label = [ours.per_label[label] for label in expected_labels]
    assert list(ours.per_label) == expected_labels
    assert_allclose([m.precision for m in per_label], precision, rtol=RTOL)
    assert_allclose([m.recall for m in per_label], recall, rtol=RTOL)
    assert_allclose([m.f1 for m in per_label], f1, rtol=RTOL)
    assert_array_equal([m.support for m in per_label], support)

    for average in ("macro", "micro", "weighted"):
        figures = getattr(ours, average)
        sk = precision_recall_fscore_support(
            y_true, y_sk, labels=expected_labels, average=average, zero_division=0
        )
        assert_allclose([figures.precision, figures.recall, figures.f1], sk[:3], rtol=RTOL)
        assert figures.support == int(support.sum())

    if set(expected_labels) & set(y_true):  # scikit-learn refuses the matrix otherwise
        assert_array_equal(ours.confusion, confusion_matrix(y_true, y_sk, labels=expected_labels))
    return ours


@st.composite
def labellings(draw: st.DrawFn) -> tuple[list[str], list[str | None]]:
    """Ground truth and predictions over small vocabularies, with failed calls."""
    true_vocab = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=5, unique=True))
    # Predicted vocabulary may miss true labels (never predicted) and add others
    # (predicted but never true).
    pred_vocab: list[str | None] = [
        *draw(st.lists(st.sampled_from(POOL), max_size=5, unique=True)),
        None,
    ]
    n = draw(st.integers(min_value=1, max_value=200))
    y_true = draw(st.lists(st.sampled_from(true_vocab), min_size=n, max_size=n))
    mode = draw(st.sampled_from(["random", "all_right", "all_wrong", "mostly_right"]))
    if mode == "all_right":
        return y_true, list(y_true)
    if mode == "all_wrong":
        wrong = [[p for p in pred_vocab if p != t] for t in y_true]
        return y_true, [draw(st.sampled_from(options)) for options in wrong]
    y_pred = draw(st.lists(st.sampled_from(pred_vocab), min_size=n, max_size=n))
    if mode == "mostly_right":
        keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        y_pred = [t if k else p for t, p, k in zip(y_true, y_pred, keep, strict=True)]
    return y_true, y_pred


@settings(max_examples=150, deadline=None)
@given(labelling=labellings())
def test_every_figure_equals_sklearn(labelling: tuple[list[str], list[str | None]]) -> None:
    assert_matches_sklearn(*labelling)


@settings(max_examples=80, deadline=None)
@given(
    labelling=labellings(),
    labels=st.lists(st.sampled_from([*POOL, "unseen"]), min_size=1, max_size=6, unique=True),
)
def test_every_figure_equals_sklearn_with_explicit_labels(
    labelling: tuple[list[str], list[str | None]], labels: list[str]
) -> None:
    assert_matches_sklearn(*labelling, labels=labels)


@settings(max_examples=40, deadline=None)
@given(labelling=labellings(), seed=st.integers(min_value=0, max_value=2**16))
def test_figures_do_not_depend_on_pair_order(
    labelling: tuple[list[str], list[str | None]], seed: int
) -> None:
    pairs = list(zip(*labelling, strict=True))
    random.Random(seed).shuffle(pairs)
    y_true, y_pred = (list(x) for x in zip(*pairs, strict=True))
    shuffled = classification_metrics(y_true, y_pred)
    original = classification_metrics(*labelling)
    # Summation order may differ in the last bit of the averages only.
    assert shuffled.confusion == original.confusion
    assert shuffled.accuracy == original.accuracy
    assert shuffled.per_label == original.per_label


@pytest.mark.parametrize(
    ("y_true", "y_pred", "labels", "expected"),
    [
        pytest.param(
            ["a", "a", "b"],
            ["a", "a", "a"],
            None,
            {"b": (0.0, 0.0, 0.0, 1)},
            id="label-never-predicted-has-zero-precision",
        ),
        pytest.param(
            ["a", "a"],
            ["a", "b"],
            None,
            {"b": (0.0, 0.0, 0.0, 0)},
            id="label-predicted-but-never-true-has-zero-recall",
        ),
        pytest.param(
            ["a", "b", "b"],
            [None, None, None],
            None,
            {"a": (0.0, 0.0, 0.0, 1), "b": (0.0, 0.0, 0.0, 2)},
            id="every-call-failed",
        ),
        pytest.param(
            ["a", "b", "b"],
            ["a", "b", None],
            None,
            {"a": (1.0, 1.0, 1.0, 1), "b": (1.0, 0.5, 2 / 3, 2)},
            id="failed-call-lowers-recall-not-precision",
        ),
        pytest.param(
            ["a", "a"],
            ["a", "a"],
            None,
            {"a": (1.0, 1.0, 1.0, 2)},
            id="single-label-all-right",
        ),
        pytest.param(
            ["a", "b"],
            ["a", "b"],
            ["a", "b", "z"],
            {"z": (0.0, 0.0, 0.0, 0)},
            id="explicit-label-never-seen",
        ),
        pytest.param(
            ["a", "b"],
            ["b", "a"],
            ["z"],
            {"z": (0.0, 0.0, 0.0, 0)},
            id="explicit-labels-all-absent-from-truth",
        ),
    ],
)
def test_zero_division_cases_are_zero_and_match_sklearn(
    y_true: list[str],
    y_pred: list[str | None],
    labels: list[str] | None,
    expected: dict[str, tuple[float, float, float, int]],
) -> None:
    ours = assert_matches_sklearn(y_true, y_pred, labels)
    for label, (precision, recall, f1, support) in expected.items():
        figures = ours.per_label[label]
        assert figures.precision == precision
        assert figures.recall == recall
        assert figures.f1 == pytest.approx(f1)
        assert figures.support == support


def test_failed_call_counts_wrong_for_accuracy() -> None:
    ours = classification_metrics(["a", "b", "b", "a"], ["a", "b", None, None])
    assert ours.accuracy.estimate == 0.5
    assert ours.labels == ["a", "b"]
    assert ours.confusion == [[1, 0], [0, 1]]


def test_pairs_outside_explicit_labels_still_count_for_accuracy() -> None:
    ours = classification_metrics(["a", "x", "x"], ["a", "x", "y"], labels=["a"])
    assert ours.accuracy.estimate == pytest.approx(2 / 3)
    assert ours.n == 3
    assert ours.confusion == [[1]]


def test_average_support_is_total_support_as_in_classification_report() -> None:
    y_true = ["low", "high", "high", "medium", "low"]
    y_pred: list[str | None] = ["low", "low", None, "medium", "high"]
    ours = classification_metrics(y_true, y_pred)
    report = classification_report(
        y_true, _with_sentinel(y_pred), labels=ours.labels, output_dict=True, zero_division=0
    )
    for average in ("macro", "weighted", "micro"):
        sk = report[f"{average} avg"]
        figures = getattr(ours, average)
        assert figures.support == sk["support"] == 5
        assert_allclose(
            [figures.precision, figures.recall, figures.f1],
            [sk["precision"], sk["recall"], sk["f1-score"]],
            rtol=RTOL,
        )


def test_accepts_numpy_arrays() -> None:
    y_true = np.array(["a", "b", "b"])
    y_pred = np.array(["a", "a", "b"], dtype=object)
    ours = classification_metrics(y_true, y_pred)  # type: ignore[arg-type]
    assert ours.labels == ["a", "b"]
    assert ours.confusion == [[1, 0], [1, 1]]


@pytest.mark.parametrize(
    ("y_true", "y_pred", "labels", "message"),
    [
        (["a", "b"], ["a"], None, "y_true and y_pred must have the same length. Got 2 and 1"),
        ([], [], None, "at least one prediction"),
        (["a", None], ["a", "a"], None, "y_true must not contain None"),
        (["a"], ["a"], [], "The 'labels' parameter of classification_metrics"),
        (["a"], ["a"], ["a", "a"], "The 'labels' parameter of classification_metrics"),
    ],
)
def test_rejects_invalid_input(
    y_true: list[str | None],
    y_pred: list[str | None],
    labels: list[str] | None,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        classification_metrics(y_true, y_pred, labels=labels)  # type: ignore[arg-type]


def test_public_surface_is_sorted_and_complete() -> None:
    assert metrics_module.__all__ == sorted(metrics_module.__all__)
    assert set(metrics_module.__all__) == {
        "WILDCARD",
        "map_label",
        "apply_label_map",
        "binary_label_map",
        "classification_metrics",
    }


# --- label maps ---------------------------------------------------------------------


def test_apply_label_map_passes_unmapped_labels_and_none_through() -> None:
    mapped = apply_label_map(["low", "high", None, "odd"], {"low": "safe", "high": "threat"})
    assert mapped == ["safe", "threat", None, "odd"]


def test_apply_label_map_with_empty_map_is_identity_copy() -> None:
    labels: list[str | None] = ["a", None]
    mapped = apply_label_map(labels, {})
    assert mapped == labels
    assert mapped is not labels


def test_binary_label_map_keeps_only_exact_negative_negative() -> None:
    vocabulary = ["low", "medium", "high", "critical", "Low", "low "]
    assert binary_label_map(vocabulary) == {
        "low": "low",
        "medium": "high",
        "high": "high",
        "critical": "high",
        "Low": "high",
        "low ": "high",
    }


def test_binary_label_map_with_custom_names() -> None:
    assert binary_label_map(
        ["benign", "suspicious", "malicious"], negative="benign", positive="threat"
    ) == {
        "benign": "benign",
        "suspicious": "threat",
        "malicious": "threat",
    }


def test_binary_label_map_rejects_identical_names() -> None:
    with pytest.raises(ValueError, match="must differ"):
        binary_label_map(["a"], negative="a", positive="a")


def test_binary_mapped_metrics_equal_sklearn_on_mapped_labels() -> None:
    y_true = ["low", "medium", "high", "critical", "low"]
    y_pred: list[str | None] = ["low", "high", "critical", None, "medium"]
    mapping = binary_label_map(POOL)
    mapped_true = apply_label_map(y_true, mapping)
    mapped_pred = apply_label_map(y_pred, mapping)
    assert mapped_true == ["low", "high", "high", "high", "low"]
    assert mapped_pred == ["low", "high", "high", None, "high"]
    ours = assert_matches_sklearn([t for t in mapped_true if t is not None], mapped_pred)
    assert ours.labels == ["high", "low"]
    assert ours.accuracy.estimate == pytest.approx(3 / 5)


@pytest.mark.parametrize(
    ("label", "expected"),
    [("low", "low"), ("medium", "high"), ("critical", "high"), ("high", "high")],
)
def test_wildcard_entry_catches_every_unnamed_label(label: str, expected: str) -> None:
    from arbiter.scoring.metrics import map_label

    assert map_label(label, {"low": "low", "*": "high"}) == expected
    assert map_label(label, {"low": "low"}) == label  # no wildcard: unchanged
