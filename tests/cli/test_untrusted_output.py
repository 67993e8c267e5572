"""What systems, datasets and models produce stays inert in every format it is printed in.

Defect 6 of the foundation issue: JUnit reports carried raw control characters (invalid
XML), Markdown reports put labels into tables unescaped, and the terminal obeyed escape
sequences in labels and judged outputs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from arbiter import escape

HOSTILE = [
    "clear\x1b[2J\x1b]0;pwned\x07",
    "pipe|and\nnewline",
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "nul\x00bell\x07",
    "bidi\u202eevil",
    "[red]not markup[/red]",
]


SYSTEM = "hostile_labels_system"  # a module of its own: no other test imports this name
EXPECTED = "expected\x1b[1m|"


@pytest.fixture
def hostile_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module-style target whose labels and error messages are hostile.

    ``predict`` answers each input's hostile label (wrong on every example) and fails on
    the first; ``predict_expected`` answers the expected label (right on every example).
    """
    (tmp_path / f"{SYSTEM}.py").write_text(
        "def predict(input):\n"
        "    if input['i'] == 0:\n"
        "        raise ValueError('boom \\x1b[31m\\x00 <b>|</b>')\n"
        "    return input['label'].replace('<NUL>', chr(0))  # a NUL the system says\n"
        "\n"
        "\n"
        "def predict_expected(input):\n"
        f"    return {EXPECTED!r}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, SYSTEM, raising=False)
    yield SYSTEM
    sys.modules.pop(SYSTEM, None)  # the file goes with tmp_path


def _run(cli: Any, dataset: Path, target: str) -> str:
    result = cli("run", "--dataset", str(dataset), "--target", target, "--json")
    assert result.code == 0, result.err
    run_id: str = json.loads(result.out)["run_id"]
    return run_id


@pytest.fixture
def hostile_dataset(tmp_path: Path) -> Path:
    """Examples whose ids, inputs, expected labels and cohorts are all hostile.

    A dataset may hold no NUL (it is refused as input: tests/datasets/test_loader.py),
    so ids, inputs and cohorts hold every hostile text but NUL; the input names it
    ``<NUL>`` and the system answers it as a real NUL.
    """
    rows = [
        {
            "id": f"{text.replace(chr(0), '')}-{i}",
            "input": {"i": i, "label": text.replace(chr(0), "<NUL>")},
            "expected_label": EXPECTED,
            "cohort": text.replace(chr(0), ""),
        }
        for i, text in enumerate(HOSTILE)
    ]
    dataset = tmp_path / "hostile.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return dataset


@pytest.fixture
def hostile_run(cli: Any, hostile_system: str, hostile_dataset: Path) -> str:
    """A stored run whose labels, ids, cohorts and error messages are all hostile."""
    return _run(cli, hostile_dataset, f"{hostile_system}:predict")


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text
    assert "\x00" not in text
    assert "\x07" not in text
    assert "\u202e" not in text


def test_junit_is_valid_xml_whatever_the_system_said(cli: Any, hostile_run: str) -> None:
    result = cli("report", hostile_run, "--format", "junit")
    assert result.code == 0
    suite = ET.fromstring(result.out.encode("utf-8"))  # raises on invalid XML
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names[0] == "clear\\x1b[2J\\x1b]0;pwned\\x07-0"
    error = next(suite.iter("error"))
    # The store keeps a NUL of a message as U+FFFD (PostgreSQL text cannot hold one).
    assert "boom \\x1b[31m\ufffd" in (error.get("message") or "")
    _no_raw_controls(result.out)


def test_markdown_shows_labels_as_written_and_never_interprets_them(
    cli: Any, hostile_run: str
) -> None:
    result = cli("report", hostile_run, "--format", "markdown")
    assert result.code == 0
    _no_raw_controls(result.out)
    assert "<script>" not in result.out
    assert "&lt;script&gt;" in result.out
    assert "](javascript:" not in result.out  # no link survives
    rows = [line for line in result.out.splitlines() if line.startswith("| ")]
    for row in rows:  # every table row keeps its cells: no pipe or newline broke one
        assert row.count(" | ") == rows[0].count(" | ") or row.count(" | ") in (1, 4)


@pytest.mark.parametrize("format", ["text"])
def test_the_terminal_report_shows_escapes_instead_of_obeying_them(
    cli: Any, hostile_run: str, format: str
) -> None:
    shown = cli("report", hostile_run)
    written = cli("report", hostile_run, "--format", format, "--output", "report.txt")
    assert shown.code == written.code == 0
    _no_raw_controls(shown.out)
    _no_raw_controls(Path("report.txt").read_text(encoding="utf-8"))
    assert "\\x1b[2J" in shown.out


def test_runs_prints_a_hostile_dataset_name_inertly(
    cli: Any, hostile_system: str, hostile_dataset: Path
) -> None:
    # The listing shows the dataset's name, here the file's stem.
    named = hostile_dataset.rename(hostile_dataset.with_name("clear\x1b[2J[red]x.jsonl"))
    _run(cli, named, f"{hostile_system}:predict")
    result = cli("runs")
    assert result.code == 0, result.err
    _no_raw_controls(result.out + result.err)
    assert "clear\\x1b[2J[red]x" in result.out


def test_diff_shows_flipped_hostile_labels_as_text(
    cli: Any, hostile_system: str, hostile_dataset: Path, hostile_run: str
) -> None:
    # Every example flips from wrong (or failed) in A to right in B, so the flip table
    # prints each hostile id, expected label and answer.
    fixed = _run(cli, hostile_dataset, f"{hostile_system}:predict_expected")
    result = cli("diff", hostile_run, fixed)
    assert result.code == 0, result.err
    assert f"{len(HOSTILE)} fixed, 0 broken" in result.out
    assert "fixed (wrong in A, right in B)" in result.out
    _no_raw_controls(result.out + result.err)
    assert "clear\\x1b[2J\\x1b]0;pwned\\x07-0" in result.out  # an id, shown escaped
    assert "expected\\x1b[1m|" in result.out  # the expected label and B's answer
    assert "[red]not markup[/red]" in result.out  # shown as text, not parsed as markup


def test_judge_prints_a_hostile_output_inertly(cli: Any) -> None:
    output = "Refunds [red]not markup[/red] within 45 days.\x1b[2J\x1b]0;pwned\x07"
    result = cli(
        "judge",
        "--task",
        "Summarise.",
        "--context",
        "Refunds within 30 days.",
        "--output",
        output,
        "--no-audit",
    )
    assert result.code in (1, 2)
    _no_raw_controls(result.out + result.err)
    assert "\\x1b[2J" in result.out
    assert "[red]not markup[/red]" in result.out  # shown as text, not parsed as markup


@pytest.mark.parametrize("text", HOSTILE)
def test_every_escape_is_linear_and_inert(text: str) -> None:
    long = text * 20_000
    for render in (escape.terminal, escape.markdown, escape.xml, escape.html):
        out = render(long)
        _no_raw_controls(out)
    assert "<" not in escape.markdown(text)
    assert "<" not in escape.html(text)
    assert "\n" not in escape.markdown(text)
    assert "|" not in escape.markdown(text).replace("\\|", "")
    assert escape.terminal(text, limit=5).endswith("…") or len(escape.terminal(text)) <= 5
