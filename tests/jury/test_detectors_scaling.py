"""The detectors on long texts: the same findings as on short ones, found by indexes.

No timing here (timings belong in ``bench/jury_speed.py``): these tests pin what the
linear-time detectors find on long inputs, built from the bundled cases, and that their
indexed lookups find what scanning every candidate finds.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections.abc import Callable, Iterator
from functools import cache

import pytest

import arbiter.jury.detectors as detectors
from arbiter.contract import Callout, Case
from arbiter.jury.cases import bundled_cases_path, load_cases
from arbiter.jury.detectors import clashes as clashes_module
from arbiter.jury.detectors import (
    counterparts,
    equality,
    inconsistent_figures,
    polarity,
    polarity_flips,
    run_detectors,
    settings_for,
)
from arbiter.jury.detectors.analysis import analyse
from arbiter.jury.detectors.equality import FigureIndex, comparable
from arbiter.jury.detectors.quantities import same_value
from arbiter.scoring.quotes import locate

LENSES = ("factual", "logical", "adversary")


@cache
def bundled() -> tuple[Case, ...]:
    return tuple(load_cases(bundled_cases_path()))


def clear_caches() -> None:
    """Empty every lru cache of the detectors (what a text was read as)."""
    for info in pkgutil.iter_modules(detectors.__path__):
        module = importlib.import_module(f"arbiter.jury.detectors.{info.name}")
        for value in vars(module).values():
            clear: Callable[[], None] | None = getattr(value, "cache_clear", None)
            if clear is not None and hasattr(value, "cache_info"):
                clear()


def tag(i: int) -> str:
    """A letters-only word no detector reads anything into."""
    out, i = "", i + 26 * 26
    while i:
        i, r = divmod(i, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return "zq" + out


def filler(chars: int, seed: int) -> str:
    """Sentences of nonsense words: no figure, rule word, marker or list in them."""
    words: list[str] = []
    size, i = 0, seed
    while size < chars:
        word = tag(i) + ("." if i % 9 == 8 else "")
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words) + "."


def keys(callouts: list[Callout]) -> set[tuple[str, str, str]]:
    return {(c.dimension, c.kind, c.quote) for c in callouts}


def dumped(callouts: list[Callout]) -> list[dict[str, object]]:
    return [c.model_dump() for c in callouts]


# ------------------------------------------------------------------ long texts


@pytest.mark.parametrize("lens", LENSES)
def test_text_around_a_case_changes_none_of_its_callouts(lens: str) -> None:
    # 5,000 characters of inert sentences before and after both the context and the
    # output: every bundled case keeps exactly its callouts, claims and rivals included.
    for k, case in enumerate(bundled()):
        context = f"{filler(5_000, 4 * k)}\n\n{case.context}\n\n{filler(5_000, 4 * k + 1)}"
        output = f"{filler(5_000, 4 * k + 2)}\n\n{case.output}\n\n{filler(5_000, 4 * k + 3)}"
        short = run_detectors(case.task, case.context, case.output, lens=lens)
        long = run_detectors(case.task, context, output, lens=lens)
        assert dumped(long) == dumped(short), case.id


def test_a_very_long_output_around_a_case_is_judged_like_the_case() -> None:
    case = next(c for c in bundled() if c.id == "multi_01")
    context = f"{filler(300_000, 0)}\n\n{case.context}"
    output = f"{case.output}\n\n{filler(300_000, 10**6)}"
    for lens in LENSES:
        short = run_detectors(case.task, case.context, case.output, lens=lens)
        assert short  # the case has findings to keep
        assert dumped(run_detectors(case.task, context, output, lens=lens)) == dumped(short)


def repeated(case: Case, times: int) -> str:
    return "\n\n".join([case.output] * times)


@pytest.mark.parametrize("lens", LENSES)
def test_an_output_repeated_keeps_every_callout_of_one_copy(lens: str) -> None:
    # 60 copies of the output (some 20,000 characters): the first copy is read as the
    # output alone was, so each of its findings is found again, quoted verbatim. Later
    # copies may add findings (two copies of one list are one longer list).
    for case in bundled():
        output = repeated(case, 60)
        short = run_detectors(case.task, case.context, case.output, lens=lens)
        long = run_detectors(case.task, case.context, output, lens=lens)
        assert keys(short) <= keys(long), case.id
        for callout in long:
            assert callout.quote in output
            assert locate(callout.quote, output) is not None


def test_the_findings_on_a_long_output_do_not_depend_on_what_was_read_before() -> None:
    case = next(c for c in bundled() if c.id == "inc_01")
    context, output = "\n\n".join([case.context] * 50), repeated(case, 300)
    first = {lens: dumped(run_detectors(case.task, context, output, lens=lens)) for lens in LENSES}
    clear_caches()
    again = {lens: dumped(run_detectors(case.task, context, output, lens=lens)) for lens in LENSES}
    assert first == again
    assert any(first.values())


# ------------------------------------------------------------------ indexes = scans


SOUP_TEXT = (
    "5|30|days|45|days|$120|$135|$255|£85|3|x|78%|312|400|14:05|14:50|45|minutes|2|"
    "hours|per|door|doors|1,200|about|nearly|the|The|In|short,|To|confirm,|required|"
    "optional|not|allowed|cannot|may|must|always|never|includes|refund|customer|fee|"
    "team|budget|hours|total|price|2-4|weeks|two|weeks|14|days|half|of|,|,|.|.|;|\n|-|"
    "(|)|and|or|to|from"
)
SOUP = SOUP_TEXT.split("|")


def soup(words: int, seed: int) -> str:
    """Figures, rule words and punctuation shuffled: ties and clashes galore."""
    rng = random.Random(seed)
    return " ".join(rng.choice(SOUP) for _ in range(words))


def long_inputs() -> Iterator[tuple[str, str, str]]:
    """Bundled cases, alone and repeated; long texts of many of them; shuffled soups."""
    cases = bundled()
    for case in cases:
        yield case.task, case.context, case.output
        yield case.task, case.context, repeated(case, 4)
        yield case.task, "\n\n".join([case.context] * 3), repeated(case, 3)
    for start in range(0, len(cases), 12):
        group = cases[start : start + 12]
        context = "\n\n".join(c.context for c in group * 4)
        output = "\n\n".join(c.output for c in group * 5)
        yield group[0].task, context, output
    for seed in range(30):
        yield "Summarise.", soup(400, seed), soup(150, 1000 + seed)


@pytest.fixture
def scan_everything(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bool], None]]:
    """Switch the detectors between scanning every candidate and always indexing."""

    def switch(scan: bool) -> None:
        for module in (equality, counterparts, clashes_module, polarity):
            monkeypatch.setattr(module, "SCAN_LIMIT", 10**9 if scan else 0)
        clear_caches()

    yield switch
    clear_caches()


def test_indexed_lookups_find_what_scanning_every_candidate_finds(
    scan_everything: Callable[[bool], None],
) -> None:
    # Scanning is how the detectors compared figures and rule words before they were
    # indexed; the indexes must change no finding.
    inputs = list(long_inputs())
    results = {}
    for scan in (True, False):
        scan_everything(scan)
        results[scan] = [
            dumped(run_detectors(task, context, output, lens=lens))
            for task, context, output in inputs
            for lens in (*LENSES, "custom")
        ]
    assert results[False] == results[True]
    assert sum(map(len, results[True])) > 1000


def test_equal_figures_are_looked_up_as_a_scan_finds_them() -> None:
    text = " ".join(c.context + " " + c.output for c in bundled())
    quantities = analyse(text).quantities
    index = FigureIndex(quantities)
    assert len(quantities) > 400
    for tolerance in (0.0, 0.05, 0.1):
        for q in quantities:
            equal = [
                i
                for i, c in enumerate(quantities)
                if comparable(q, c) and same_value(q, c, tolerance=tolerance)
            ]
            assert index.any_equal(q, tolerance) == bool(equal)
            if tolerance == 0.0:
                assert index.first_equal(q) == (equal[0] if equal else None)
                rest = [i for i in equal if i != equal[0]] if equal else []
                exclude = equal[0] if equal else -1
                assert index.first_equal(q, exclude=exclude) == (rest[0] if rest else None)


def test_a_percentage_of_huge_numbers_is_no_error() -> None:
    # 100 * a / b overflows for numbers of 308 digits: no ratio, rather than a crash.
    context = f"We had {'9' * 308} cats and {'9' * 320} dogs."
    callouts = run_detectors("Summarise.", context, "A rise of 37% overall.", lens="factual")
    assert [c.kind for c in callouts] == ["unsupported"]


@pytest.mark.parametrize("scan", [True, False])
def test_of_equally_close_figures_the_earliest_is_the_partner(
    scan_everything: Callable[[bool], None], scan: bool
) -> None:
    scan_everything(scan)
    output = "The fee is $13 monthly. The fee is $29 yearly. The fee is $47 weekly."
    for lens in LENSES:
        found = inconsistent_figures("", "", output, settings_for(lens))
        assert [(c.quote, c.rival) for c in found] == [
            ("The fee is $29 yearly", "The fee is $13 monthly"),
            ("The fee is $47 weekly", "The fee is $13 monthly"),
        ]


@pytest.mark.parametrize("scan", [True, False])
def test_of_equally_close_rules_the_earliest_is_the_rival(
    scan_everything: Callable[[bool], None], scan: bool
) -> None:
    scan_everything(scan)
    # Three wordings of one rule: the same words around "required", other clauses.
    context = (
        "Signature required on delivery. The signature is required on delivery! "
        "A signature is required on delivery."
    )
    found = polarity_flips(
        "", context, "A signature is optional on delivery.", settings_for("logical")
    )
    assert [c.rival for c in found] == ["Signature required on delivery"]
