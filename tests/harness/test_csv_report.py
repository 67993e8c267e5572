"""report_csv: one row per (example, repetition) that parses back exactly, safe in a
spreadsheet, bounded."""

from __future__ import annotations

import csv
import io

import pytest

from arbiter import escape
from arbiter.contract import Output, PairResult, Score
from arbiter.harness.csv_report import (
    FIXED_COLUMNS,
    MAX_CELL,
    SCORER_COLUMNS,
    neutralise_formula,
    report_csv,
)
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.helpers.scored import answers, dataset, echo, mentions, scored_run

SCORERS = ("mentions", "brevity", "fragile")


def _parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.fixture
def run(store: Store) -> StoredRun:
    """Two repetitions of a pass, a fail, an abstention, a scorer error, a failed call."""
    run_id = scored_run(
        store,
        dataset({"pass": "cat", "fail": "cat", "none": None, "raises": "boom", "gone": "cat"}),
        answers({"pass": "a cat", "fail": "a dog", "none": "x", "raises": "boom"}),
        k=2,
    )
    return load_run(store, run_id)


def test_the_header_names_the_fixed_columns_then_four_per_scorer(run: StoredRun) -> None:
    header = next(csv.reader(io.StringIO(report_csv(run.report, run.examples, run.results))))
    assert header == [
        *FIXED_COLUMNS,
        *(f"{name}:{part}" for name in SCORERS for part in SCORER_COLUMNS),
    ]


def test_rows_parse_back_to_exactly_one_row_per_example_and_repetition(run: StoredRun) -> None:
    rows = _parse(report_csv(run.report, run.examples, run.results))
    assert [(r["example_id"], r["repetition"]) for r in rows] == [
        (e, str(rep)) for e in ("pass", "fail", "none", "raises", "gone") for rep in (0, 1)
    ]
    by_pair = {(r.example_id, r.repetition): r for r in run.results}
    for row in rows:
        result = by_pair[(row["example_id"], int(row["repetition"]))]
        if result.output is None:
            assert row["outcome"] == "error"
            assert row["error"].startswith("SystemCrashed: ")
            assert all(row[f"{n}:{p}"] == "" for n in SCORERS for p in SCORER_COLUMNS)
            continue
        assert row["output_label"] == result.output.label
        assert row["error"] == ""
        for score in result.scores:
            value = row[f"{score.name}:value"]
            assert (float(value) if value else None) == score.value
            shown = escape.terminal(score.error or score.explanation)
            assert row[f"{score.name}:explanation"] == shown


@pytest.mark.parametrize(
    ("example_id", "outcome", "verdicts"),
    [
        ("pass", "passed", ["pass", "pass", "pass"]),
        ("fail", "failed", ["fail", "pass", "pass"]),
        ("none", "passed", ["abstain", "pass", "pass"]),
        ("raises", "passed", ["pass", "pass", "error"]),  # an error is no verdict
        ("gone", "error", ["", "", ""]),
    ],
)
def test_each_row_carries_the_outcome_and_every_verdict(
    run: StoredRun, example_id: str, outcome: str, verdicts: list[str]
) -> None:
    rows = [r for r in _parse(report_csv(run.report, run.examples, run.results))]
    row = next(r for r in rows if r["example_id"] == example_id)
    assert row["outcome"] == outcome
    assert [row[f"{name}:verdict"] for name in SCORERS] == verdicts


def test_evidence_is_one_quote_a_line_with_whether_it_was_found(run: StoredRun) -> None:
    rows = _parse(report_csv(run.report, run.examples, run.results))
    by_id = {r["example_id"]: r for r in rows}
    assert by_id["pass"]["mentions:evidence"] == "“a cat” verified — start of the output"
    assert by_id["fail"]["mentions:evidence"] == "“a dog” not found — start of the output"
    assert by_id["none"]["mentions:evidence"] == ""


