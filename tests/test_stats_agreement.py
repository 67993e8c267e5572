"""Agreement statistics: kappa of a table, intervals, Krippendorff's alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from arbiter.stats import cohen_kappa
from arbiter.stats_agreement import (
    agreement_intervals,
    confusion_table,
    kappa_of_table,
    krippendorff_alpha_nominal,
    precision_recall_of_table,
    raw_agreement_of_table,
)

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example
# with 4 observers, 12 units and missing values: nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def _table(first: list[str], second: list[str]) -> np.ndarray:
    labels = sorted(set(first) | set(second))
    code = {label: i for i, label in enumerate(labels)}
    return confusion_table([code[x] for x in first], [code[x] for x in second], len(labels))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), min_size=1, max_size=60)
)
def test_kappa_of_table_equals_sklearn_and_stats_to_the_last_digit(
    pairs: list[tuple[str, str]],
) -> None:
    first = [a for a, _ in pairs]
    second = [b for _, b in pairs]
    expected = cohen_kappa_score(first, second, replace_undefined_by=math.nan)
    got = kappa_of_table(_table(first, second))
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected
        assert got == cohen_kappa(first, second)


def test_raw_agreement_and_precision_recall_of_a_table() -> None:
    # rows judge, columns human: 0 = fail, 1 = pass
    table = [[3, 1], [2, 4]]
    assert raw_agreement_of_table(table) == 0.7
    assert precision_recall_of_table(table, 0) == (0.75, 0.6)


def test_precision_is_nan_when_the_judge_never_says_the_label() -> None:
    precision, recall = precision_recall_of_table([[0, 0], [2, 4]], 0)
    assert math.isnan(precision)
    assert recall == 0.0


def test_intervals_are_seeded_and_contain_the_estimates() -> None:
    table = np.array([[40, 10], [5, 45]])
    first = agreement_intervals(table, positive=0, seed=3)
    again = agreement_intervals(table, positive=0, seed=3)
    other = agreement_intervals(table, positive=0, seed=4)
    assert first == again
    assert first != other
    assert first.kappa[0] <= kappa_of_table(table) <= first.kappa[1]
    assert first.agreement[0] <= 0.85 <= first.agreement[1]
    precision, recall = precision_recall_of_table(table, 0)
    assert first.precision[0] <= precision <= first.precision[1]
    assert first.recall[0] <= recall <= first.recall[1]


def test_interval_of_a_multinomial_table_matches_resampling_the_pairs() -> None:
    """Cell counts drawn as a multinomial are the bootstrap of the pairs: same spread."""
    table = np.array([[30, 10], [10, 50]])
    low, high = agreement_intervals(table, n_resamples=4000, seed=1).agreement
    rng = np.random.default_rng(2)
    agree = np.repeat([1.0, 0.0, 0.0, 1.0], table.ravel())
    means = agree[rng.integers(0, agree.size, size=(4000, agree.size))].mean(axis=1)
    ref_low, ref_high = np.quantile(means, [0.025, 0.975])
    assert low == pytest.approx(ref_low, abs=0.02)
    assert high == pytest.approx(ref_high, abs=0.02)


def test_an_empty_table_gives_nan_intervals() -> None:
    intervals = agreement_intervals(np.zeros((2, 2), dtype=int), positive=0)
    assert all(math.isnan(x) for x in intervals.kappa + intervals.recall)


def test_alpha_reproduces_krippendorffs_published_example() -> None:
    assert krippendorff_alpha_nominal(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)


def test_alpha_by_hand_on_two_raters() -> None:
    # Items: (a, a), (a, b), (b, b), (b, b). Coincidences o_aa=2, o_ab=o_ba=1, o_bb=4;
    # n_a=3, n_b=5, n=8: alpha = 1 - (n-1) * o_ab*2 / (n_a * n_b * 2) = 1 - 7*2/30.
    ratings = [["a", "a", "b", "b"], ["a", "b", "b", "b"]]
    assert krippendorff_alpha_nominal(ratings) == pytest.approx(1 - 14 / 30)


@pytest.mark.parametrize(
    ("ratings", "why"),
    [
        ([["a", "a"], ["a", "a"]], "no expected disagreement"),
        ([["a", None], [None, "b"]], "no pairable item"),
        ([], "no rater"),
    ],
)
def test_alpha_is_nan_when_undefined(ratings: list[list[str | None]], why: str) -> None:
    assert math.isnan(krippendorff_alpha_nominal(ratings)), why


def test_alpha_matches_the_krippendorff_package_when_installed() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    data = np.array(KRIPPENDORFF_2011, dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha_nominal(KRIPPENDORFF_2011) == pytest.approx(expected)


def test_alpha_rejects_rows_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="rows of one length"):
        krippendorff_alpha_nominal([["a"], ["a", "b"]])
