"""Tests of arbiter.stats against closed forms, brute force and scikit-learn."""

from __future__ import annotations

import math
import re
from itertools import combinations, pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.metrics import cohen_kappa_score

from arbiter import stats
from arbiter.stats import (
    bootstrap_ci,
    bootstrap_cis,
    cohen_kappa,
    expected_calibration_error,
    paired_bootstrap_diff,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

Z95 = 1.959963984540054


def test_public_surface_is_sorted_and_complete() -> None:
    assert stats.__all__ == sorted(stats.__all__)
    assert all(callable(getattr(stats, name)) for name in stats.__all__)


# --- Wilson -------------------------------------------------------------------------


def _wilson_closed_form(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The textbook form (2np + z² ± z·sqrt(z² + 4np(1-p))) / (2(n + z²))."""
    p = successes / n
    centre = 2 * n * p + z * z
    spread = z * math.sqrt(z * z + 4 * n * p * (1 - p))
    return (centre - spread) / (2 * (n + z * z)), (centre + spread) / (2 * (n + z * z))


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (0, 10, (0.0, 0.2775)),
        (10, 10, (0.7225, 1.0)),
        (5, 10, (0.2366, 0.7634)),
        (1, 1, (0.2065, 1.0)),
        (81, 263, (0.2553, 0.3662)),
    ],
)
def test_wilson_matches_published_values(
    successes: int, n: int, expected: tuple[float, float]
) -> None:
    assert_allclose(wilson_interval(successes, n), expected, atol=5e-5)


@pytest.mark.parametrize(("successes", "n"), [(1, 10), (3, 7), (50, 100), (999, 1000)])
def test_wilson_matches_closed_form(successes: int, n: int) -> None:
    assert_allclose(wilson_interval(successes, n), _wilson_closed_form(successes, n), rtol=1e-12)


def test_wilson_with_no_trials_knows_nothing() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_wider_at_higher_confidence() -> None:
    low95, high95 = wilson_interval(30, 100)
    low99, high99 = wilson_interval(30, 100, confidence=0.99)
    assert low99 < low95 < 0.3 < high95 < high99


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(min_value=0, max_value=10_000))
def test_wilson_bounds_lie_in_unit_interval_around_estimate(data: st.DataObject, n: int) -> None:
    successes = data.draw(st.integers(min_value=0, max_value=n))
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= high <= 1.0
    if n:
        assert low <= successes / n <= high


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"successes": 0, "n": -1},
            "The 'n' parameter of wilson_interval must be a non-negative int. Got -1 instead.",
        ),
        ({"successes": 11, "n": 10}, "The 'successes' parameter of wilson_interval"),
        ({"successes": -1, "n": 10}, "The 'successes' parameter of wilson_interval"),
        ({"successes": 1.0, "n": 10}, "must be a non-negative int. Got 1.0 instead."),
        ({"successes": True, "n": 10}, "must be a non-negative int. Got True instead."),
        ({"successes": 1, "n": 10, "confidence": 1.0}, "The 'confidence' parameter"),
        ({"successes": 1, "n": 10, "confidence": 0}, "The 'confidence' parameter"),
    ],
)
def test_wilson_rejects_invalid_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        wilson_interval(**kwargs)  # type: ignore[arg-type]


# --- bootstrap ----------------------------------------------------------------------


def _sample(seed: int = 1, n: int = 200) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n)


def test_bootstrap_is_deterministic_under_a_seed() -> None:
    values = _sample()
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(values, seed=7)


def test_bootstrap_differs_between_seeds() -> None:
    values = _sample()
    assert bootstrap_ci(values, seed=1) != bootstrap_ci(values, seed=2)


def test_bootstrap_of_constant_sample_has_zero_width() -> None:
    low, high = bootstrap_ci([0.1] * 37)
    assert low == high
    assert low == pytest.approx(0.1)


def test_bootstrap_of_empty_sample_is_nan() -> None:
    low, high = bootstrap_ci([])
    assert math.isnan(low)
    assert math.isnan(high)


def test_bootstrap_mean_interval_is_near_the_normal_approximation() -> None:
    values = _sample(n=2000)
    low, high = bootstrap_ci(values, n_resamples=4000)
    half = Z95 * values.std(ddof=1) / math.sqrt(values.size)
    assert_allclose([low, high], [values.mean() - half, values.mean() + half], atol=0.01)


def test_bootstrap_accepts_other_reductions() -> None:
    low, high = bootstrap_ci(_sample(), statistic=np.median)
    assert low < np.median(_sample()) < high


def test_bootstrap_resamples_whole_rows_of_a_matrix() -> None:
    # Rows are clusters: if every row is constant within itself and all rows are equal,
    # no resample can move the statistic.
    values = np.tile([[0.0, 1.0]], (50, 1))
    assert bootstrap_ci(values) == (0.5, 0.5)
    varied = np.column_stack([_sample(), _sample(2)])
    low, high = bootstrap_ci(varied)
    assert low < varied.mean() < high


def test_bootstrap_batches_large_samples_without_changing_the_answer() -> None:
    values = _sample(n=5000)
    assert bootstrap_ci(values, n_resamples=1000) == bootstrap_ci(values, n_resamples=1000)
    low, high = bootstrap_ci(values, n_resamples=1000)
    assert low < values.mean() < high


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(min_value=-100, max_value=100), min_size=2, max_size=60).filter(
        lambda v: len(set(v)) > 1
    ),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_bootstrap_interval_contains_the_sample_mean(values: list[int], seed: int) -> None:
    low, high = bootstrap_ci(values, n_resamples=500, seed=seed)
    mean = float(np.mean(values))
    assert low <= mean + 1e-9
    assert mean <= high + 1e-9
    assert low < high


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_resamples": 0}, "The 'n_resamples' parameter of bootstrap_ci must be a positive"),
        ({"confidence": 1.5}, "The 'confidence' parameter of bootstrap_ci"),
        ({"seed": -1}, "The 'seed' parameter of bootstrap_ci must be a non-negative int"),
    ],
)
def test_bootstrap_rejects_invalid_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_ci([1.0, 2.0], **kwargs)  # type: ignore[arg-type]


def test_paired_diff_is_mean_difference_inside_its_interval() -> None:
    a = _sample(1)
    b = a + 0.5 + 0.1 * _sample(2)
    diff, low, high = paired_bootstrap_diff(a, b, seed=3)
    assert diff == pytest.approx(float(np.mean(b - a)))
    assert low < diff < high
    assert low > 0.0
    assert paired_bootstrap_diff(a, b, seed=3) == (diff, low, high)


def test_paired_diff_of_identical_runs_is_exactly_zero() -> None:
    a = _sample()
    assert paired_bootstrap_diff(a, a) == (0.0, 0.0, 0.0)


def test_paired_diff_rejects_unpaired_inputs() -> None:
    with pytest.raises(ValueError, match="must have the same shape"):
        paired_bootstrap_diff([1.0, 2.0], [1.0])


# --- pass^k and pass@k --------------------------------------------------------------


def _brute_force(n: int, c: int, k: int, *, every: bool) -> float:
    """Share of k-subsets of n trials (c correct) in which every / any trial passes."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(outcomes, k))
    hits = sum((all if every else any)(s) for s in subsets)
    return hits / len(subsets)


tasks = st.lists(
    st.integers(min_value=1, max_value=8).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(min_value=0, max_value=n))
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(tasks=tasks, data=st.data())
def test_pass_k_estimators_match_brute_force(
    tasks: list[tuple[int, int]], data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=min(n for n, _ in tasks)))
    n, c = zip(*tasks, strict=True)
    expected_hat = np.mean([_brute_force(ni, ci, k, every=True) for ni, ci in tasks])
    expected_at = np.mean([_brute_force(ni, ci, k, every=False) for ni, ci in tasks])
    assert_allclose(pass_hat_k(n, c, k), expected_hat, rtol=1e-12, atol=1e-15)
    assert_allclose(pass_at_k(n, c, k), expected_at, rtol=1e-12, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(tasks=tasks)
def test_pass_hat_k_is_non_increasing_in_k(tasks: list[tuple[int, int]]) -> None:
    n, c = zip(*tasks, strict=True)
    values = [pass_hat_k(n, c, k) for k in range(1, min(n) + 1)]
    assert all(later <= earlier for earlier, later in pairwise(values))
    assert all(0.0 <= v <= 1.0 for v in values)


def test_pass_hat_k_at_n_is_share_of_tasks_always_correct() -> None:
    assert pass_hat_k([3, 3, 3, 3], [3, 2, 3, 0], k=3) == 0.5


def test_pass_at_1_and_pass_hat_1_are_both_mean_accuracy() -> None:
    n, c = [4, 4, 2], [1, 4, 1]
    assert pass_hat_k(n, c, 1) == pytest.approx(np.mean([0.25, 1.0, 0.5]))
    assert pass_at_k(n, c, 1) == pytest.approx(np.mean([0.25, 1.0, 0.5]))


def test_pass_hat_k_broadcasts_a_scalar_trial_count() -> None:
    assert pass_hat_k(5, [5, 5, 0], 2) == pytest.approx(2 / 3)


def test_pass_hat_k_survives_trial_counts_whose_binomials_overflow() -> None:
    assert pass_hat_k([2000], [1000], 100) == pytest.approx(
        math.comb(1000, 100) / math.comb(2000, 100), rel=1e-9
    )


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        ([3], [1], 0, "The 'k' parameter of pass_hat_k must be a positive int. Got 0"),
        ([3], [1], 4, "The 'k' parameter of pass_hat_k must be at most"),
        (
            [3],
            [4],
            1,
            "'num_correct' parameter of pass_hat_k must be an array whose entries",
        ),
        (
            [3],
            [-1],
            1,
            "'num_correct' parameter of pass_hat_k must be an array whose entries",
        ),
        ([], [], 1, "at least one task"),
        ([3, 3], [1, 1, 1], 1, "an array of num_trials' shape"),
        ([3.0], [1], 1, "The 'num_trials' parameter of pass_hat_k must be an array of ints"),
    ],
)
def test_pass_hat_k_rejects_invalid_arguments(
    n: list[float], c: list[int], k: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        pass_hat_k(n, c, k)


# --- Cohen's kappa ------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from("abcd"), st.sampled_from("abcde")), min_size=1, max_size=80
    )
)
def test_cohen_kappa_equals_sklearn(pairs: list[tuple[str, str]]) -> None:
    a, b = (list(x) for x in zip(*pairs, strict=True))
    ours = cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:
        assert math.isnan(ours)
    else:
        assert ours == cohen_kappa_score(a, b)


