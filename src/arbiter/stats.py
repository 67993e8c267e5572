"""Honest statistics: intervals, resampling, paired tests, pass^k, agreement, calibration.

Pure numpy functions with no state. Every resampling takes its seed as a parameter,
so the same inputs and seed give the same interval on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from arbiter.params import NumberRange, check, check_number, invalid

__all__ = [
    "bootstrap_ci",
    "bootstrap_cis",
    "cohen_kappa",
    "expected_calibration_error",
    "mcnemar_exact",
    "paired_bootstrap_diff",
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
]

# Upper bound on elements materialised per batch of resamples (~4 MB of float64): large
# enough to stay vectorised, small enough for the allocator to reuse the memory instead
# of faulting in fresh pages per batch (3x faster cold). The draws do not depend on it.
_MAX_RESAMPLED_ELEMENTS = 500_000


def _check_int(value: object, name: str, func: str, *, minimum: int) -> int:
    """``value`` as an int, or an ``InvalidParameter`` (a ValueError) in the one wording."""
    return int(check_number(value, name, func, minimum=minimum, integer=True))


def _check_confidence(confidence: object, func: str) -> float:
    rule = NumberRange(0.0, 1.0, open_min=True, open_max=True)
    return float(check(confidence, "confidence", func, rule))


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Args:
        successes: Number of successes, within ``[0, n]``.
        n: Number of trials.
        confidence: Coverage of the interval, in (0, 1).

    Returns:
        ``(low, high)`` within [0, 1]. With ``n == 0`` nothing is known: ``(0.0, 1.0)``.
        The bound at an observed extreme is exact (0 successes → low is 0.0; all
        successes → high is 1.0).

    Raises:
        ValueError: If an argument is out of range.

    Examples:
        >>> low, high = wilson_interval(5, 10)
        >>> round(low, 4), round(high, 4)
        (0.2366, 0.7634)
    """
    n = _check_int(n, "n", "wilson_interval", minimum=0)
    successes = _check_int(successes, "successes", "wilson_interval", minimum=0)
    if successes > n:
        raise invalid("successes", "wilson_interval", f"an int in the range [0, n={n}]", successes)
    confidence = _check_confidence(confidence, "wilson_interval")
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    z2 = z * z
    p = successes / n
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half_width = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == n else min(1.0, centre + half_width)
    return low, high


