"""Calibration of judges against human labels, and the standings of refinement pairs."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from arbiter.contract import Annotation, FrozenRuling, Score
from arbiter.judges.calibration import (
    KAPPA_THRESHOLD,
    MIN_PAIRS,
    LabelPair,
    calibrate,
    calibration_status,
    pairs_from_annotations,
)
from arbiter.judges.refinement import RefinementStanding, refinement_standing, rule_convicts
from arbiter.trajectories.verdict import turn_failed

LABELS = st.sampled_from(["pass", "fail", "unknown_label"])


def _pairs(judged: list[str], human: list[str], **fields: str) -> list[LabelPair]:
    return [LabelPair(j, h, **fields) for j, h in zip(judged, human, strict=True)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(LABELS, LABELS), min_size=1, max_size=80))
def test_kappa_equals_sklearn_on_random_pairs(labels: list[tuple[str, str]]) -> None:
    judge = [j for j, _ in labels]
    human = [h for _, h in labels]
    (result,) = calibrate(_pairs(judge, human), n_resamples=50).judges
    expected = cohen_kappa_score(judge, human, replace_undefined_by=math.nan)
    if math.isnan(expected):
        assert math.isnan(result.kappa.value)
    else:
        assert result.kappa.value == expected
    assert result.n_pairs == len(labels)


def test_agreement_precision_and_recall_are_the_judges_against_the_human() -> None:
    # judge: f f f p p p p p ; human: f f p f p p p p -> on "fail": precision 2/3, recall 2/3
    judge = ["fail"] * 3 + ["pass"] * 5
    human = ["fail", "fail", "pass", "fail", "pass", "pass", "pass", "pass"]
    (result,) = calibrate(_pairs(judge, human)).judges
    assert result.agreement.value == 6 / 8
    assert result.precision.value == pytest.approx(2 / 3)
    assert result.recall.value == pytest.approx(2 / 3)
    for estimate in (result.kappa, result.agreement, result.precision, result.recall):
        assert estimate.low <= estimate.value <= estimate.high


def test_the_report_is_the_same_for_the_same_seed() -> None:
    pairs = _pairs(["pass", "fail"] * 10, ["pass", "pass", "fail", "fail"] * 5)
    assert calibrate(pairs, seed=7) == calibrate(pairs, seed=7)
    assert calibrate(pairs, seed=7).judges[0].kappa != calibrate(pairs, seed=8).judges[0].kappa


def test_abstentions_are_left_out_and_counted() -> None:
    pairs = [
        *_pairs(["pass", "fail"], ["pass", "fail"]),
        LabelPair(None, "pass"),
        LabelPair(None, None),
        LabelPair("fail", None),
    ]
    (result,) = calibrate(pairs).judges
    assert (result.n_pairs, result.n_judge_abstained, result.n_human_unknown) == (2, 2, 1)
    assert result.kappa.value == 1.0


def test_each_judge_and_dimension_is_calibrated_apart() -> None:
    pairs = [
        *_pairs(["pass"] * 4, ["pass"] * 4, judge="a", dimension="x"),
        *_pairs(["fail"] * 3, ["pass"] * 3, judge="a", dimension="y"),
        *_pairs(["pass"], ["fail"], judge="b", dimension="x"),
    ]
    groups = [(j.judge, j.dimension, j.n_pairs) for j in calibrate(pairs).judges]
    assert groups == [("a", "x", 4), ("a", "y", 3), ("b", "x", 1)]


def _balanced(n: int, disagreements: int) -> list[LabelPair]:
    """n pairs, half pass and half fail on each side, ``disagreements`` of them crossed."""
    half = n // 2
    judge = ["pass"] * half + ["fail"] * half
    human = list(judge)
    for i in range(disagreements // 2):
        human[i], human[half + i] = "fail", "pass"
    return _pairs(judge, human)


@pytest.mark.parametrize(
    ("n", "crossed", "status"),
    [
        (10, 2, "calibrated"),  # kappa exactly 0.6 over 10 pairs
        (10, 4, "uncalibrated"),  # kappa 0.2
        (8, 0, "too_few_pairs"),  # kappa 1.0 but too few pairs
    ],
)
def test_status_from_pairs(n: int, crossed: int, status: str) -> None:
    (result,) = calibrate(_balanced(n, crossed)).judges
    assert result.status == status


def test_kappa_of_exactly_the_threshold_over_ten_pairs_is_calibrated() -> None:
    (result,) = calibrate(_balanced(10, 2)).judges
    assert result.kappa.value == KAPPA_THRESHOLD
    assert result.status == "calibrated"


def test_nine_perfect_pairs_are_never_calibrated() -> None:
    pairs = _pairs(["pass"] * 5 + ["fail"] * 4, ["pass"] * 5 + ["fail"] * 4)
    (result,) = calibrate(pairs).judges
    assert result.kappa.value == 1.0
    assert result.status == "too_few_pairs"


@pytest.mark.parametrize(
    ("kappa", "n", "status"),
    [
        (0.6, MIN_PAIRS, "calibrated"),
        (0.59, MIN_PAIRS, "uncalibrated"),
        (1.0, MIN_PAIRS - 1, "too_few_pairs"),
        (0.6, MIN_PAIRS - 1, "too_few_pairs"),
        (math.nan, 100, "uncalibrated"),
    ],
)
def test_calibration_status_rules(kappa: float, n: int, status: str) -> None:
    assert calibration_status(kappa, n)[0] == status


def test_human_alpha_is_reported_beside_the_judge_when_several_labelled() -> None:
    items = ["i1", "i2", "i3", "i4"]
    ann = ["pass", "pass", "fail", "fail"]
    bob = ["pass", "fail", "fail", "fail"]
    pairs = [
        *(
            LabelPair("pass", h, item_id=i, annotator="ann")
            for i, h in zip(items, ann, strict=True)
        ),
        *(
            LabelPair("pass", h, item_id=i, annotator="bob")
            for i, h in zip(items, bob, strict=True)
        ),
    ]
    (result,) = calibrate(pairs).judges
    # Hand-computed (see test_stats_agreement): 1 - 7 * 2 / 30.
    assert result.human_alpha == pytest.approx(1 - 14 / 30)
    assert (result.n_alpha_items, result.n_annotators) == (4, 2)


def test_one_annotator_has_no_human_alpha() -> None:
    (result,) = calibrate(_balanced(10, 2)).judges
    assert result.human_alpha is None


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _annotation(label: str, verdict: str | None, **extra: object) -> Annotation:
    ruling = None if verdict is None else FrozenRuling(judge="groundedness", verdict=verdict)  # type: ignore[arg-type]
    return Annotation.model_validate(
        {
            "item_id": "t1",
            "dimension": "groundedness",
            "label": label,
            "ruling": ruling,
            "annotator": "ann",
            "created_at": T0 + timedelta(minutes=1),
            **extra,
        }
    )


def test_pairs_from_annotations_read_the_frozen_ruling_and_leave_notes_out() -> None:
    annotations = [
        _annotation("disagree", "pass", item_id="a"),
        _annotation("agree", "unknown", item_id="b"),
        _annotation("fail", None, item_id="note"),
        _annotation("agree", "fail", item_id="second-hand", propagated=True),
    ]
    pairs, excluded = pairs_from_annotations(annotations)
    assert excluded == {"notes": 1, "propagated": 1}
    assert [(p.item_id, p.judge_label, p.human_label) for p in pairs] == [
        ("a", "pass", "fail"),
        ("b", None, None),
    ]
    with_propagated, _ = pairs_from_annotations(annotations, include_propagated=True)
    assert ("second-hand", "fail", "fail") in [
        (p.item_id, p.judge_label, p.human_label) for p in with_propagated
    ]


DANGER = Score(name="grounded_overlap", value=0.1, passed=False, band="danger")
REVIEW = Score(name="grounded_overlap", value=0.5, passed=True, band="review")
ABSTAINED_RULE = Score(name="grounded_overlap", passed=None)
JUDGE_PASS = Score(name="groundedness", passed=True)
JUDGE_FAIL = Score(name="groundedness", passed=False)
JUDGE_UNKNOWN = Score(name="groundedness", passed=None)
JUDGE_ERROR = Score(name="groundedness", passed=False, error="timeout")


@pytest.mark.parametrize(
    ("rule", "judge", "standing"),
    [
        (DANGER, JUDGE_FAIL, "corroborated_failure"),
        (DANGER, JUDGE_PASS, "disputed"),
        (DANGER, JUDGE_UNKNOWN, "rule_only_failure"),
        (DANGER, JUDGE_ERROR, "rule_only_failure"),
        (DANGER, None, "rule_only_failure"),
        (REVIEW, JUDGE_FAIL, "judge_only_failure"),
        (ABSTAINED_RULE, JUDGE_FAIL, "judge_only_failure"),
        (REVIEW, JUDGE_PASS, "clean"),
        (REVIEW, None, "clean"),
    ],
)
def test_refinement_standing_and_what_the_rule_contributes(
    rule: Score, judge: Score | None, standing: RefinementStanding
) -> None:
    assert refinement_standing(rule, judge) == standing
    # The standing's contribution is the turn-failed predicate's own reading of the pair.
    scores = [rule] if judge is None else [rule, judge]
    verdict = turn_failed(
        scores,
        rule_scorers={"grounded_overlap"},
        refinements={"grounded_overlap": "groundedness"},
    )
    assert rule_convicts(standing) is verdict.failed
    assert ("grounded_overlap" in verdict.disputed) is (standing == "disputed")