def test_only_keeps_the_named_examples_in_the_order_given(run: StoredRun) -> None:
    text = report_csv(run.report, run.examples, run.results, only=["gone", "fail"])
    assert [(r["example_id"], r["repetition"]) for r in _parse(text)] == [
        ("gone", "0"),
        ("gone", "1"),
        ("fail", "0"),
        ("fail", "1"),
    ]


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "\\x0d=1"),  # shown as an escape, which no spreadsheet evaluates
        ("  =1", "'  =1"),
        ('=HYPERLINK("https://evil.example")', '\'=HYPERLINK("https://evil.example")'),
        ("a=1", "a=1"),
        ("plain", "plain"),
        ("", ""),
    ],
)
def test_a_cell_a_spreadsheet_would_evaluate_is_neutralised(
    store: Store, text: str, written: str
) -> None:
    run = load_run(store, scored_run(store, dataset({"e": "cat"}), answers({"e": text})))
    (row,) = _parse(report_csv(run.report, run.examples, run.results))
    assert row["output_label"] == written


def test_a_negative_value_stays_a_number(run: StoredRun) -> None:
    result = PairResult(
        example_id="pass",
        repetition=0,
        output=Output(label="-3"),
        scores=[Score(name="brevity", value=-0.5, passed=True)],
        passed=True,
        latency_ms=1.0,
    )
    (row,) = _parse(report_csv(run.report, run.examples, [result]))
    assert (row["brevity:value"], row["output_label"]) == ("-0.5", "'-3")
    assert neutralise_formula("-0.5") == "'-0.5"  # the guard is for text cells only


def test_control_characters_become_visible_and_newlines_stay(store: Store) -> None:
    text = "a\x1b[2Jb\x00c\x07d\u202ee\nnext\tcol"
    run = load_run(store, scored_run(store, dataset({"e": "cat"}), answers({"e": text})))
    (row,) = _parse(report_csv(run.report, run.examples, run.results))
    assert row["output_label"] == "a\\x1b[2Jb\\x00c\\x07d\\u202ee\nnext\tcol"


def test_a_lone_surrogate_is_written_as_an_escape_and_the_file_encodes(run: StoredRun) -> None:
    # The store cannot hold a lone surrogate, but a model's answer can carry one.
    result = PairResult(
        example_id="pass",
        repetition=0,
        output=Output(label="bad \ud800 half"),
        scores=[Score(name="mentions", passed=False, explanation="got \udfff")],
        passed=False,
        latency_ms=1.0,
    )
    text = report_csv(run.report, run.examples, [result])
    text.encode("utf-8")  # raises if a surrogate got through
    (row,) = _parse(text)
    assert row["output_label"] == "bad \\ud800 half"
    assert row["mentions:explanation"] == "got \\udfff"


@pytest.mark.parametrize("unit", ["x", "\x1b"])  # an escape lengthens a text fourfold
def test_a_huge_output_is_cut_to_the_cell_bound(store: Store, unit: str) -> None:
    huge = unit * 1_000_000
    run = load_run(
        store, scored_run(store, dataset({"e": "cat"}), answers({"e": huge}), scorers=[echo()])
    )
    text = report_csv(run.report, run.examples, run.results)
    (row,) = _parse(text)
    assert row["output_label"].endswith("…")
    for column in ("output_label", "echo:explanation", "echo:evidence"):
        assert len(row[column]) <= MAX_CELL
    assert len(text) < 4 * MAX_CELL


def test_a_run_scored_by_one_scorer_has_its_four_columns(store: Store) -> None:
    run_id = scored_run(store, dataset({"e": "cat"}), answers({"e": "cat"}), scorers=[mentions()])
    run = load_run(store, run_id)
    (row,) = _parse(report_csv(run.report, run.examples, run.results))
    assert list(row) == [*FIXED_COLUMNS, *(f"mentions:{p}" for p in SCORER_COLUMNS)]
    assert (row["mentions:verdict"], row["mentions:value"]) == ("pass", "1.0")