def bootstrap_ci(
    values: ArrayLike,
    *,
    statistic: Callable[..., Any] = np.mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a statistic, resampling along the first axis.

    Rows of ``values`` are the resampled units (clusters): pass an
    ``(examples, repetitions)`` array to resample whole examples with all their
    repetitions.

    Args:
        values: The sample; its first axis indexes the units.
        statistic: A numpy-style reduction called as ``statistic(x, axis=axes)`` on a
            batch ``x`` of shape ``(batch, n, ...)`` with ``axes = (1, ..., x.ndim - 1)``;
            it must return one value per resample (``np.mean``, ``np.median`` do).
        n_resamples: Number of bootstrap resamples.
        confidence: Coverage of the interval, in (0, 1).
        seed: Seed of ``np.random.default_rng``; the same seed gives the same interval.

    Returns:
        ``(low, high)``. An empty sample gives ``(nan, nan)``; a constant sample gives
        a zero-width interval.

    Raises:
        ValueError: If an argument is out of range or ``values`` is a scalar.

    Examples:
        >>> bootstrap_ci([1.0, 1.0, 1.0])
        (1.0, 1.0)
    """
    (interval,) = bootstrap_cis(
        [values], statistic=statistic, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    return interval


def bootstrap_cis(
    samples: Sequence[ArrayLike],
    *,
    statistic: Callable[..., Any] = np.mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of several samples of one length, on one set of draws.

    Each interval equals ``bootstrap_ci(sample, ...)`` with the same seed (the units are
    resampled with the same indices either way); drawing them once is the saving.

    The mean of a 1-D sample with few distinct values (pass/fail outcomes, shares of k
    repetitions: at most 4,096 and at most an eighth of the units) is resampled as
    multinomial counts of those values, which is the same bootstrap distribution at a
    cost independent of the sample size (100,000 units: milliseconds, not seconds).

    Raises:
        ValueError: If an argument is out of range, a sample is a scalar, or the samples
            differ in length.
    """
    n_resamples = _check_int(n_resamples, "n_resamples", "bootstrap_ci", minimum=1)
    confidence = _check_confidence(confidence, "bootstrap_ci")
    seed = _check_int(seed, "seed", "bootstrap_ci", minimum=0)
    arrays = [np.asarray(values) for values in samples]
    for values, data in zip(samples, arrays, strict=True):
        if data.ndim == 0:
            raise invalid("values", "bootstrap_ci", "an array", values, shown="a scalar")
    lengths = {data.shape[0] for data in arrays}
    if len(lengths) > 1:
        raise invalid("samples", "bootstrap_cis", "samples of one length", sorted(lengths))
    n = lengths.pop() if lengths else 0
    if n == 0:
        return [(math.nan, math.nan) for _ in arrays]
    estimates: list[np.ndarray[Any, Any]] = [np.empty(0)] * len(arrays)
    resampled = []
    for position, data in enumerate(arrays):
        counted = _distinct_counts(data, n) if statistic is np.mean else None
        if counted is None:
            resampled.append(position)
        else:
            # The mean of a resample depends only on how often each distinct value is
            # drawn, which is multinomial: the same bootstrap distribution, drawn in
            # O(resamples x distinct values) instead of O(resamples x n).
            values, counts = counted
            draws = np.random.default_rng(seed).multinomial(n, counts / n, size=n_resamples)
            estimates[position] = draws @ values / n
    if resampled:
        rng = np.random.default_rng(seed)
        chosen = [arrays[i] for i in resampled]
        row_size = max(max(1, data[0].size) for data in chosen)
        batch = max(1, _MAX_RESAMPLED_ELEMENTS // (n * row_size))
        outs = [np.empty(n_resamples, dtype=np.float64) for _ in chosen]
        for start in range(0, n_resamples, batch):
            stop = min(start + batch, n_resamples)
            indices = rng.integers(0, n, size=(stop - start, n))
            for data, out in zip(chosen, outs, strict=True):
                out[start:stop] = statistic(data[indices], axis=tuple(range(1, data.ndim + 1)))
        for i, out in zip(resampled, outs, strict=True):
            estimates[i] = out
    tail = (1.0 - confidence) / 2.0
    intervals = []
    for out in estimates:
        low, high = np.quantile(out, [tail, 1.0 - tail])
        intervals.append((float(low), float(high)))
    return intervals


_MAX_DISTINCT = 4_096
"""Distinct values up to which a mean's bootstrap is drawn as multinomial counts."""


def _distinct_counts(
    data: np.ndarray[Any, Any], n: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The distinct values of a 1-D numeric sample and their counts, when there are few
    enough of them (and far fewer than units) for the multinomial draw to be cheaper."""
    if data.ndim != 1 or data.dtype.kind not in "biuf" or n < 64:
        return None
    values, counts = np.unique(data, return_counts=True)
    if values.size > min(_MAX_DISTINCT, n // 8):
        return None
    return values.astype(np.float64), counts.astype(np.float64)


def paired_bootstrap_diff(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean paired difference ``b - a`` with a bootstrap interval over paired units.

    Args:
        a: Scores of the baseline, one row per unit.
        b: Scores of the candidate, the same shape as ``a``, row for row.
        n_resamples: Number of bootstrap resamples.
        confidence: Coverage of the interval, in (0, 1).
        seed: Seed of the resampling.

    Returns:
        ``(mean(b - a), low, high)``; all three are nan for empty input.

    Raises:
        ValueError: If the shapes differ or an argument is out of range.
    """
    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    if first.shape != second.shape:
        raise ValueError(
            "The 'a' and 'b' parameters of paired_bootstrap_diff must have the same shape. "
            f"Got {first.shape} and {second.shape} instead."
        )
    diff = second - first
    low, high = bootstrap_ci(diff, n_resamples=n_resamples, confidence=confidence, seed=seed)
    if diff.size == 0:
        return math.nan, low, high
    return float(np.mean(diff)), low, high


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar test on the discordant pairs of a paired comparison.

    With ``b`` units that passed only in the first condition and ``c`` only in the
    second, under the null hypothesis (no change) each discordant unit is a fair coin:
    the p-value is ``min(1, 2 * P(X <= min(b, c)))`` for ``X ~ Binomial(b + c, 1/2)``.
    Equals ``statsmodels.stats.contingency_tables.mcnemar(table, exact=True).pvalue``.
    Computed in log space, so it stays exact to double precision for any counts
    (``b + c`` in the millions) without overflow.

    Args:
        b: Units that passed in the first condition only, ``>= 0``.
        c: Units that passed in the second condition only, ``>= 0``.

    Returns:
        The p-value in (0, 1]; 1.0 when there is no discordant pair.

    Raises:
        ValueError: If a count is negative or not an int.

    Examples:
        >>> mcnemar_exact(0, 5)
        0.0625
        >>> mcnemar_exact(3, 3)
        1.0
    """
    b = _check_int(b, "b", "mcnemar_exact", minimum=0)
    c = _check_int(c, "c", "mcnemar_exact", minimum=0)
    n, low = b + c, min(b, c)
    if 2 * low >= n:  # the tail holds half the mass or more: p is capped at 1
        return 1.0
    # P(X <= low) = C(n, low) / 2^n * sum over i <= low of C(n, i) / C(n, low). The ratios
    # come from C(n, i - 1) / C(n, i) = i / (n - i + 1) < 1, so the sum is of terms that
    # shrink from 1 and is computed without overflow; only C(n, low) needs logs.
    i = np.arange(low, 0, -1, dtype=np.float64)
    relative_sum = 1.0 + float(np.cumprod(i / (n - i + 1.0)).sum())
    log_p = math.log(2.0) + _log_half_binomial_pmf(low, n) + math.log(relative_sum)
    return min(1.0, math.exp(log_p))


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirling_error(n: int) -> float:
    """``log(n!) - log(sqrt(2 pi n) (n / e)^n)``, accurate to double precision (Loader)."""
    if n <= 15:  # small enough for lgamma not to lose digits to the subtraction
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LOG_SQRT_2PI
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    nn = float(n) * n
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """``x log(x / mean) + mean - x``, without cancellation when ``x`` is near ``mean``."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total, term, j = (x - mean) * v, 2.0 * x * v, 1
        while True:
            term *= v * v
            updated = total + term / (2 * j + 1)
            if updated == total:
                return total
            total, j = updated, j + 1
    return x * math.log(x / mean) + mean - x


def _log_half_binomial_pmf(x: int, n: int) -> float:
    """``log P(X = x)`` for ``X ~ Binomial(n, 1/2)``, ``0 <= x <= n`` (Loader's saddle point,
    as R's ``dbinom``: no ``log(n!)`` differences to lose digits to)."""
    if x in (0, n):
        return -n * math.log(2.0)
    half = n / 2.0
    log_core = (
        _stirling_error(n)
        - _stirling_error(x)
        - _stirling_error(n - x)
        - _deviance(x, half)
        - _deviance(n - x, half)
    )
    return log_core + 0.5 * math.log(n / (2.0 * math.pi * x * (n - x)))


def _check_trials(
    num_trials: ArrayLike, num_correct: ArrayLike, k: int, func: str
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    k = _check_int(k, "k", func, minimum=1)
    arrays: list[NDArray[np.int64]] = []
    for name, raw in (("num_trials", num_trials), ("num_correct", num_correct)):
        array = np.asarray(raw)
        if array.size and (array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer)):
            raise invalid(name, func, "an array of ints", raw, shown=f"dtype {array.dtype}")
        arrays.append(array.astype(np.int64))
    try:
        trials, correct = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = f"{arrays[0].shape} against num_trials {arrays[1].shape}"
        raise invalid(
            "num_correct", func, "an array of num_trials' shape", num_correct, shown=shapes
        ) from None
    trials, correct = trials.ravel(), correct.ravel()
    if trials.size == 0:
        raise invalid("num_trials", func, "an array of at least one task", num_trials, shown="[]")
    if np.any(correct < 0) or np.any(correct > trials):
        raise invalid(
            "num_correct", func, "an array whose entries lie in [0, num_trials]", num_correct
        )
    if np.any(trials < k):
        rule = f"at most every task's num_trials (smallest: {int(trials.min())})"
        raise invalid("k", func, rule, k)
    return trials, correct, k


def _ratio_of_combinations(
    top: NDArray[np.int64], n: NDArray[np.int64], k: int
) -> NDArray[np.float64]:
    """``C(top, k) / C(n, k)`` elementwise, as a product that never overflows."""
    ratio = np.ones(top.shape, dtype=np.float64)
    for i in range(k):
        ratio *= np.maximum(top - i, 0) / (n - i)
    return ratio


def pass_hat_k(num_trials: ArrayLike, num_correct: ArrayLike, k: int) -> float:
    """Unbiased pass^k: the chance that k trials of a task, drawn without replacement, all pass.

    The mean over tasks of ``C(c, k) / C(n, k)`` (τ-bench). With ``k == n`` it is the
    share of tasks correct on every trial.

    Args:
        num_trials: Trials per task (``n``); a scalar applies to every task.
        num_correct: Correct trials per task (``c``), within ``[0, n]``.
        k: Number of trials that must all pass, within ``[1, min(n)]``.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: If the arrays are empty, mismatched or out of range, or ``k`` is.

    Examples:
        >>> round(pass_hat_k([4, 4], [4, 2], k=2), 4)
        0.5833
    """
    trials, correct, k = _check_trials(num_trials, num_correct, k, "pass_hat_k")
    return float(np.mean(_ratio_of_combinations(correct, trials, k)))


def pass_at_k(num_trials: ArrayLike, num_correct: ArrayLike, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k trials of a task passes.

    The mean over tasks of ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021).

    Args:
        num_trials: Trials per task (``n``); a scalar applies to every task.
        num_correct: Correct trials per task (``c``), within ``[0, n]``.
        k: Number of trials drawn, within ``[1, min(n)]``.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: If the arrays are empty, mismatched or out of range, or ``k`` is.

    Examples:
        >>> round(pass_at_k([4, 4], [0, 2], k=2), 4)
        0.4167
    """
    trials, correct, k = _check_trials(num_trials, num_correct, k, "pass_at_k")
    return float(np.mean(1.0 - _ratio_of_combinations(trials - correct, trials, k)))


def _as_1d(values: ArrayLike, name: str, func: str) -> NDArray[Any]:
    array = np.asarray(values)
    if array.ndim != 1:
        raise invalid(name, func, "one-dimensional", values, shown=f"shape {array.shape}")
    return array


def _check_paired(
    first: NDArray[Any], second: NDArray[Any], names: tuple[str, str], func: str
) -> None:
    if first.shape[0] != second.shape[0]:
        rule = f"as long as {names[0]!r} ({first.shape[0]} items)"
        raise invalid(names[1], func, rule, None, shown=f"{second.shape[0]} items")
    if first.shape[0] == 0:
        raise invalid(names[0], func, "a non-empty array", None, shown="an empty one")


def cohen_kappa(a: ArrayLike, b: ArrayLike, *, replace_undefined_by: float = math.nan) -> float:
    """Cohen's kappa between two raters' nominal labels.

    Equals ``sklearn.metrics.cohen_kappa_score(a, b)`` (unweighted).

    Args:
        a: Labels of the first rater.
        b: Labels of the second rater, item for item.
        replace_undefined_by: Returned when kappa is undefined, i.e. the expected
            agreement is 1 because both raters gave one and the same label to every
            item. nan by default, as in scikit-learn.

    Returns:
        Kappa in [-1, 1], or ``replace_undefined_by``.

    Raises:
        ValueError: If the inputs are empty, not one-dimensional or differ in length.

    Examples:
        >>> cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"])
        0.5
    """
    first = _as_1d(a, "a", "cohen_kappa")
    second = _as_1d(b, "b", "cohen_kappa")
    _check_paired(first, second, ("a", "b"), "cohen_kappa")
    _, codes = np.unique(np.concatenate([first, second]), return_inverse=True)
    codes = codes.ravel()
    n_labels = int(codes.max()) + 1
    n = first.shape[0]
    confusion = (
        np.bincount(codes[:n] * n_labels + codes[n:], minlength=n_labels * n_labels)
        .reshape(n_labels, n_labels)
        .astype(np.float64)
    )
    # Same arithmetic and order as scikit-learn, so the two agree to the last digit.
    sum0 = confusion.sum(axis=0)
    sum1 = confusion.sum(axis=1)
    expected = np.outer(sum0, sum1) / sum0.sum()
    disagreement = np.ones((n_labels, n_labels)) - np.eye(n_labels)
    expected_disagreement = float(np.sum(disagreement * expected))
    if expected_disagreement == 0.0:
        return float(replace_undefined_by)
    return float(1.0 - float(np.sum(disagreement * confusion)) / expected_disagreement)


def expected_calibration_error(
    confidences: ArrayLike, correct: ArrayLike, *, n_bins: int = 10
) -> float:
    """Expected calibration error over equal-width confidence bins.

    ``sum over bins of (n_bin / n) * |accuracy_bin - mean_confidence_bin|``. Bin ``i``
    holds confidences in ``[i / n_bins, (i + 1) / n_bins)``; the last bin also holds 1.0.

    Args:
        confidences: Stated confidence of each answer, in [0, 1].
        correct: Whether each answer was right (bools or 0/1).
        n_bins: Number of equal-width bins over [0, 1].

    Returns:
        The ECE in [0, 1]; 0 for perfectly calibrated answers.

    Raises:
        ValueError: If the inputs are empty, differ in length or are out of range.

    Examples:
        >>> round(expected_calibration_error([0.9, 0.9, 0.6, 0.2], [1, 0, 1, 0]), 4)
        0.35
    """
    func = "expected_calibration_error"
    n_bins = _check_int(n_bins, "n_bins", func, minimum=1)
    conf = _as_1d(confidences, "confidences", func).astype(np.float64)
    hits = _as_1d(correct, "correct", func)
    _check_paired(conf, hits, ("confidences", "correct"), func)
    if not np.all((conf >= 0.0) & (conf <= 1.0)):
        raise invalid("confidences", func, "an array of values within [0, 1]", confidences)
    if not np.all((hits == 0) | (hits == 1)):
        raise invalid("correct", func, "an array of bools or 0/1", correct)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.searchsorted(edges[1:-1], conf, side="right")
    conf_per_bin = np.bincount(bins, weights=conf, minlength=n_bins)
    hits_per_bin = np.bincount(bins, weights=hits.astype(np.float64), minlength=n_bins)
    return float(np.sum(np.abs(hits_per_bin - conf_per_bin)) / conf.shape[0])
