"""The exact McNemar test of arbiter.stats against hand computation and reference code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.stats import binom, binomtest

from arbiter.stats import mcnemar_exact


def _exact_by_integers(b: int, c: int) -> float:
    """min(1, 2 * sum_{i <= min(b, c)} C(n, i) / 2^n) in integers, rounded once at the end."""
    n, low = b + c, min(b, c)
    term = tail = 1
    for i in range(1, low + 1):
        term = term * (n - i + 1) // i
        tail += term
    return min(1.0, 2 * tail / 2**n)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no discordant pair: nothing to test
        (0, 1, 1.0),  # 2 * 1/2
        (0, 5, 2 / 32),  # the smallest p five discordant pairs can give
        (5, 0, 2 / 32),
        (1, 5, 2 * 7 / 64),  # (C(6,0) + C(6,1)) / 2^6, doubled
        (2, 8, 2 * 56 / 1024),  # (1 + 10 + 45) / 2^10, doubled
        (3, 3, 1.0),
        (4, 6, 2 * 386 / 1024),
        (5, 5, 1.0),  # the tail holds half the mass or more: capped at 1
    ],
)
def test_mcnemar_matches_hand_computed_small_tables(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-13)


def test_mcnemar_is_symmetric_in_its_counts() -> None:
    assert mcnemar_exact(7, 19) == mcnemar_exact(19, 7)


@given(b=st.integers(0, 400), c=st.integers(0, 400))
def test_mcnemar_equals_scipy_binomial_test_on_random_tables(b: int, c: int) -> None:
    reference = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert_allclose(mcnemar_exact(b, c), reference, rtol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_mcnemar_equals_the_exact_rational_answer_on_random_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for b, c in rng.integers(0, 3_000, size=(20, 2)):
        assert_allclose(
            mcnemar_exact(int(b), int(c)), _exact_by_integers(int(b), int(c)), rtol=1e-11
        )


@pytest.mark.parametrize(
    ("b", "c"),
    [(49_000, 51_000), (45_000, 55_000), (50_000, 50_000), (100_000, 0), (499_000, 501_000)],
)
def test_mcnemar_stays_exact_for_large_counts(b: int, c: int) -> None:
    # scipy's binomial CDF (boost's incomplete beta) as the reference at this size.
    reference = min(1.0, 2 * float(binom.cdf(min(b, c), b + c, 0.5)))
    assert_allclose(mcnemar_exact(b, c), reference, rtol=1e-10, atol=0)


def test_mcnemar_agrees_with_statsmodels_when_it_is_installed() -> None:
    contingency = pytest.importorskip(
        "statsmodels.stats.contingency_tables",
        reason="statsmodels is not installed; scipy is the reference above",
    )
    rng = np.random.default_rng(7)
    for b, c in rng.integers(0, 500, size=(50, 2)):
        table = [[10, int(b)], [int(c), 10]]
        reference = contingency.mcnemar(table, exact=True).pvalue
        assert_allclose(mcnemar_exact(int(b), int(c)), reference, rtol=1e-9)


@pytest.mark.parametrize(
    ("b", "c", "message"),
    [
        (-1, 3, "The 'b' parameter of mcnemar_exact"),
        (2, -4, "The 'c' parameter of mcnemar_exact"),
        (1.5, 3, "The 'b' parameter of mcnemar_exact"),
    ],
)
def test_mcnemar_rejects_counts_that_are_not_counts(b: object, c: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mcnemar_exact(b, c)  # type: ignore[arg-type]
