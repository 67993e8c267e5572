"""``arbiter report RUN --failures`` and the CSV, HTML and markdown exports, through the
CLI, over real runs: the QA demo, the quiz of tests/helpers/text_systems.py (one question
without a reference), hostile answers, and the test scorers that give every verdict."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Report
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.helpers import hostile_text
from tests.helpers.scored import answers, dataset, default_scorers, scored_run
from tests.helpers.text_systems import write_quiz

QA = Path(__file__).parents[2] / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"
CONTROLS = ("\x1b", "\x00", "\x07", "\u202e")


def _run(cli: Any, data: Path, target: str, *extra: str) -> str:
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--system",
        "python",
        "--target",
        target,
        "--scorer",
        "casefold",
        "--scorer",
        "f1_tokens",
        "--quiet",
        "--json",
        *extra,
    )
    assert result.code == 0, result.err
    run_id = Report.model_validate_json(result.out).run_id
    assert run_id
    return run_id


def _stored(tmp_path: Path, run_id: str) -> StoredRun:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")  # the cli fixture's store
    try:
        return load_run(store, run_id)
    finally:
        store.close()


def _not_clean(run: StoredRun) -> list[str]:
    """Example ids with a pair some scorer did not pass, in dataset order (by hand)."""
    bad = {
        r.example_id for r in run.results if r.output is None or not all(s.passed for s in r.scores)
    }
    return [e.id for e in run.examples if e.id in bad]


@pytest.fixture
def qa(cli: Any) -> str:
    return _run(cli, QA, "arbiter.demo.qa:answer")


def _failures_json(cli: Any, run_id: str, *extra: str) -> dict[str, Any]:
    result = cli("report", run_id, "--failures", "--format", "json", *extra)
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


def test_failures_lists_every_example_a_scorer_did_not_pass(
    cli: Any, qa: str, tmp_path: Path
) -> None:
    expected = _not_clean(_stored(tmp_path, qa))
    found = _failures_json(cli, qa, "--limit", "0")
    assert found["listed_total"] == len(expected) > 0
    assert sorted(e["example_id"] for e in found["examples"]) == sorted(expected)
    assert found["examples_total"] == 200
    for example in found["examples"]:
        for rep in example["repetitions"]:
            for score in rep["scores"]:
                if score["verdict"] == "fail":
                    assert score["explanation"], (example["example_id"], score["name"])


def test_failures_puts_examples_both_scorers_failed_before_those_one_failed(
    cli: Any, qa: str
) -> None:
    examples = _failures_json(cli, qa, "--limit", "0")["examples"]
    failing = [sum(s["verdict"] == "fail" for s in e["repetitions"][0]["scores"]) for e in examples]
    assert failing == sorted(failing, reverse=True)
    assert failing[0] == 2
    assert failing[-1] == 1


def test_failures_text_shows_the_worst_twenty_with_each_scorers_explanation(
    cli: Any, qa: str
) -> None:
    listed = _failures_json(cli, qa, "--limit", "0")
    result = cli("report", qa, "--failures")
    assert result.code == 0, result.err
    total = listed["listed_total"]
    assert result.out.startswith(f"{total} of 200 examples were not passed by every scorer")
    heads = re.findall(r"^✗ (\S+)  failed", result.out, flags=re.MULTILINE)
    assert heads == [e["example_id"] for e in listed["examples"][:20]]
    assert f"… and {total - 20} more examples not shown (--limit 0 shows all)" in result.out
    first = listed["examples"][0]["repetitions"][0]["scores"][0]
    assert f"casefold   fail    {first['explanation']}" in result.out


@pytest.mark.parametrize(("limit", "shown"), [("1", 1), ("3", 3), ("0", None)])
def test_limit_bounds_the_list_and_zero_shows_all(
    cli: Any, qa: str, limit: str, shown: int | None
) -> None:
    total = _failures_json(cli, qa, "--limit", "0")["listed_total"]
    found = _failures_json(cli, qa, "--limit", limit)
    assert len(found["examples"]) == (shown if shown is not None else total)
    assert found["left_out"] == total - len(found["examples"])
    text = cli("report", qa, "--failures", "--limit", limit).out
    assert len(re.findall(r"^✗ ", text, flags=re.MULTILINE)) == len(found["examples"])


def test_failures_csv_has_the_pairs_of_the_listed_examples_worst_first(cli: Any, qa: str) -> None:
    worst = [e["example_id"] for e in _failures_json(cli, qa, "--limit", "0")["examples"]]
    result = cli("report", qa, "--failures", "--format", "csv")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out, newline="")))
    assert [r["example_id"] for r in rows] == worst  # k=1: one row per example
    assert {r["casefold:verdict"] for r in rows} == {"fail"}
    assert all(r["casefold:explanation"] for r in rows)


def test_the_whole_csv_has_one_row_per_example_and_repetition(cli: Any, tmp_path: Path) -> None:
    run_id = _run(
        cli, write_quiz(tmp_path / "quiz.jsonl"), "tests.helpers.text_systems:quiz", "--k", "2"
    )
    result = cli("report", run_id, "--format", "csv", "--output", "quiz.csv")
    assert result.code == 0, result.err
    assert "wrote quiz.csv" in result.err
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(Path("quiz.csv").stat().st_mode) == 0o666 & ~umask  # not private
    with Path("quiz.csv").open(newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [(r["example_id"], r["repetition"]) for r in rows] == [
        (f"q{i}", str(rep)) for i in range(1, 7) for rep in (0, 1)
    ]
    by_pair = {(r.example_id, r.repetition): r for r in _stored(tmp_path, run_id).results}
    for row in rows:
        stored = by_pair[(row["example_id"], int(row["repetition"]))]
        for score in stored.scores:
            assert (
                row[f"{score.name}:verdict"]
                == {True: "pass", False: "fail", None: "abstain"}[score.passed]
            )
            assert row[f"{score.name}:value"] == ("" if score.value is None else repr(score.value))


def test_an_abstention_is_listed_as_undecided_and_never_as_a_fail(cli: Any, tmp_path: Path) -> None:
    run_id = _run(cli, write_quiz(tmp_path / "quiz.jsonl"), "tests.helpers.text_systems:quiz")
    found = _failures_json(cli, run_id)
    (q6,) = [e for e in found["examples"] if e["example_id"] == "q6"]
    assert q6["outcome"] == "unknown"
    assert [s["verdict"] for s in q6["repetitions"][0]["scores"]] == ["abstain", "abstain"]
    assert found["examples"][-1]["example_id"] == "q6"  # after every failed one
    text = cli("report", run_id, "--failures").out
    block = text[text.index("? q6") :]
    assert block.startswith("? q6  undecided")
    assert "fail" not in block
    assert block.count("abstain") == 2
    markdown = cli("report", run_id, "--failures", "--format", "markdown").out
    (row,) = [line for line in markdown.splitlines() if line.startswith("| q6 ")]
    assert "| undecided |" in row
    assert "casefold \\(abstain\\)" in row
    assert "fail" not in row


def test_evidence_errors_and_reported_only_scorers_are_shown(cli: Any, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        run_id = scored_run(
            store,
            dataset({"wrong": "cat", "raises": "boom", "gone": "cat", "long": "cat"}),
            answers({"wrong": "a dog", "raises": "boom", "long": "cat " * 20}),
            scorers=default_scorers(),
        )
    finally:
        store.close()
    result = cli("report", run_id, "--failures")
    assert result.code == 0, result.err
    assert "mentions  fail    missing: cat" in result.out
    assert "“a dog” not found — start of the output" in result.out
    assert "fragile   error   RuntimeError: the scorer blew up on \\x1b[2J<script>" in result.out
    assert "call failed: SystemCrashed: " in result.out
    assert "brevity   fail    40 over (value 40) (reported only)" in result.out
    for control in CONTROLS:
        assert control not in result.out
    found = _failures_json(cli, run_id)
    assert [e["example_id"] for e in found["examples"]] == ["gone", "wrong", "raises", "long"]


@pytest.fixture
def hostile(cli: Any, tmp_path: Path) -> str:
    data = hostile_text.write_dataset(tmp_path / "hostile.jsonl")
    return _run(cli, data, "tests.helpers.hostile_text:answer")


@pytest.mark.parametrize("format", ["text", "markdown", "csv", "html", "json"])
def test_hostile_answers_stay_inert_and_bounded_in_every_failures_format(
    cli: Any, hostile: str, format: str
) -> None:
    result = cli("report", hostile, "--failures", "--format", format)
    assert result.code == 0, result.err
    for control in CONTROLS:
        assert control not in result.out
    assert len(result.out) < 250_000  # a 1 MB answer did not land whole
    if format in ("markdown", "html"):
        assert "<script" not in result.out
        assert "<img" not in result.out
    if format == "json":
        outputs = {e["example_id"]: e["repetitions"][0] for e in json.loads(result.out)["examples"]}
        assert outputs["huge"]["output_chars"] == 1_000_000
        assert len(outputs["huge"]["output"]) == 1_000
        # Inert on a terminal, yet lossless: the escapes parse back to the characters.
        assert outputs["ansi"]["output"] == hostile_text.ANSWERS["ansi"]


def test_the_markdown_report_ends_with_the_worst_examples(cli: Any, hostile: str) -> None:
    result = cli("report", hostile, "--format", "markdown")
    assert result.code == 0, result.err
    section = result.out[result.out.index("### Worst examples") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(hostile_text.ANSWERS) + 1
    (crash,) = [r for r in rows if r.startswith("| crash ")]
    assert "call failed \\(rep 0\\): SystemCrashed:" in crash
    assert "&lt;script&gt;" in crash


def test_failures_html_is_one_file_with_only_the_listed_pairs(cli: Any, qa: str) -> None:
    result = cli("report", qa, "--failures", "--limit", "4", "--format", "html", "-o", "f.html")
    assert result.code == 0, result.err
    html = Path("f.html").read_text(encoding="utf-8")
    assert html.count('<tr class="outcome-') == 4
    assert "more examples left out (--limit)" in html
    assert not re.search(r"(src|href)\s*=", html)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--failures", "--format", "junit"], "--failures lists examples: use --format text"),
        (["--limit", "3"], "--limit counts the examples --failures lists: add --failures"),
    ],
)
def test_a_misused_option_is_one_line_and_exit_3(
    cli: Any, qa: str, args: list[str], message: str
) -> None:
    result = cli("report", qa, *args)
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert message in result.err


def test_a_negative_limit_is_an_invalid_option_value(cli: Any, qa: str) -> None:
    assert cli("report", qa, "--failures", "--limit", "-1").code == 3


def test_failures_of_a_jury_run_says_it_is_for_offline_runs(cli: Any) -> None:
    judged = cli(
        "judge",
        "--task",
        "Summarise.",
        "--context",
        "Refunds within 30 days.",
        "--output",
        "Refunds within 30 days.",
        "--no-audit",
    )
    run_id = re.search(r"stored as jury run (\S+)", judged.err)
    assert run_id is not None, judged.err
    result = cli("report", run_id.group(1), "--failures")
    assert result.code == 3
    assert "is a jury run: --failures is for offline runs" in result.err


def test_the_docs_csv_example_prints_what_the_docs_show(
    cli: Any, qa: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "reports.md").read_text(encoding="utf-8")
    section = doc[doc.index("### CSV: the per-example table") :]
    found = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", section, flags=re.DOTALL)
    assert found is not None
    code, shown = found.groups()
    assert cli("report", qa, "--format", "csv", "-o", "qa.csv").code == 0
    capsys.readouterr()
    exec(compile(code, "docs/reports.md", "exec"), {})
    assert capsys.readouterr().out == shown