def test_cohen_kappa_is_symmetric_and_perfect_on_agreement() -> None:
    a = ["y", "n", "n", "y", "n"]
    b = ["y", "n", "y", "y", "n"]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a))
    assert cohen_kappa(a, a) == 1.0


def test_cohen_kappa_undefined_when_expected_agreement_is_one() -> None:
    assert math.isnan(cohen_kappa(["y", "y"], ["y", "y"]))
    assert cohen_kappa(["y", "y"], ["y", "y"], replace_undefined_by=1.0) == 1.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [([], [], "must be a non-empty array"), (["y"], ["y", "n"], "must be as long as")],
)
def test_cohen_kappa_rejects_invalid_input(a: list[str], b: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cohen_kappa(a, b)


# --- calibration --------------------------------------------------------------------


def test_ece_is_zero_when_perfectly_calibrated() -> None:
    confidences = [0.25] * 4 + [0.75] * 4
    correct = [1, 0, 0, 0, 1, 1, 1, 0]
    assert expected_calibration_error(confidences, correct) == 0.0


def test_ece_matches_hand_computed_value() -> None:
    # Bins: 0.9 → acc 0.5 vs conf 0.9 (2 items), 0.6 → 1 vs 0.6, 0.2 → 0 vs 0.2.
    # ECE = (2 * 0.4 + 0.4 + 0.2) / 4 = 0.35.
    ece = expected_calibration_error([0.9, 0.9, 0.6, 0.2], [True, False, True, False])
    assert ece == pytest.approx(0.35, abs=1e-12)


def test_ece_puts_confidence_one_in_the_last_bin() -> None:
    assert expected_calibration_error([1.0, 0.95], [1, 1], n_bins=10) == pytest.approx(0.025)


def test_ece_with_one_bin_is_gap_between_mean_confidence_and_accuracy() -> None:
    ece = expected_calibration_error([0.9, 0.8, 0.7], [1, 1, 0], n_bins=1)
    assert ece == pytest.approx(abs(2 / 3 - 0.8))


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.floats(min_value=0.0, max_value=1.0), st.booleans()), min_size=1, max_size=50
    ),
    n_bins=st.integers(min_value=1, max_value=20),
)
def test_ece_lies_in_unit_interval(items: list[tuple[float, bool]], n_bins: int) -> None:
    confidences, correct = zip(*items, strict=True)
    assert 0.0 <= expected_calibration_error(confidences, correct, n_bins=n_bins) <= 1.0


