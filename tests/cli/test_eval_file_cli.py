"""``arbiter run eval.toml``: a whole run, gate included, from one file; --dry-run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Report
from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from tests.helpers.data import yes_no_dataset

EVAL = """\
name = "nightly"
tags = {{team = "search"}}

[dataset]
path = "data.jsonl"

[system]
target = "tests.helpers.systems:{target}"

[[scorers]]
name = "label"
{gate}
"""


def _setup(tmp_path: Path, *, target: str = "mostly_right", gate: str = "") -> Path:
    dump_dataset_jsonl(yes_no_dataset(40), tmp_path / "data.jsonl")
    path = tmp_path / "eval.toml"
    path.write_text(EVAL.format(target=target, gate=gate), encoding="utf-8")
    return path


def _runs(tmp_path: Path) -> list[Any]:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        return store.list_runs()
    finally:
        store.close()


def test_an_eval_file_runs_and_stores_its_name_tags_and_hash(cli: Any, tmp_path: Path) -> None:
    import hashlib

    path = _setup(tmp_path)
    result = cli("run", str(path), "--json", "--quiet")
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    (info,) = _runs(tmp_path)
    assert (info.id, info.name, info.tags) == (report.run_id, "nightly", {"team": "search"})
    assert info.run_config.eval_file_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [s.name for s in info.run_config.scorers] == ["label"]


@pytest.mark.parametrize(
    ("floor", "code"),
    [("min_accuracy = 0.5", 0), ("min_accuracy = 0.99", 1)],
    ids=["met", "missed"],
)
def test_the_gate_of_an_eval_file_decides_the_exit_code(
    cli: Any, tmp_path: Path, floor: str, code: int
) -> None:
    path = _setup(tmp_path, gate=f"\n[gate]\n{floor}\n")
    result = cli("run", str(path), "--quiet")
    assert result.code == code, result.err
    assert ("below the floor 0.990" in result.out) is bool(code)


def test_dry_run_checks_everything_and_calls_nothing(cli: Any, tmp_path: Path) -> None:
    path = _setup(tmp_path, target="broken_on_call_if_called")
    result = cli("run", "--dry-run", str(path))
    assert result.code == 3  # the target does not exist: found without calling anything
    assert "broken_on_call_if_called" in result.err
    path = _setup(tmp_path)
    result = cli("run", "--dry-run", "--json", str(path))
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert (summary["ok"], summary["examples"], summary["pairs"]) == (True, 40, 40)
    assert not (tmp_path / "store.db").exists() or _runs(tmp_path) == []


def test_a_bad_eval_file_exits_3_with_file_line_and_key_and_writes_nothing(
    cli: Any, tmp_path: Path
) -> None:
    path = _setup(tmp_path)
    path.write_text(path.read_text().replace('name = "label"', 'name = "label"\nspeed = 3'))
    result = cli("run", str(path))
    assert result.code == 3
    (line,) = result.err.strip().splitlines()
    assert f"{path}:12:" in line
    assert "scorers[0].speed" in line
    assert not (tmp_path / "store.db").exists()


def test_options_are_not_mixed_with_an_eval_file(cli: Any, tmp_path: Path) -> None:
    path = _setup(tmp_path)
    result = cli("run", str(path), "--k", "3")
    assert result.code == 3
    assert "--k cannot be given with it" in result.err


def test_dry_run_of_options_reports_the_plan(cli: Any, tmp_path: Path) -> None:
    dump_dataset_jsonl(yes_no_dataset(10), tmp_path / "data.jsonl")
    result = cli(
        "run",
        "--dataset",
        str(tmp_path / "data.jsonl"),
        "--target",
        "tests.helpers.systems:echo_label",
        "--k",
        "2",
        "--dry-run",
    )
    assert result.code == 0, result.err
    assert "10 examples" in result.out
    assert "20 pairs" in result.out
    assert "Nothing was called" in result.out


def test_runs_lists_name_tags_and_figures_and_filters_by_tag(cli: Any, tmp_path: Path) -> None:
    path = _setup(tmp_path)
    assert cli("run", str(path), "--quiet").code == 0
    plain = tmp_path / "data.jsonl"
    assert (
        cli("run", "--dataset", str(plain), "--target", "tests.helpers.systems:echo_label").code
        == 0
    )
    listed = json.loads(cli("runs", "--tag", "team=search", "--json").out)
    assert [r["name"] for r in listed] == ["nightly"]
    assert listed[0]["summary"]["accuracy"] == pytest.approx(
        Report.model_validate_json(
            cli("report", listed[0]["id"], "-f", "json").out
        ).accuracy.estimate
    )
    assert json.loads(cli("runs", "--tag", "team=other", "--json").out) == []
    table = cli("runs").out
    assert "nightly [team=search]" in table
    assert "100.0%" in table  # echo_label is always right
