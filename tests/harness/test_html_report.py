"""report_html: one self-contained page, every untrusted text inert, every size bounded.

The page is parsed here with the standard library's HTML parser; the same pages are
opened in a real browser in tests/integration/test_html_report_browser.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from arbiter.contract import Output, PairResult, Score
from arbiter.harness.html_report import report_html
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.helpers import hostile_text
from tests.helpers.scored import answers, dataset, default_scorers, echo, scored_run

ALLOWED_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "main", "header", "footer"),
    *("section", "div", "p", "span", "strong", "code", "q", "h1", "h2", "h3"),
    *("table", "thead", "tbody", "tr", "th", "td", "ul", "li", "details", "summary"),
    *("input", "label"),
}
"""Every element the page may have: none loads anything or runs anything."""
ALLOWED_ATTRIBUTES = {
    "lang",
    "charset",
    "http-equiv",
    "content",
    "name",
    "class",
    "style",
    "type",
    "id",
    "for",
    "role",
    "aria-label",
}
BAR_STYLE = re.compile(r"left:\d+(\.\d+)?%(;width:\d+(\.\d+)?%)?")
"""The only inline style: an interval bar's position, our own numbers."""
CSP = "default-src 'none'; style-src 'unsafe-inline'"


class _Page(HTMLParser):
    """The elements, attributes and text of a page."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.style = ""
        self._in_style = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
        else:
            self.text.append(data)

    def row_classes(self) -> list[str]:
        """The classes of the pairs table's body rows (the only rows with an outcome)."""
        return [
            a.get("class") or ""
            for tag, a in self.tags
            if tag == "tr" and "outcome-" in (a.get("class") or "")
        ]


def _hostile_run(store: Store) -> StoredRun:
    """Hostile answers, a hostile id and cohort, scored by scorers that quote them back."""
    table: dict[str, str | list[str]] = dict(hostile_text.ANSWERS)
    table["<script>id</script>"] = "<b>id</b>"
    words: dict[str, str | None] = {key: "</textarea><script>w</script>" for key in table}
    run_id = scored_run(
        store,
        dataset(words, cohort="<i>cohort</i>\x1b[1m"),
        answers(table),
        scorers=[*default_scorers(), echo(quotes=12)],
    )
    return load_run(store, run_id)


@pytest.fixture
def hostile(store: Store) -> StoredRun:
    return _hostile_run(store)


def _html(run: StoredRun, **options: object) -> str:
    return report_html(run.report, run.examples, run.results, **options)  # type: ignore[arg-type]


def test_the_page_loads_nothing_and_runs_nothing(hostile: StoredRun) -> None:
    page = _Page(_html(hostile))
    assert {tag for tag, _ in page.tags} <= ALLOWED_TAGS
    for tag, attributes in page.tags:
        assert set(attributes) <= ALLOWED_ATTRIBUTES, (tag, attributes)
        if "style" in attributes:
            assert BAR_STYLE.fullmatch(attributes["style"] or ""), attributes
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}) in page.tags
    for external in ("url(", "@import", "http:", "https:", "//"):
        assert external not in page.style


@pytest.mark.parametrize("payload", list(hostile_text.ANSWERS.values())[:-1])
def test_a_hostile_answer_is_shown_as_text(hostile: StoredRun, payload: str) -> None:
    html = _html(hostile)
    text = "".join(_Page(html).text)
    shown = payload.replace("\r", "\\x0d").replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    shown = shown.replace("\x00", "\\x00").replace("\u202e", "\\u202e")
    assert shown in text  # as the reader sees it: every character, controls as escapes
    for raw in ("<script", "<img", "</textarea", "\x1b", "\x00", "\u202e", 'onmouseover="'):
        assert raw not in html


def test_hostile_ids_cohorts_references_explanations_and_quotes_are_text(
    hostile: StoredRun,
) -> None:
    page = _Page(_html(hostile))
    text = "".join(page.text)
    assert "<script>id</script>" in text  # the id
    assert "<i>cohort</i>\\x1b[1m" in text  # the cohort
    assert '{"word":"</textarea><script>w</script>"}' in text  # the reference
    assert "12 quote(s)" in text  # echo's evidence, folded
    assert "… 2 more" in text  # ten quotes shown of twelve


def test_a_lone_surrogate_is_shown_as_an_escape(hostile: StoredRun) -> None:
    result = PairResult(
        example_id="script",
        repetition=0,
        output=Output(label="half \ud800 of a pair"),
        scores=[Score(name="mentions", passed=False, explanation="got \udfff")],
        passed=False,
        latency_ms=1.0,
    )
    html = report_html(hostile.report, hostile.examples, [result])
    html.encode("utf-8")  # raises if a surrogate got through
    assert "half \\ud800 of a pair" in html
    assert "got \\udfff" in html


def test_a_one_megabyte_answer_does_not_land_whole(store: Store) -> None:
    huge = "y" * 1_000_000
    run = load_run(
        store, scored_run(store, dataset({"e": "cat"}), answers({"e": huge}), scorers=[echo()])
    )
    html = _html(run)
    assert len(html) < 30_000
    assert "1,000,000 characters, clipped" in html
    assert max(len(m) for m in re.findall("y+", html)) <= 2_000


def test_the_table_has_a_row_per_pair_and_marks_clean_ones(store: Store) -> None:
    run_id = scored_run(
        store,
        dataset({"ok": "cat", "bad": "cat", "gone": "cat"}),
        answers({"ok": "cat", "bad": "dog"}),
        k=3,
    )
    page = _Page(_html(load_run(store, run_id)))
    assert page.row_classes() == [
        *["outcome-passed clean"] * 3,
        *["outcome-failed"] * 3,
        *["outcome-error"] * 3,
    ]


def test_only_keeps_the_named_examples_in_that_order_under_its_own_heading(
    hostile: StoredRun,
) -> None:
    html = _html(hostile, only=["huge", "script"])
    assert "Examples not passed by every scorer, worst first" in html
    rows = re.findall(r'<tr class="outcome-[a-z ]+"><td><code>([^<]*)</code>', html)
    assert rows == ["huge", "script"]


def test_a_long_table_stops_at_its_bound_and_says_so(store: Store) -> None:
    words: dict[str, str | None] = {f"e{i}": "cat" for i in range(30)}
    run = load_run(store, scored_run(store, dataset(words), answers(dict.fromkeys(words, "cat"))))
    page = _Page(_html(run, max_pairs=12))
    assert len(page.row_classes()) == 12
    assert "The table shows the first 12 of 30 pairs." in "".join(page.text)


def test_intervals_are_drawn_within_the_track(hostile: StoredRun) -> None:
    styles = [a["style"] for _, a in _Page(_html(hostile)).tags if a.get("style")]
    assert styles  # a bar per scorer that decided something
    for style in styles:
        numbers = [float(n) for n in re.findall(r"[\d.]+", style or "")]
        assert all(0 <= n <= 100 for n in numbers)
        if len(numbers) == 2:
            assert numbers[0] + numbers[1] <= 100.5