@pytest.mark.parametrize(
    ("confidences", "correct", "message"),
    [
        ([1.5], [1], "must be an array of values within"),
        ([0.5], [2], "must be an array of bools or 0/1"),
        ([0.5, 0.5], [1], "must be as long as"),
        ([], [], "must be a non-empty array"),
    ],
)
def test_ece_rejects_invalid_input(
    confidences: list[float], correct: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        expected_calibration_error(confidences, correct)


@pytest.mark.parametrize(
    "values",
    [
        [1.0] * 700 + [0.0] * 300,  # pass / fail outcomes
        [0.0] * 100 + [1 / 3] * 150 + [2 / 3] * 250 + [1.0] * 500,  # shares of k = 3
    ],
    ids=["binary", "shares"],
)
def test_a_discrete_mean_is_bootstrapped_as_counts_with_the_same_distribution(
    values: list[float],
) -> None:
    """The multinomial draw is the index bootstrap's distribution, not an approximation:
    its interval matches a plain index resampling of the same sample closely."""
    data = np.array(values)
    rng = np.random.default_rng(11)
    means = data[rng.integers(0, data.size, size=(20_000, data.size))].mean(axis=1)
    reference = np.quantile(means, [0.025, 0.975])
    low, high = bootstrap_ci(data, n_resamples=20_000, seed=5)
    assert low == pytest.approx(reference[0], abs=0.004)
    assert high == pytest.approx(reference[1], abs=0.004)
    assert low < data.mean() < high


def test_counts_and_indices_give_one_answer_per_sample_in_a_mixed_batch() -> None:
    discrete = np.array([0.0, 1.0] * 500)
    continuous = np.random.default_rng(2).random(1000)
    both = bootstrap_cis([discrete, continuous], seed=4)
    assert both == [bootstrap_ci(discrete, seed=4), bootstrap_ci(continuous, seed=4)]
