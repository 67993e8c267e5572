"""The run page's cuts of a report: a confusion map of bounded size whatever the labels,
its top confusions, and a per-label table of bounded length."""

from __future__ import annotations

import numpy as np
import pytest

from arbiter.contract import ClassificationMetrics, Interval, LabelMetrics
from arbiter.server import charts
from arbiter.server.runs_view import MAP_LABELS, confusion_map, label_rows

_ZERO = LabelMetrics(precision=0.0, recall=0.0, f1=0.0, support=0)


def _metrics(labels: list[str], matrix: np.ndarray) -> ClassificationMetrics:
    per_label = {
        name: LabelMetrics(precision=0, recall=0, f1=0, support=int(matrix[i].sum()))
        for i, name in enumerate(labels)
    }
    return ClassificationMetrics(
        labels=labels,
        n=int(matrix.sum()),
        accuracy=Interval(estimate=0.5, low=0.4, high=0.6, method="wilson", n=int(matrix.sum())),
        per_label=per_label,
        macro=_ZERO,
        micro=_ZERO,
        weighted=_ZERO,
        confusion=matrix.tolist(),
    )


def _many(n: int, seed: int = 7) -> ClassificationMetrics:
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 3, size=(n, n)) * (rng.random((n, n)) < 0.01)
    np.fill_diagonal(matrix, rng.integers(1, 50, size=n))
    return _metrics([f"label-{i:04d}" for i in range(n)], matrix)


def test_a_map_of_two_thousand_labels_draws_the_top_labels_and_one_fold() -> None:
    metrics = _many(2_000)
    cut = confusion_map(metrics)
    assert len(cut.labels) == MAP_LABELS + 1
    assert cut.labels[-1] == "other (1,988 labels)"
    assert cut.folded == 1_988
    assert np.asarray(cut.matrix).shape == (MAP_LABELS + 1, MAP_LABELS + 1)
    assert int(np.asarray(cut.matrix).sum()) == metrics.n  # nothing lost in the fold
    svg = charts.heat_map(cut.labels, cut.matrix)
    assert svg.count('<rect class="track"') == (MAP_LABELS + 1) ** 2


def test_the_drawn_labels_are_the_most_frequent_ones() -> None:
    matrix = np.diag([1, 9, 3, 7, 5]).astype(np.int64)
    cut = confusion_map(_metrics(list("abcde"), matrix), labels=2)
    assert cut.labels == ["b", "d", "other (3 labels)"]
    assert cut.matrix == [[9, 0, 0], [0, 7, 0], [0, 0, 9]]


def test_few_labels_are_drawn_whole_in_their_order() -> None:
    matrix = np.array([[5, 1], [2, 4]])
    cut = confusion_map(_metrics(["x", "y"], matrix))
    assert (cut.labels, cut.matrix, cut.folded) == (["x", "y"], [[5, 1], [2, 4]], 0)


def test_top_confusions_are_the_largest_off_diagonal_cells_of_the_whole_matrix() -> None:
    metrics = _many(300, seed=3)
    full = np.asarray(metrics.confusion)
    cut = confusion_map(metrics, top=5)
    off = full.copy()
    np.fill_diagonal(off, 0)
    assert [c.count for c in cut.top] == sorted(off.ravel().tolist(), reverse=True)[:5]
    first = cut.top[0]
    i, j = metrics.labels.index(first.expected), metrics.labels.index(first.predicted)
    assert i != j
    assert first.count == full[i, j]
    assert first.share == pytest.approx(full[i, j] / full[i].sum())


def test_no_confusion_lists_none() -> None:
    assert confusion_map(_metrics(["a", "b"], np.diag([3, 4]))).top == []


def test_the_per_label_table_keeps_the_most_supported_labels() -> None:
    rows, left_out = label_rows(_many(2_000), limit=50)
    assert len(rows) == 50
    assert left_out == 1_950
    supports = [m.support for _, m in rows]
    assert supports == sorted(supports, reverse=True)
