"""The string detectors, family by family: what they catch, and what they must not."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arbiter.jury.detectors as detectors
from arbiter.contract import Callout
from arbiter.jury.detectors import (
    DEFAULT_SETTINGS,
    LENS_SETTINGS,
    DetectorSettings,
    contradicted_figures,
    inconsistent_figures,
    list_length_breaches,
    polarity_flips,
    run_detectors,
    unsupported_markers,
)
from arbiter.jury.detectors.figure_words import MONTH, NUMBER_WORD, anchors
from arbiter.jury.detectors.quantities import extract_quantities, same_value
from arbiter.jury.detectors.text import segment_bounds, tokenize
from arbiter.scoring.quotes import locate

LENSES = ("factual", "logical", "adversary")
CASES = Path(detectors.__file__).parents[1] / "data" / "cases.jsonl"


def all_lenses(task: str, context: str, output: str) -> dict[str, list[Callout]]:
    return {lens: run_detectors(task, context, output, lens=lens) for lens in LENSES}


def of(callouts: list[Callout], dimension: str, kind: str) -> list[Callout]:
    return [c for c in callouts if c.dimension == dimension and c.kind == kind]


def assert_verbatim(callouts: list[Callout], output: str) -> None:
    for callout in callouts:
        assert callout.quote in output
        assert locate(callout.quote, output) is not None


# ------------------------------------------------------------------ quantities


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1,200 seats", "twelve hundred seats"),
        ("1,200 seats", "1.2k seats"),
        ("$2,500", "$2.5k"),
        ("$2,500", "2,500 dollars"),
        ("50% of pay", "fifty percent of pay"),
        ("50% of pay", "half of pay"),
        ("two weeks", "14 days"),
        ("one year", "12 months"),
        ("March 3, 2026", "2026-03-03"),
        ("3 March 2026", "2026-03-03"),
        ("3rd of March", "March 3, 2026"),
        ("25p", "£0.25"),
        ("sixty (60) days", "60 days"),
        ("$40 million", "$40,000,000"),
        ("2pm", "14:00"),
    ],
)
def test_paraphrased_figures_normalise_to_the_same_value(a: str, b: str) -> None:
    (first,), (second,) = extract_quantities(a), extract_quantities(b)
    assert same_value(first, second)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("99.9%", "99.99%"),
        ("$2,500", "£2,500"),
        ("14 days", "14 weeks"),
        ("3 March 2026", "3 March 2025"),
        ("14:05", "14:50"),
        ("2.5k", "2.5"),
    ],
)
def test_different_figures_differ(a: str, b: str) -> None:
    (first,), (second,) = extract_quantities(a), extract_quantities(b)
    assert not same_value(first, second)


@pytest.mark.parametrize(
    "text",
    [
        "INC-2209",
        "p99 latency",
        "version 8.6.2",
        "Intro:\n1. First item",
        "Flat 3B",
        "ticket #4471",
        "24/7 support",
        "advisory SA-2025-031",
    ],
)
def test_identifiers_versions_and_list_markers_are_not_figures(text: str) -> None:
    assert extract_quantities(text) == []


def test_a_range_gives_both_ends_the_unit() -> None:
    values = [q.value for q in extract_quantities("Delivery takes 2 to 4 business days.")]
    assert values == [2.0, 4.0]
    assert {q.unit for q in extract_quantities("2 to 4 business days")} == {"business"}


# ------------------------------------------------------------------ figures vs context


@pytest.mark.parametrize(
    ("context", "output", "rival"),
    [
        (
            "As of June the trial enrolled 240 participants across 6 sites.",
            "As of June the trial enrolled 240 participants across 8 sites.",
            "6 sites",
        ),
        (
            "Monthly rent: $1,650. Security deposit: $1,800, held in a protected scheme.",
            "You pay rent of $1,650 and a security deposit of $1,500.",
            "$1,800",
        ),
        (
            "The provider commits to 99.9% monthly uptime for the database.",
            "The provider commits to 99.99% monthly uptime for the database.",
            "99.9%",
        ),
        (
            "The fellowship accepts applications until 13 April 2026.",
            "The fellowship accepts applications until 30 April 2026.",
            "13 April 2026",
        ),
        (
            "The reset link expires 24 hours after it is sent.",
            "The reset link expires 48 hours after it is sent.",
            "24 hours",
        ),
        (
            "Anything above $2,500 must be approved by the finance director.",
            "Anything above $3k must be approved by the finance director.",
            "$2,500",
        ),
        (
            "Card refunds are processed within 10 business days.",
            "Card refunds are processed within two weeks.",
            "10 business days",
        ),
    ],
    ids=["number", "money", "percentage", "date", "duration", "money-k", "duration-words"],
)
def test_a_figure_that_differs_from_its_counterpart_is_contradicted(
    context: str, output: str, rival: str
) -> None:
    found = of(
        contradicted_figures("", context, output, LENS_SETTINGS["factual"]),
        "accuracy",
        "contradicted",
    )
    assert [c.rival for c in found] == [rival]
    assert_verbatim(found, output)


@pytest.mark.parametrize(
    ("task", "context", "output"),
    [
        (
            "",
            "Seated capacity: 1,200 (theatre style) or 640 (banquet style).",
            "The hall seats twelve hundred people theatre-style, or 640 at banquet tables.",
        ),
        (
            "",
            "Anything above $2,500 needs the director.",
            "Anything over $2.5k needs the director.",
        ),
        (
            "",
            "Free tier: 3,500 API calls per month.",
            "The free tier gives you 3.5k API calls a month.",
        ),
        (
            "",
            "For 33 weeks, pay is 50% of average weekly earnings.",
            "For 33 weeks you get half of your average weekly earnings.",
        ),
        (
            "",
            "Report damage within 14 days. Replacements ship within 2 business days.",
            "You have two weeks to report damage; replacements ship within 2 business days.",
        ),
        (
            "",
            "Orders ship within 2 business days. Refunds are issued within 5 business days.",
            "Refunds are issued within 5 business days of us receiving your return.",
        ),
        (
            "",
            "Maintenance will take place on 2026-03-03 from 01:00 to 03:00 UTC.",
            "Maintenance is scheduled for March 3, 2026, between 01:00 and 03:00 UTC.",
        ),
        (
            "",
            "Early-bird tickets are discounted by 15%. Groups get an additional 10% off.",
            "Groups of five get an extra 10% off.",
        ),
        (
            "",
            "Doors: £85 each. Replace 3 interior doors.",
            "The doors come to £255 (3 x £85).",
        ),
        (
            "Answer for a contractor on a 12-month contract.",
            "Contractors on contracts longer than 6 months are eligible.",
            "Contractors on a 12-month contract are eligible.",
        ),
        (
            "",
            "Notice: not less than sixty (60) days' written notice.",
            "You must give at least 60 days' written notice.",
        ),
    ],
    ids=[
        "twelve-hundred",
        "2.5k",
        "3.5k",
        "half",
        "two-weeks",
        "other-business-days",
        "iso-date",
        "other-percentage",
        "arithmetic",
        "figure-from-the-task",
        "word-and-digits",
    ],
)
def test_paraphrased_or_backed_figures_are_no_defect(task: str, context: str, output: str) -> None:
    for lens, callouts in all_lenses(task, context, output).items():
        assert [c for c in callouts if c.dimension == "accuracy"] == [], lens


def test_a_figure_with_no_counterpart_is_unsupported_only_for_lenses_that_flag_it() -> None:
    context = "USB-C charging; a 10-minute charge gives about 3 hours of playback."
    output = "Battery life of 40 hours per charge; 10 minutes of charging gives about 3 hours."
    found = all_lenses("", context, output)
    for lens in ("factual", "adversary"):
        (callout,) = of(found[lens], "accuracy", "unsupported")
        assert callout.quote == "Battery life of 40 hours per charge"
    assert of(found["logical"], "accuracy", "unsupported") == []


def test_new_figures_of_a_proposal_are_not_unsupported() -> None:
    callouts = run_detectors(
        "Propose a rollout plan.",
        "The old certificate expires this quarter.",
        "I suggest a 3-week rollout.",
        lens="adversary",
    )
    assert callouts == []


def test_factual_pairs_the_only_unrestated_figure_and_logical_does_not() -> None:
    context = "Probation lasts a probationary period of 6 months. Notice is one month."
    output = "Your probation lasts 3 months. Notice is one month."
    found = all_lenses("", context, output)
    assert [c.rival for c in of(found["factual"], "accuracy", "contradicted")] == ["6 months"]
    assert found["logical"] == []
    assert of(found["adversary"], "accuracy", "contradicted") == []


# ------------------------------------------------------------------ internal inconsistency


@pytest.mark.parametrize(
    ("context", "output", "quote", "rival"),
    [
        (
            "The service desk can handle about 40 installs per day.",
            "I suggest a 3-week rollout. Over the 5 weeks of the rollout, track failures.",
            "Over the 5 weeks of the rollout",
            "I suggest a 3-week rollout",
        ),
        (
            "14:05: alert fired. 14:50: incident resolved.",
            "Checkout was down for about 45 minutes. During the 30-minute outage, "
            "customers could not pay.",
            "During the 30-minute outage",
            "Checkout was down for about 45 minutes",
        ),
        (
            "Doors: £85 each. Labour: £35 per hour, 2 hours per door. Replace 3 doors.",
            "The doors come to £255 and labour to £210 (6 hours at £35 per hour), a total of "
            "£465. To confirm, the total for the job comes to £495.",
            "the total for the job comes to £495",
            "a total of £465",
        ),
        (
            "312 of 400 staff responded.",
            "312 of 400 staff replied, a response rate of 78%. With a response rate of 87%, "
            "the results are clear.",
            "With a response rate of 87%",
            "a response rate of 78%",
        ),
        (
            "New members can cancel within 14 days of joining.",
            "New members can cancel within 14 days of joining. In short, you have a 30-day "
            "cooling-off period.",
            "you have a 30-day cooling-off period",
            "New members can cancel within 14 days of joining",
        ),
    ],
    ids=["definite-weeks", "definite-minutes", "to-confirm-total", "same-words", "in-short"],
)
@pytest.mark.parametrize("lens", LENSES)
def test_one_quantity_stated_twice_differently_is_inconsistent(
    lens: str, context: str, output: str, quote: str, rival: str
) -> None:
    found = inconsistent_figures("", context, output, LENS_SETTINGS[lens])
    assert [(c.quote, c.rival) for c in found] == [(quote, rival)]
    assert all(c.dimension == "consistency" and c.kind == "contradicted" for c in found)


@pytest.mark.parametrize(
    ("context", "output"),
    [
        ("", "Week 1: pilot. Week 2: general departments. Week 3: Finance and Legal."),
        (
            "For the first 6 weeks pay is 90%. For the next 33 weeks pay is 50%, with 26 "
            "weeks' service.",
            "For the first 6 weeks you get 90%. For the next 33 weeks you get half. You need "
            "26 weeks' service.",
        ),
        (
            "Approved hires: 4 backend engineers, 2 product designers and 1 engineering manager.",
            "Hire 4 backend engineers, 2 product designers and 1 engineering manager.",
        ),
        (
            "Checkout conversion fell from 3.2% in February to 2.4% in March.",
            "Checkout conversion fell from 3.2% in February to 1.4% in March.",
        ),
    ],
    ids=["labels", "backed-figures", "enumeration", "a-contradiction-is-not-also-a-clash"],
)
def test_different_figures_for_different_things_are_consistent(context: str, output: str) -> None:
    for lens in LENSES:
        assert inconsistent_figures("", context, output, LENS_SETTINGS[lens]) == [], lens


# ------------------------------------------------------------------ polarity


@pytest.mark.parametrize(
    ("context", "output", "quote"),
    [
        (
            "For orders over $500, a signature is required on delivery.",
            "Because your order is over $500, a signature is optional on delivery.",
            "a signature is optional on delivery",
        ),
        (
            "Proof of address is not required for renewals.",
            "You'll need a photo, and proof of address is required for renewals.",
            "and proof of address is required for renewals",
        ),
        (
            "Personal devices are prohibited on the production network.",
            "Personal devices are allowed on the production network.",
            "Personal devices are allowed on the production network",
        ),
        (
            "Members can bring guests during opening hours.",
            "Unfortunately, members cannot bring guests, even during opening hours.",
            "members cannot bring guests",
        ),
        (
            "The nightly pipeline always runs the full integration test suite.",
            "The nightly pipeline never runs the full integration test suite.",
            "The nightly pipeline never runs the full integration test suite",
        ),
        (
            "Both plans include automatic daily backups.",
            "The Premium plan excludes automatic daily backups.",
            "The Premium plan excludes automatic daily backups",
        ),
        (
            "Every employee, including contractors, is eligible for a learning budget.",
            "Contractors are not eligible for the learning budget.",
            "Contractors are not eligible for the learning budget",
        ),
        (
            "It does not cover water damage, even for swimming.",
            "The warranty covers water damage, so swimming is fine.",
            "The warranty covers water damage",
        ),
    ],
    ids=[
        "required-optional",
        "negation-removed",
        "prohibited-allowed",
        "can-cannot",
        "always-never",
        "include-exclude",
        "negation-inserted",
        "not-cover-covers",
    ],
)
def test_a_flipped_rule_is_a_consistency_contradiction(
    context: str, output: str, quote: str
) -> None:
    found = polarity_flips("", context, output, LENS_SETTINGS["logical"])
    assert [c.quote for c in found] == [quote]
    assert found[0].dimension == "consistency"
    assert found[0].kind == "contradicted"
    assert found[0].rival is not None
    assert found[0].rival in context


@pytest.mark.parametrize(
    ("context", "output"),
    [
        (
            "Admission to the collection is free, and booking is optional. Booking is "
            "required for temporary exhibitions.",
            "For the collection, booking is not required and entry is free. Temporary "
            "exhibitions are different: you need to book.",
        ),
        (
            "Eating and drinking are prohibited in all laboratory areas.",
            "Food and drink are not allowed anywhere in the labs.",
        ),
        (
            "Sale items are final and cannot be returned.",
            "Sale items are final and can't be returned.",
        ),
        ("Students may not work alone after 18:00.", "After 18:00 you must not work alone."),
        ("A credit card is not required to sign up.", "You don't need a credit card to sign up."),
        (
            "Marketplace sellers are excluded. We always ask for a photo.",
            "The promise excludes marketplace sellers, and we will always ask for a photo.",
        ),
        ("Exchanges are not offered.", "We don't do exchanges."),
        ("The museum is closed on Mondays.", "Note that the museum is closed on Mondays."),
        (
            "Annual memberships cannot be cancelled early except for medical reasons.",
            "An annual membership can only be ended early for medical reasons.",
        ),
    ],
    ids=[
        "not-required-is-optional",
        "not-allowed-is-prohibited",
        "cannot-is-can't",
        "must-not-is-may-not",
        "don't-need-is-not-required",
        "same-polarity",
        "negated-both-sides",
        "note-is-not-a-negation",
        "can-only-is-a-restriction",
    ],
)
def test_the_same_rule_in_other_words_is_no_flip(context: str, output: str) -> None:
    for lens in LENSES:
        assert polarity_flips("", context, output, LENS_SETTINGS[lens]) == [], lens


def test_logical_hunts_a_bare_negation_that_factual_leaves_alone() -> None:
    context = "It does not cover water damage, even for swimming."
    output = "The warranty covers water damage, so swimming is fine."
    found = all_lenses("", context, output)
    assert of(found["logical"], "consistency", "contradicted")
    assert of(found["factual"], "consistency", "contradicted") == []


# ------------------------------------------------------------------ list length


ONBOARDING = "\n".join(f"{i}. Step number {i} of the checklist." for i in range(1, 8))


@pytest.mark.parametrize(
    ("task", "output", "quote"),
    [
        ("List up to 5 onboarding steps.", ONBOARDING, "6. Step number 6 of the checklist."),
        (
            "Give exactly three reasons the customer churned.",
            "1. The module was too slow.\n2. Pricing went up 12%.",
            "2. Pricing went up 12%.",
        ),
        (
            "Name at most three risks to the launch date.",
            "- Credentials missing.\n- Two engineers on leave.\n- Review not submitted.\n"
            "- Legal sign-off not confirmed.",
            "- Legal sign-off not confirmed.",
        ),
        (
            "List no more than 2 deadlines.",
            "Deadlines:\n* Design freeze: 9 May\n* Beta: 6 June\n* GA: 15 July",
            "* GA: 15 July",
        ),
    ],
    ids=["up-to-5-with-7", "exactly-3-with-2", "at-most-three-with-4", "no-more-than-2"],
)
@pytest.mark.parametrize("lens", LENSES)
def test_a_list_breaking_the_task_s_count_is_flagged(
    lens: str, task: str, output: str, quote: str
) -> None:
    found = list_length_breaches(task, "", output, LENS_SETTINGS[lens])
    assert [(c.dimension, c.kind, c.quote) for c in found] == [
        ("completeness", "unsupported", quote)
    ]


@pytest.mark.parametrize(
    ("task", "output"),
    [
        ("List up to 5 onboarding steps.", "1. Laptop.\n2. Access.\n3. Security course."),
        ("Give exactly three tips.", "1. Switch off.\n2. Reserve capacity.\n3. Delete volumes."),
        ("Summarise the decisions.", ONBOARDING),
        ("Write a two-sentence description.", "- One.\n- Two.\n- Three."),
        ("Summarise in at most 50 words.", "- One.\n- Two.\n- Three."),
        ("Give exactly three examples.", "A passport, a licence and an ID card are examples."),
    ],
    ids=["fewer-than-up-to", "exactly", "no-constraint", "sentences", "words", "prose-three"],
)
def test_a_list_within_the_task_s_count_is_fine(task: str, output: str) -> None:
    for lens in LENSES:
        assert list_length_breaches(task, "", output, LENS_SETTINGS[lens]) == [], lens


def test_only_the_adversary_counts_items_in_prose() -> None:
    task = "Give exactly three examples of acceptable evidence of identity."
    output = "Two examples of acceptable evidence are a passport and a driving licence."
    found = {lens: list_length_breaches(task, "", output, LENS_SETTINGS[lens]) for lens in LENSES}
    assert [c.quote for c in found["adversary"]] == [output]
    assert found["factual"] == found["logical"] == []


# ------------------------------------------------------------------ unsupported markers


@pytest.mark.parametrize(
    ("output", "quote"),
    [
        (
            "It lifts 120 kg. Studies show that standing boosts focus, and it is quiet.",
            "Studies show that standing boosts focus",
        ),
        (
            "Experts agree that shorter grass stays greener.",
            "Experts agree that shorter grass stays greener",
        ),
        (
            "A reply within 2 hours is guaranteed for every request.",
            "A reply within 2 hours is guaranteed for every request",
        ),
        (
            "The membrane removes 100% of bacteria from water.",
            "The membrane removes 100% of bacteria from water",
        ),
        ("This method never fails in practice.", "This method never fails in practice"),
        ("The cream is clinically proven to work.", "The cream is clinically proven to work"),
    ],
    ids=["studies-show", "experts-agree", "guaranteed", "100%", "never-fails", "clinically-proven"],
)
@pytest.mark.parametrize("lens", LENSES)
def test_a_marker_the_context_never_uses_is_unsupported(lens: str, output: str, quote: str) -> None:
    found = unsupported_markers("", "A plain spec sheet.", output, LENS_SETTINGS[lens])
    assert [(c.dimension, c.kind, c.quote) for c in found] == [("accuracy", "unsupported", quote)]


def test_a_marker_the_context_uses_is_no_defect() -> None:
    context = "The lowest price is guaranteed. We always ask for a photo."
    output = "The lowest price is guaranteed, and we will always ask for a photo."
    for lens in LENSES:
        assert unsupported_markers("", context, output, LENS_SETTINGS[lens]) == [], lens


def test_only_the_adversary_treats_weak_absolutes_as_markers() -> None:
    output = "The kettle always switches off when it boils."
    found = {
        lens: unsupported_markers("", "Automatic shut-off.", output, LENS_SETTINGS[lens])
        for lens in LENSES
    }
    assert [c.quote for c in found["adversary"]] == ["The kettle always switches off when it boils"]
    assert found["factual"] == found["logical"] == []


# ------------------------------------------------------------------ all detectors


def bundled_cases() -> list[dict[str, str]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.parametrize("case", bundled_cases(), ids=lambda case: case["id"])
def test_every_quote_on_the_bundled_cases_is_verbatim_and_unique(case: dict[str, str]) -> None:
    for lens in LENSES:
        callouts = run_detectors(case["task"], case["context"], case["output"], lens=lens)
        assert_verbatim(callouts, case["output"])
        keys = [(c.dimension, c.kind, c.quote) for c in callouts]
        assert len(keys) == len(set(keys))


def test_run_detectors_is_deterministic() -> None:
    case = bundled_cases()[-1]
    first = [
        run_detectors(case["task"], case["context"], case["output"], lens=lens) for lens in LENSES
    ]
    second = [
        run_detectors(case["task"], case["context"], case["output"], lens=lens) for lens in LENSES
    ]
    assert first == second


def test_an_unknown_lens_runs_with_the_default_settings() -> None:
    args = ("Summarise.", "Refunds within 30 days.", "Refunds within 45 days.")
    assert run_detectors(*args, lens="custom") == run_detectors(
        *args, lens="x", settings=DEFAULT_SETTINGS
    )
    assert run_detectors(*args, lens="custom")


def test_explicit_settings_override_the_lens() -> None:
    lenient = DetectorSettings(figure_match=99.0, unsupported_figures=False)
    output = "Refunds within 45 days."
    assert (
        run_detectors("", "Refunds within 30 days.", output, lens="factual", settings=lenient) == []
    )


def test_the_three_lenses_have_presets_that_differ() -> None:
    assert set(LENS_SETTINGS) == set(LENSES)
    assert len(set(LENS_SETTINGS.values())) == len(LENSES)
    assert LENS_SETTINGS["factual"].figure_match < LENS_SETTINGS["logical"].figure_match
    assert LENS_SETTINGS["logical"].polarity_match < LENS_SETTINGS["factual"].polarity_match
    assert LENS_SETTINGS["adversary"].weak_markers
    assert LENS_SETTINGS["adversary"].list_prose


def test_the_public_surface_is_explicit_and_sorted() -> None:
    def isort_style(name: str) -> tuple[int, str]:  # constants, then classes, then functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert detectors.__all__ == sorted(detectors.__all__, key=isort_style)
    public = {n for n, v in vars(detectors).items() if not n.startswith("_")}
    modules = {n for n in public if type(getattr(detectors, n)).__name__ == "module"}
    assert public - modules == set(detectors.__all__)


SENTENCES = st.sampled_from(
    [
        "Refunds take 5 business days.",
        "A signature is not required.",
        "Studies show it works 100% of the time.",
        "- Item one\n- Item two",
        "The fee is $2.5k, due on March 3, 2026 at 14:00.",
        "In short, the total is £495.",
        "Members can't bring guests; always book.",
        "twelve hundred people, half of them",
        "",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    context=st.lists(SENTENCES, max_size=4).map(" ".join),
    output=st.one_of(st.text(max_size=120), st.lists(SENTENCES, max_size=4).map(" ".join)),
    lens=st.sampled_from([*LENSES, "custom"]),
)
def test_any_text_yields_verbatim_quotes_and_never_raises(
    context: str, output: str, lens: str
) -> None:
    callouts = run_detectors("List up to 1 item.", context, output, lens=lens)
    assert_verbatim(callouts, output)


# ------------------------------------------------------------------ fast paths

# Anchors, segment ends and clause breaks are found without trying one regex at every
# position of a long text; these are the plain regexes they must agree with.
REFERENCE_ANCHOR = re.compile(
    rf"[\d$€£¥₹]|\b(?:US|A|C|NZ|HK)\$|\b(?:USD|EUR|GBP)\b|(?i:\b(?:half|{NUMBER_WORD})\b)"
    rf"|\b{MONTH}\b"
)
REFERENCE_SEGMENT_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|\n|;")
REFERENCE_CLAUSE_BREAK = re.compile(r",(?=\s)|\s[-–—]\s|[()]")
TRICKY = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from(
            [
                *("one", "One", "ONE", "twenty-one", "o'clock", "half", "2one", "one2", "_one"),
                *("May", "Sept", "US$", "NZ$", "A$", "USD", "EUR", "5", "1,200", "x", "é"),
                *("ſix", "ſeven", "fıve", "K", "٣", "-", "–", "—", " - ", "'", "’", "...", "!"),
                *("?", ";", ",", "(", ")", '"', "”", " ", "  ", "\n", "\t", "\u00a0", "."),
            ]
        ),
        max_size=16,
    ).map("".join),
)


@settings(max_examples=400, deadline=None)
@given(text=TRICKY)
def test_anchors_are_where_the_anchor_regex_matches(text: str) -> None:
    expected = []
    position = 0
    while match := REFERENCE_ANCHOR.search(text, position):
        expected.append(match.span())
        position = match.start() + 1
    assert anchors(text) == expected


@settings(max_examples=400, deadline=None)
@given(text=TRICKY)
def test_segments_and_clauses_are_where_their_regexes_match(text: str) -> None:
    segments = (0, *(m.end() for m in REFERENCE_SEGMENT_END.finditer(text)))
    breaks = [m.end() for m in REFERENCE_CLAUSE_BREAK.finditer(text)]
    assert segment_bounds(text) == segments
    tokens = tokenize(text, [])
    assert tokens.clause_starts == tuple(sorted([0, *breaks, *segments]))
    for i, start in enumerate(tokens.starts):
        segment = [
            j for j, s in enumerate(tokens.starts) if _part(segments, s) == _part(segments, start)
        ]
        assert list(tokens.segment(i)) == segment


def _part(bounds: tuple[int, ...], offset: int) -> int:
    return sum(bound <= offset for bound in bounds)


def _clear_detector_caches() -> None:
    for info in pkgutil.iter_modules(detectors.__path__):
        module = importlib.import_module(f"{detectors.__name__}.{info.name}")
        for value in vars(module).values():
            if hasattr(value, "cache_clear") and hasattr(value, "cache_info"):
                value.cache_clear()


def test_what_the_lenses_share_does_not_depend_on_which_lens_ran_first() -> None:
    cases = bundled_cases()
    in_order = {
        (case["id"], lens): run_detectors(case["task"], case["context"], case["output"], lens=lens)
        for case in cases
        for lens in LENSES
    }
    for case in cases:
        for lens in reversed(LENSES):
            _clear_detector_caches()
            alone = run_detectors(case["task"], case["context"], case["output"], lens=lens)
            assert alone == in_order[case["id"], lens]
