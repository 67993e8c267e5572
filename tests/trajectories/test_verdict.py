"""The turn-failed predicate: rules in danger convict, review and judges alone never do."""

from __future__ import annotations

import pytest

from arbiter.contract import Score, ScorerSpec
from arbiter.trajectories.verdict import rule_scorers_of, turn_failed

RULES = {"cost", "must_contain", "grounded_overlap", "scope_adherence"}
PAIRS = {"grounded_overlap": "groundedness"}


def danger(name: str) -> Score:
    return Score(name=name, value=1.0, passed=False, band="danger", explanation="past the line")


def test_a_rule_in_the_danger_band_convicts_the_turn() -> None:
    verdict = turn_failed([danger("cost"), Score(name="tokens", passed=True)], rule_scorers=RULES)
    assert verdict.failed
    assert verdict.convicted_by == ["cost"]
    assert verdict.reasons == ["cost is in danger: past the line"]


def test_a_failed_pass_fail_rule_convicts_like_a_danger_band() -> None:
    verdict = turn_failed([Score(name="must_contain", passed=False)], rule_scorers=RULES)
    assert verdict.convicted_by == ["must_contain"]


def test_a_non_gating_rule_convicts_too() -> None:
    # Scorer.gating splits a report; it does not decide a turn's fate.
    assert turn_failed([danger("scope_adherence")], rule_scorers=RULES).failed


@pytest.mark.parametrize(
    "score",
    [
        Score(name="cost", value=0.2, passed=True, band="review"),
        Score(name="cost", passed=None, explanation="abstained"),
        Score(name="cost", error="ValueError: boom"),
        Score(name="groundedness", passed=False),  # a judge alone
        Score(name="groundedness", passed=False, band="danger"),
    ],
)
def test_review_abstentions_errors_and_judges_alone_never_convict(score: Score) -> None:
    verdict = turn_failed([score], rule_scorers=RULES, refinements=PAIRS)
    assert not verdict.failed
    assert verdict.convicted_by == []
    assert verdict.disputed == []


def test_a_refining_judge_that_cleared_the_rule_disputes_instead_of_convicting() -> None:
    scores = [danger("grounded_overlap"), Score(name="groundedness", passed=True)]
    verdict = turn_failed(scores, rule_scorers=RULES, refinements=PAIRS)
    assert not verdict.failed
    assert verdict.disputed == ["grounded_overlap"]
    assert "cleared" in verdict.reasons[0]


@pytest.mark.parametrize(
    ("judge", "corroborated"),
    [
        (Score(name="groundedness", passed=False), True),
        (Score(name="groundedness", passed=None), False),  # abstained: the rule stands alone
        (Score(name="groundedness", error="ProviderTimeout: slow"), False),
        (None, False),  # never ran
    ],
)
def test_a_rule_whose_judge_did_not_clear_it_still_convicts(
    judge: Score | None, corroborated: bool
) -> None:
    scores = [danger("grounded_overlap"), *([judge] if judge else [])]
    verdict = turn_failed(scores, rule_scorers=RULES, refinements=PAIRS)
    assert verdict.convicted_by == ["grounded_overlap"]
    assert ("corroborated by groundedness" in verdict.reasons[0]) is corroborated


def test_a_judge_clears_only_the_rule_it_is_declared_to_refine() -> None:
    scores = [danger("cost"), Score(name="groundedness", passed=True)]
    assert turn_failed(scores, rule_scorers=RULES, refinements=PAIRS).convicted_by == ["cost"]


def test_a_withheld_answer_fails_the_turn_with_no_failing_measurement() -> None:
    verdict = turn_failed(
        [Score(name="cost", passed=True, band="healthy")], rule_scorers=RULES, withheld=True
    )
    assert verdict.failed
    assert verdict.withheld
    assert verdict.convicted_by == []
    assert verdict.reasons == ["a gate withheld the answer"]


def test_no_scores_is_a_turn_that_did_not_fail() -> None:
    assert not turn_failed([], rule_scorers=RULES).failed


def test_rule_scorers_are_the_deterministic_specs_by_the_name_their_scores_carry() -> None:
    specs = [
        ScorerSpec(name="cost"),
        ScorerSpec(name="cost", alias="cost_strict"),
        ScorerSpec(name="rubric", kind="model"),
    ]
    assert rule_scorers_of(specs) == {"cost", "cost_strict"}
