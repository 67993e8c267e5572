"""Synthesis on injected scores and callouts — no detector involved, so no tautology."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arbiter.contract import DIMENSIONS, Callout, CriticOutcome, Critique
from arbiter.jury.synthesis import severity, synthesize

OUTPUT = (
    "Refunds are accepted within 45 days of delivery. "
    "Note that for high-value orders a signature is optional if nobody is home. "
    "Studies show customers love it. "
    "Elsewhere we note the free trial runs for 60 days instead."
)
SIGNATURE = "a signature is optional if nobody is home"
REFUNDS = "Refunds are accepted within 45 days of delivery"
STUDIES = "Studies show customers love it"


def critic(
    name: str, scores: tuple[int, int, int] = (5, 5, 5), *callouts: Callout
) -> CriticOutcome:
    a, c, m = scores
    critique = Critique(accuracy=a, consistency=c, completeness=m, callouts=list(callouts))  # type: ignore[arg-type]
    return CriticOutcome(critic=name, lens="test", model="injected", status="ok", critique=critique)


def dead(name: str) -> CriticOutcome:
    return CriticOutcome(critic=name, lens="test", model="injected", status="dead", error="timeout")


def contradiction(quote: str = REFUNDS, dimension: str = "accuracy", rival: str = "30") -> Callout:
    return Callout(
        dimension=dimension, kind="contradicted", claim="differs", quote=quote, rival=rival
    )  # type: ignore[arg-type]


def unsupported(quote: str = STUDIES) -> Callout:
    return Callout(dimension="accuracy", kind="unsupported", claim="no source", quote=quote)


def test_lone_quoted_contradiction_overrides_two_clean_votes_and_escalates() -> None:
    finding = contradiction(SIGNATURE, "consistency", "required")
    verdict = synthesize(OUTPUT, [critic("f"), critic("l", (5, 3, 5), finding), critic("a")])
    assert verdict.decision == "REVISE"
    assert verdict.escalate
    assert verdict.flip_margin == 0
    assert verdict.agreement == pytest.approx(0.833333, abs=1e-6)
    assert verdict.confidence == 0.5  # escalating caps it
    assert verdict.scores["consistency"] == 3.0  # the low score wins, not the median 5


def test_contradiction_corroborated_by_two_critics_is_a_hard_reject() -> None:
    verdict = synthesize(
        OUTPUT,
        [
            critic("f", (2, 5, 5), contradiction()),
            critic("l", (2, 5, 5), contradiction()),
            critic("a"),
        ],
    )
    assert verdict.decision == "REJECT"
    assert not verdict.escalate
    (finding,) = verdict.findings
    assert finding.corroborated
    assert finding.critics == ["f", "l"]
    assert finding.rival == "30"


def test_three_way_corroboration_with_equal_scores_reaches_top_confidence() -> None:
    verdict = synthesize(OUTPUT, [critic(n, (1, 5, 5), contradiction()) for n in "fla"])
    assert verdict.decision == "REJECT"
    assert verdict.flip_margin == 2
    assert verdict.agreement == 1.0
    assert verdict.confidence == 0.95


@pytest.mark.parametrize("n_critics", [1, 2, 3])
def test_unsupported_claims_cap_at_revise_never_reject(n_critics: int) -> None:
    critics = [critic(f"c{i}", (2, 5, 5), unsupported()) for i in range(n_critics)]
    verdict = synthesize(OUTPUT, critics)
    assert verdict.decision == "REVISE"


def test_unverifiable_quote_is_demoted_to_an_opinion_and_outvoted() -> None:
    made_up = contradiction("Refunds are accepted within 90 days", rival="45")
    verdict = synthesize(OUTPUT, [critic("f", (2, 5, 5), made_up), critic("l"), critic("a")])
    assert verdict.findings == []
    assert [o.kind for o in verdict.opinions] == ["opinion"]
    assert verdict.decision == "ACCEPT"
    assert verdict.escalate  # accepted despite a finding nobody corroborated
    assert verdict.confidence <= 0.5


def test_unanimous_low_opinions_without_evidence_revise_with_capped_confidence() -> None:
    verdict = synthesize(OUTPUT, [critic(n, (2, 5, 5)) for n in "fla"])
    assert verdict.decision == "REVISE"
    assert not verdict.escalate
    assert verdict.confidence <= 0.70


def test_unanimous_clean_accept_is_capped_as_unevidenced() -> None:
    verdict = synthesize(OUTPUT, [critic(n) for n in "fla"])
    assert verdict.decision == "ACCEPT"
    assert not verdict.escalate
    assert verdict.confidence == 0.70


def test_a_critic_that_scores_five_cannot_complain() -> None:
    verdict = synthesize(OUTPUT, [critic("f", (5, 5, 5), contradiction()), critic("l")])
    assert verdict.decision == "ACCEPT"
    assert len(verdict.findings) == 1  # recorded, but not counted as evidence


@pytest.mark.parametrize(
    "quote",
    [
        "Refunds  are accepted\nwithin 45 days",  # whitespace
        '"Refunds are accepted within 45 days of delivery."',  # wrapped in quotes
        "accepted within 45 days of delivery…",  # trailing ellipsis
    ],
)
def test_quote_check_normalises_whitespace_quotes_and_ellipses(quote: str) -> None:
    verdict = synthesize(OUTPUT, [critic(n, (2, 5, 5), contradiction(quote)) for n in "fl"])
    assert verdict.decision == "REJECT"


def test_unicode_dashes_match_ascii_hyphens() -> None:
    output = "The trial lasts 10\u201314 days."
    verdict = synthesize(output, [critic(n, (2, 5, 5), contradiction("10-14 days")) for n in "fl"])
    assert verdict.decision == "REJECT"


def test_overlapping_unequal_spans_of_one_finding_corroborate() -> None:
    a = contradiction("Refunds are accepted within 45 days")
    b = contradiction("accepted within 45 days of delivery")
    verdict = synthesize(OUTPUT, [critic("f", (2, 5, 5), a), critic("l", (2, 5, 5), b)])
    assert verdict.decision == "REJECT"
    assert len(verdict.findings) == 1


def test_same_sentence_and_same_rival_corroborate_without_overlap() -> None:
    a = contradiction("Refunds are accepted", rival="30 days")
    b = contradiction("45 days of delivery", rival="30 days")
    verdict = synthesize(OUTPUT, [critic("f", (2, 5, 5), a), critic("l", (2, 5, 5), b)])
    assert verdict.decision == "REJECT"


def test_different_findings_do_not_corroborate_each_other() -> None:
    a = contradiction(REFUNDS)
    b = contradiction("the free trial runs for 60 days", rival="14")
    verdict = synthesize(OUTPUT, [critic("f", (2, 5, 5), a), critic("l", (2, 5, 5), b)])
    assert verdict.decision == "REVISE"
    assert verdict.escalate
    assert [f.corroborated for f in verdict.findings] == [False, False]


def test_a_dead_critic_still_leaves_a_verdict() -> None:
    verdict = synthesize(
        OUTPUT,
        [
            critic("f", (2, 5, 5), contradiction()),
            dead("l"),
            critic("a", (2, 5, 5), contradiction()),
        ],
    )
    assert verdict.decision == "REJECT"
    assert any("2 of 3 critics answered" in r for r in verdict.reasons)
    assert [c.status for c in verdict.critiques] == ["ok", "dead", "ok"]


def test_a_minority_of_live_critics_escalates() -> None:
    verdict = synthesize(OUTPUT, [critic("f", (2, 5, 5)), dead("l"), dead("a")])
    assert verdict.decision == "REVISE"
    assert verdict.escalate
    assert verdict.confidence <= 0.5
    assert "fewer than half" in verdict.reasons[-1]


def test_no_live_critic_means_no_jury() -> None:
    verdict = synthesize(OUTPUT, [dead("f"), dead("l")])
    assert verdict.decision == "REVISE"
    assert verdict.escalate
    assert "no jury" in verdict.reasons[0]


# ---------------------------------------------------------------- properties

SPANS = [REFUNDS, SIGNATURE, STUDIES, "free trial runs for 60 days", "not in the output at all"]
callouts = st.builds(
    Callout,
    dimension=st.sampled_from(DIMENSIONS),
    kind=st.sampled_from(["contradicted", "unsupported", "opinion"]),
    claim=st.just("x"),
    quote=st.sampled_from(SPANS),
    rival=st.sampled_from([None, "30", "14"]),
)
scores = st.integers(min_value=1, max_value=5)
critiques = st.builds(
    Critique,
    accuracy=scores,
    consistency=scores,
    completeness=scores,
    callouts=st.lists(callouts, max_size=3),
)
rosters = st.lists(critiques, min_size=1, max_size=4)


def _outcomes(roster: list[Critique]) -> list[CriticOutcome]:
    return [
        CriticOutcome(critic=f"c{i}", lens="t", model="m", status="ok", critique=c)
        for i, c in enumerate(roster)
    ]


def _key(verdict: Any) -> tuple[Any, ...]:
    return (
        verdict.decision,
        verdict.escalate,
        verdict.flip_margin,
        verdict.confidence,
        verdict.agreement,
    )


@settings(max_examples=150, deadline=None)
@given(rosters, st.randoms(use_true_random=False))
def test_roster_order_never_changes_the_decision(roster: list[Critique], rnd: Any) -> None:
    shuffled = list(roster)
    rnd.shuffle(shuffled)
    assert _key(synthesize(OUTPUT, _outcomes(roster))) == _key(
        synthesize(OUTPUT, _outcomes(shuffled))
    )


@settings(max_examples=150, deadline=None)
@given(rosters)
def test_confidence_stays_in_range_and_is_deterministic(roster: list[Critique]) -> None:
    first = synthesize(OUTPUT, _outcomes(roster))
    assert 0.34 <= first.confidence <= 0.95
    assert 0 <= first.flip_margin <= 2
    assert 0.0 <= first.agreement <= 1.0
    if first.escalate:
        assert first.confidence <= 0.5
    assert _key(synthesize(OUTPUT, _outcomes(roster))) == _key(first)


@settings(max_examples=150, deadline=None)
@given(rosters, st.data())
def test_adding_a_corroborating_critic_never_lowers_severity(
    roster: list[Critique], data: st.DataObject
) -> None:
    before = synthesize(OUTPUT, _outcomes(roster))
    assume(before.findings)
    finding = data.draw(st.sampled_from(before.findings))
    low = data.draw(st.integers(min_value=1, max_value=3))
    values = {d: (low if d == finding.dimension else 5) for d in DIMENSIONS}
    echo = Critique(
        **values,  # type: ignore[arg-type]
        callouts=[
            Callout(
                dimension=finding.dimension,
                kind=finding.kind,
                claim="same",
                quote=finding.quote,
                rival=finding.rival,
            )
        ],
    )
    after = synthesize(OUTPUT, _outcomes([*roster, echo]))
    assert severity(after.decision) >= severity(before.decision)


def test_a_quote_from_a_critic_that_scored_five_does_not_corroborate() -> None:
    verdict = synthesize(
        OUTPUT, [critic("f", (2, 5, 5), contradiction()), critic("l", (5, 5, 5), contradiction())]
    )
    assert verdict.decision == "REVISE"
    assert verdict.escalate
    (finding,) = verdict.findings
    assert finding.critics == ["f", "l"]
    assert not finding.corroborated  # as the decision counted it


async def test_an_empty_output_is_rejected_without_calling_a_critic() -> None:
    from arbiter.contract import Case
    from arbiter.jury.critics import CriticSpec
    from arbiter.jury.jury import Jury
    from arbiter.providers.mock import MockProvider

    spy = MockProvider()
    jury = Jury([CriticSpec(name="a", provider="spy", model="m")], providers={"spy": spy})
    for empty in ("", " \n\t"):
        verdict = await jury.judge_async(Case(id="e", task="t", context="c", output=empty))
        assert verdict.decision == "REJECT"
        assert not verdict.escalate
        assert verdict.reasons == ["the output is empty: nothing in it answers the task"]
    assert spy.requests == []  # no model is billed to say an empty answer answers nothing


def test_a_lone_critic_s_uncorroborated_contradiction_does_not_claim_disagreement() -> None:
    verdict = synthesize(OUTPUT, [critic("a", (2, 5, 5), contradiction())])
    assert verdict.escalate
    assert "escalate: one critic alone cannot corroborate its finding" in verdict.reasons


def test_a_critic_s_most_severe_callouts_are_weighed_and_the_rest_counted() -> None:
    from arbiter.jury.synthesis import MAX_CALLOUTS

    many = [unsupported() for _ in range(MAX_CALLOUTS + 10)] + [contradiction()]
    verdict = synthesize(OUTPUT, [critic("a", (2, 5, 5), *many), critic("b", (2, 5, 5), *many)])
    # The one contradiction sits after 74 unsupported callouts, yet it is weighed first.
    assert verdict.decision == "REJECT"
    assert (
        f"a listed {MAX_CALLOUTS + 11} callouts; the {MAX_CALLOUTS} most severe were weighed"
        in (verdict.reasons)
    )


def test_most_severe_keeps_contradictions_then_the_rest_in_order() -> None:
    from arbiter.jury.synthesis import most_severe

    callouts = [unsupported("u1"), contradiction("c1"), unsupported("u2"), contradiction("c2")]
    assert [c.quote for c in most_severe(callouts, 3)] == ["u1", "c1", "c2"]
    assert most_severe(callouts, 10) == callouts


def test_an_offline_critique_lists_a_bounded_number_but_rates_every_finding() -> None:
    from arbiter.contract import Case
    from arbiter.jury.offline import MAX_REPORTED, run_offline_critic

    output = " ".join(f"Item {i} costs {1000 + 7 * i} dollars." for i in range(2000))
    outcome = run_offline_critic(
        "f", "factual", "mock", Case(id="p", task="t", context="Prices vary.", output=output)
    )
    assert outcome.critique is not None
    assert len(outcome.critique.callouts) == MAX_REPORTED
    assert outcome.critique.accuracy == 3  # every unsupported figure still counts
