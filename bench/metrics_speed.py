"""Speed of classification_metrics against scikit-learn's classification_report.

Run: ``python bench/metrics_speed.py [n]``. Builds n (default 1,000,000) string label
pairs over a 5-label vocabulary with a fixed seed (1% failed calls), times both in
this process (best of 3), checks the figures agree and prints the ratio ours/sklearn
against the target. A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from sklearn.metrics import classification_report

from arbiter.contract import ClassificationMetrics
from arbiter.scoring.metrics import classification_metrics

VOCABULARY = ["critical", "high", "low", "medium", "none"]
SENTINEL = "<no prediction>"
TARGET_RATIO = 0.5
REPEATS = 3
SEED = 20240611

T = TypeVar("T")


def best_of(fn: Callable[[], T], repeats: int = REPEATS) -> tuple[float, T]:
    """Fastest wall time of ``repeats`` calls, and the last result."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def build_labels(n: int) -> tuple[list[str], list[str | None]]:
    rng = np.random.default_rng(SEED)
    vocab = np.array(VOCABULARY)
    y_true = vocab[rng.integers(0, len(VOCABULARY), n)]
    # 70% right, the rest a random label; 1% of calls fail (None).
    y_pred = np.where(rng.random(n) < 0.7, y_true, vocab[rng.integers(0, len(VOCABULARY), n)])
    failed = rng.random(n) < 0.01
    predictions: list[str | None] = list(y_pred.tolist())
    for i in np.flatnonzero(failed):
        predictions[i] = None
    return y_true.tolist(), predictions


def figures_agree(ours: ClassificationMetrics, sk: dict[str, Any], labels: list[str]) -> bool:
    """Whether every per-label and averaged figure equals the report's."""
    pairs: list[tuple[float, float]] = []
    for label in labels:
        m, s = ours.per_label[label], sk[label]
        pairs += [(m.precision, s["precision"]), (m.recall, s["recall"])]
        pairs += [(m.f1, s["f1-score"]), (m.support, s["support"])]
    for ours_avg, sk_avg in (
        (ours.macro, "macro avg"),
        (ours.micro, "micro avg"),
        (ours.weighted, "weighted avg"),
    ):
        s = sk[sk_avg]
        pairs += [(ours_avg.precision, s["precision"]), (ours_avg.recall, s["recall"])]
        pairs += [(ours_avg.f1, s["f1-score"]), (ours_avg.support, s["support"])]
    a, b = np.array(pairs).T
    return bool(np.allclose(a, b, rtol=1e-12, atol=0.0))


def main(n: int = 1_000_000) -> int:
    y_true, y_pred = build_labels(n)
    y_sk = [SENTINEL if p is None else p for p in y_pred]
    labels = sorted(VOCABULARY)

    ours_s, ours = best_of(lambda: classification_metrics(y_true, y_pred))
    sk_s, sk = best_of(
        lambda: classification_report(
            y_true, y_sk, labels=labels, output_dict=True, zero_division=0
        )
    )
    agree = figures_agree(ours, sk, labels)
    ratio = ours_s / sk_s
    verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
    print(f"labels: {n:,} pairs over {len(VOCABULARY)} labels, 1% failed calls")
    print(f"ours    classification_metrics : {ours_s * 1000:9.1f} ms (best of {REPEATS})")
    print(f"sklearn classification_report  : {sk_s * 1000:9.1f} ms (best of {REPEATS})")
    print(f"figures agree                  : {'yes' if agree else 'NO'}")
    print(f"ratio ours/sklearn             : {ratio:9.3f}  target <= {TARGET_RATIO}  {verdict}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000))
