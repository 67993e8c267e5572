"""The held-out case file, and the detector families it was written to measure.

The held-out file is measured, never fitted: these tests pin its shape and coverage,
not a figure on it. Each family's detector is pinned on a minimal example of our own
and on its faithful twin, which must stay clean.
"""

from __future__ import annotations

from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

from arbiter.jury.cases import load_cases
from arbiter.jury.detectors import run_detectors

FAMILIES = ("weekday_month", "negation", "figure_swap", "entity")
HELDOUT = Path(str(files("arbiter.jury").joinpath("data").joinpath("heldout_cases.jsonl")))


def test_heldout_file_loads_with_at_least_40_labelled_cases() -> None:
    cases = load_cases(HELDOUT)
    assert len(cases) >= 40
    assert all(case.expected is not None for case in cases)


@pytest.mark.parametrize("family", FAMILIES)
def test_heldout_file_covers_each_family_with_six_cases(family: str) -> None:
    counts = Counter(d.family for case in load_cases(HELDOUT) for d in case.defects[:1])
    assert counts[family] >= 6


def test_heldout_file_has_clean_controls_and_entities_only_revise() -> None:
    cases = load_cases(HELDOUT)
    assert sum(case.expected == "ACCEPT" for case in cases) >= 10
    entity = [c for c in cases if any(d.family == "entity" for d in c.defects)]
    assert {c.expected for c in entity} == {"REVISE"}


@pytest.mark.parametrize("case", load_cases(HELDOUT), ids=lambda c: c.id)
def test_heldout_quotes_are_verbatim_in_the_output(case: object) -> None:
    from arbiter.contract import Case

    assert isinstance(case, Case)
    assert all(d.quote in case.output for d in case.defects)


# (family, context, defective output, kind expected, faithful twin)
MINIMAL = [
    (
        "weekday_month",
        "The pool is closed on Monday for cleaning and reopens on Tuesday.",
        "The pool is closed on Saturday for cleaning and reopens on Tuesday.",
        "contradicted",
        "Closed on Monday for cleaning, the pool reopens on Tuesday.",
    ),
    (
        "weekday_month",
        "Applications open in October and close in November.",
        "Applications open in June and close in November.",
        "contradicted",
        "You can apply from October until November.",
    ),
    (
        "negation",
        "Do not leave luggage unattended in the terminal.",
        "You may leave luggage unattended in the terminal.",
        "contradicted",
        "Never leave your luggage unattended in the terminal.",
    ),
    (
        "negation",
        "No customer records were exposed during the breach.",
        "Some customer records were exposed during the breach.",
        "contradicted",
        "During the breach, no customer records were exposed.",
    ),
    (
        "figure_swap",
        "The north wing has 120 beds and the south wing has 45 beds.",
        "The north wing has 45 beds and the south wing has 120 beds.",
        "contradicted",
        "The south wing has 45 beds, while the north wing has 120 beds.",
    ),
    (
        "entity",
        "The contract was signed by the supplier on Friday.",
        "The contract was signed by Acme Logistics on Friday.",
        "unsupported",
        "On Friday the supplier signed the contract.",
    ),
]


def _kinds(context: str, output: str) -> set[str]:
    return {
        c.kind
        for lens in ("factual", "logical", "adversary")
        for c in run_detectors("Summarise.", context, output, lens=lens)
    }


@pytest.mark.parametrize(("family", "context", "output", "kind", "twin"), MINIMAL)
def test_detectors_catch_minimal_example_of_each_family(
    family: str, context: str, output: str, kind: str, twin: str
) -> None:
    assert kind in _kinds(context, output), family


@pytest.mark.parametrize(("family", "context", "output", "kind", "twin"), MINIMAL)
def test_detectors_stay_quiet_on_the_faithful_twin(
    family: str, context: str, output: str, kind: str, twin: str
) -> None:
    assert _kinds(context, twin) == set(), family


def test_unsupported_name_is_never_a_contradiction() -> None:
    kinds = _kinds(
        "The keynote was well received by the audience.",
        "The keynote, given by Sarah Chen, was well received by the audience.",
    )
    assert kinds == {"unsupported"}


def test_month_after_a_figure_keeps_its_own_words() -> None:
    # "two weeks" is a figure; the words that say what May is for lie beyond it.
    context = (
        "Interviews will be held online in the first two weeks of May. "
        "Fellows start on 1 September."
    )
    output = (
        "Interviews take place online in the first two weeks of May, "
        "and fellows start on 1 September."
    )
    assert _kinds(context, output) == set()


def test_may_opening_a_sentence_is_not_the_month() -> None:
    context = "The office is closed in June. You may work from home."
    output = "May staff work from home? Yes, and the office is closed in June."
    assert "contradicted" not in _kinds(context, output)
