"""The markdown report's "worst examples" section: a table no cell can break or dress up."""

from __future__ import annotations

import re

import pytest

from arbiter.harness.failures import find_failures
from arbiter.harness.formats import failures_markdown, report_markdown
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.helpers import hostile_text
from tests.helpers.scored import answers, dataset, default_scorers, echo, mentions, scored_run

_CELL_BREAK = re.compile(r"(?<!\\)\|")
"""A pipe that separates cells: one not escaped with a backslash."""


@pytest.fixture
def hostile(store: Store) -> StoredRun:
    table: dict[str, str | list[str]] = dict(hostile_text.ANSWERS)
    table["id|with`pipe`<b>\nnewline"] = "fine"
    words: dict[str, str | None] = dict.fromkeys(table, "<b>never</b>|`found`")
    run_id = scored_run(store, dataset(words), answers(table), scorers=[*default_scorers(), echo()])
    return load_run(store, run_id)


def _section(markdown: str) -> list[str]:
    """The section's table: its header row, then its body rows (the rule left out)."""
    start = markdown.index("### Worst examples")
    lines = markdown[start:].splitlines()
    return [line for line in lines if line.startswith("| ")]


def _body(markdown: str) -> list[str]:
    return _section(markdown)[1:]


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in _CELL_BREAK.split(row)[1:-1]]


def test_every_row_keeps_its_five_cells_whatever_the_texts(hostile: StoredRun) -> None:
    rows = _section(report_markdown(hostile.report, hostile.examples, hostile.results))
    header, *body = rows
    assert _cells(header) == ["example", "outcome", "reps not passed", "what went wrong", "output"]
    assert len(body) == len(hostile_text.ANSWERS) + 1  # every example failed echo
    for row in body:
        assert len(_cells(row)) == 5, row


def test_no_cell_holds_html_a_code_span_a_link_or_a_line_break(hostile: StoredRun) -> None:
    markdown = report_markdown(hostile.report, hostile.examples, hostile.results)
    section = markdown[markdown.index("### Worst examples") :]
    assert "<" not in section
    assert not re.search(r"(?<!\\)`", section)
    assert "](" not in section
    for raw in ("\x1b", "\x00", "\x07", "\r", "\u202e"):
        assert raw not in section
    body = _body(markdown)
    assert len(body) == len(hostile_text.ANSWERS) + 1  # one line each: no newline survived


def test_texts_are_shown_escaped_not_dropped(hostile: StoredRun) -> None:
    section = failures_markdown(
        find_failures(hostile.report, hostile.examples, hostile.results, limit=None)
    )
    assert r"id\|with\`pipe\`&lt;b&gt; newline" in section  # the id, on one line
    assert r"&lt;script&gt;window.\_\_pwned=1;alert\(1\)&lt;/script&gt;" in section
    assert r"clear\\x1b\[2J" in section


def test_a_cell_is_clipped(store: Store) -> None:
    huge = "z" * 1_000_000
    run = load_run(store, scored_run(store, dataset({"e": "cat"}), answers({"e": huge})))
    section = failures_markdown(find_failures(run.report, run.examples, run.results))
    assert len(section) < 2_000
    assert "z…" in section


def test_abstentions_are_named_as_such_and_failed_calls_as_failed_calls(store: Store) -> None:
    run_id = scored_run(
        store,
        dataset({"none": None, "gone": "cat"}),
        answers({"none": "x"}),
        scorers=[mentions()],
    )
    run = load_run(store, run_id)
    rows = {
        _cells(r)[0]: _cells(r)
        for r in _body(report_markdown(run.report, run.examples, run.results))
    }
    assert rows["none"][1] == "undecided"
    assert rows["none"][3] == "mentions \\(abstain\\): the example names no word"
    assert rows["gone"][1] == "failed"
    assert rows["gone"][3].startswith("call failed \\(rep 0\\): SystemCrashed: ")


def test_a_clean_run_says_so(store: Store) -> None:
    run = load_run(
        store,
        scored_run(store, dataset({"e": "cat"}), answers({"e": "cat"}), scorers=[mentions()]),
    )
    markdown = report_markdown(run.report, run.examples, run.results)
    assert "Every scorer passed every repetition of every example." in markdown


def test_the_section_lists_the_worst_ten_and_counts_the_rest(store: Store) -> None:
    words: dict[str, str | None] = {f"e{i:02}": "cat" for i in range(14)}
    run = load_run(store, scored_run(store, dataset(words), answers(dict.fromkeys(words, "dog"))))
    markdown = report_markdown(run.report, run.examples, run.results)
    assert len(_body(markdown)) == 10
    assert f"_… and 4 more (`arbiter report {run.report.run_id} --failures`)._" in markdown
