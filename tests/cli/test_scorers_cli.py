"""``arbiter scorers`` lists what is installed; ``arbiter run --scorer`` scores free text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Report
from arbiter.scoring.registry import BUILTIN_SCORERS
from tests.helpers.text_systems import write_quiz


def test_scorers_lists_every_builtin_with_its_arguments(cli: Any) -> None:
    result = cli("scorers")
    assert result.code == 0, result.err
    for name in BUILTIN_SCORERS:
        assert f"│ {name} " in result.out
    assert "pattern (required)" in result.out
    assert "threshold=0.5" in result.out


def test_scorers_json_describes_each_argument(cli: Any) -> None:
    result = cli("scorers", "--json")
    assert result.code == 0, result.err
    described = {entry["name"]: entry for entry in json.loads(result.out)}
    assert set(BUILTIN_SCORERS) <= set(described)
    regex = described["regex"]
    assert regex["usage"] == "regex:pattern=VALUE[,ARG=VALUE,...]"
    assert regex["arguments"][0] == {
        "name": "pattern",
        "type": "str",
        "required": True,
        "doc": "A regular expression in RE2 syntax (Python's, without backreferences or "
        "lookaround).",
    }
    assert {"name": "mode", "default": "search"}.items() <= regex["arguments"][2].items()
    assert described["casefold"]["reference"] == "expected"
    assert described["casefold"]["usage"] == "casefold"
    assert described["contains"]["usage"] == "contains[:ARG=VALUE,...]"


def test_one_scorer_is_shown_in_full(cli: Any) -> None:
    result = cli("scorers", "numeric")
    assert result.code == 0, result.err
    assert result.out.startswith("numeric (deterministic, version 1)")
    assert "The value is the absolute error." in result.out
    assert "usage: --scorer numeric[:ARG=VALUE,...]" in result.out
    assert "Largest absolute difference that passes." in result.out
    assert "``" not in result.out


def test_an_unknown_scorer_is_one_line_and_exit_3(cli: Any) -> None:
    result = cli("scorers", "nope")
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert "unknown scorer 'nope' (arbiter scorers lists every scorer)" in result.err
    assert "'all_of'" not in result.err  # not every name on one line


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("contians", "did you mean 'contains' or 'must_contain'?"),
        ("exatc", "did you mean 'exact'?"),
        ("f1", "did you mean 'f1_tokens' or 'tool_call_f1'?"),
    ],
)
def test_an_unknown_scorer_suggests_the_closest_names(
    cli: Any, tmp_path: Path, typed: str, suggested: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "input": {}, "expected": "x", "output": "x"}\n')
    result = cli("run", "--dataset", str(data), "--system", "precomputed", "--scorer", typed)
    assert result.code == 3
    assert f"unknown scorer {typed!r}; {suggested} (arbiter scorers lists every scorer)" in (
        result.err
    )
    assert result.err.count("\n") == 1


def _install_plugins(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution on sys.path publishing a hostile and a broken scorer."""
    (root / "hostile_scorer.py").write_text(
        textwrap.dedent(
            '''
            from arbiter.contract import Score
            from arbiter.scoring.base import scorer

            @scorer(name="hostile", description="[bold red]loud[/] \\x1b[2J cleared")
            def hostile(*, when: str = "\\x1b[31m"):
                """Hostile.

                Args:
                    when: [link=https://example.invalid]click[/link]
                """
                return lambda example, output: Score(passed=True)
            '''
        ),
        encoding="utf-8",
    )
    info = root / "fake_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: fake-plugins\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[arbiter.scorers]\nhostile = hostile_scorer:hostile\nbroken = no_such_module:factory\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(root))


def test_plugins_are_listed_inert_and_a_broken_one_is_named(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "site").mkdir()
    _install_plugins(tmp_path / "site", monkeypatch)
    result = cli("scorers")
    assert result.code == 0, result.err
    assert "│ hostile " in result.out
    assert "[bold red]loud[/] \\x1b[2J cleared" in result.out  # shown, not obeyed
    assert "\x1b" not in result.out
    assert "scorer 'broken' (no_such_module:factory) cannot be loaded" in result.err
    shown = cli("scorers", "hostile")
    assert "[link=https://example.invalid]click[/link]" in shown.out
    assert "\x1b" not in shown.out


# --- arbiter run with text scorers -------------------------------------------------------


def _quiz_run(cli: Any, tmp_path: Path, *options: str) -> Report:
    data = write_quiz(tmp_path / "quiz.jsonl")
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--target",
        "tests.helpers.text_systems:quiz",
        "--quiet",
        "--json",
        *options,
    )
    assert result.code == 0, result.err
    return Report.model_validate_json(result.out)


def test_a_free_text_dataset_runs_with_two_text_scorers(cli: Any, tmp_path: Path) -> None:
    report = _quiz_run(cli, tmp_path, "--scorer", "casefold", "--scorer", "f1_tokens")
    casefold, f1 = report.sections["casefold"], report.sections["f1_tokens"]
    assert (casefold.passed, casefold.failed, casefold.abstained) == (2, 3, 1)
    assert (f1.passed, f1.failed, f1.abstained) == (4, 1, 1)
    assert f1.value is not None
    assert f1.value.estimate == pytest.approx((1 + 1 + 0.5 + 0 + 2 / 3) / 5)
    assert casefold.classification is None  # free text is not a class
    # Both gate: a repetition passes only when neither failed; q6 is unknown.
    assert (report.accuracy.estimate, report.accuracy.n, report.undecided) == (0.4, 5, 1)


def test_gate_on_picks_the_scorer_that_decides(cli: Any, tmp_path: Path) -> None:
    report = _quiz_run(
        cli, tmp_path, "--scorer", "casefold", "--scorer", "f1_tokens", "--gate-on", "f1_tokens"
    )
    assert report.accuracy.estimate == pytest.approx(4 / 5)


def test_a_scorer_used_twice_is_told_apart_by_as(cli: Any, tmp_path: Path) -> None:
    report = _quiz_run(
        cli,
        tmp_path,
        "--scorer",
        "f1_tokens",
        "--scorer",
        "f1_tokens:threshold=0.9,as=f1_strict",
    )
    assert report.sections["f1_strict"].passed == 2
    assert report.sections["f1_strict"].spec.args == {"threshold": 0.9}


def test_a_run_whose_scorer_needs_a_reference_no_example_has_is_refused(
    cli: Any, tmp_path: Path
) -> None:
    data = tmp_path / "bare.jsonl"
    data.write_text('{"id": "a", "input": {"question": "Say something."}}\n', encoding="utf-8")
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--target",
        "tests.helpers.text_systems:quiz",
        "--quiet",
        "--scorer",
        "casefold",
    )
    assert result.code == 3
    assert "no example has an expected, which scorer 'casefold' compares with" in result.err


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("regex:pattern=(?=x)", "not RE2 syntax"),
        ("numeric:abs_tol=-1", "'abs_tol' parameter of numeric must be a number >= 0"),
        ('json:json_schema={"type": 3}', "not a valid JSON Schema"),
        ("length", "give at least one of"),
    ],
)
def test_bad_scorer_arguments_exit_3_before_any_call(
    cli: Any, tmp_path: Path, option: str, needle: str
) -> None:
    data = write_quiz(tmp_path / "quiz.jsonl")
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--target",
        "tests.helpers.text_systems:quiz",
        "--quiet",
        "--scorer",
        option,
    )
    assert result.code == 3
    assert needle in result.err
    assert result.err.count("\n") == 1


def test_a_short_list_of_names_is_given_whole_after_the_suggestion() -> None:
    from arbiter.plugins import unknown_name

    known = ("anthropic", "gemini", "openai")
    assert unknown_name("provider", "gemeni", known) == (
        "unknown provider 'gemeni'; did you mean 'gemini'? known: 'anthropic', 'gemini', 'openai'"
    )
    assert unknown_name("provider", 5, known) == (
        "unknown provider 5; known: 'anthropic', 'gemini', 'openai'"
    )


@pytest.mark.parametrize("columns", [80, 120])
def test_the_list_reads_at_80_and_120_columns(
    cli: Any, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    from arbiter.cli import common
    from arbiter.service.scoring import scorer_registry

    monkeypatch.setenv("COLUMNS", str(columns))
    common.out_console.cache_clear()
    try:
        result = cli("scorers")
    finally:
        common.out_console.cache_clear()
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert all(len(line) <= columns for line in lines)
    first_cells = {line.split("│")[1].strip() for line in lines if line.startswith("│")}
    assert set(scorer_registry().names()) <= first_cells  # every name whole on its line
    assert "…" not in result.out
    assert ("kind" in lines[2]) is (columns == 120)
    assert ("left out" in result.err) is (columns == 80)
