"""The command line, end to end in-process: exit codes, one-line errors, stored runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from arbiter.contract import Report
from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from tests.helpers.cli import run_json
from tests.helpers.data import yes_no_dataset


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "yes-no.jsonl"
    dump_dataset_jsonl(yes_no_dataset(60), path)
    return path


def _run(cli: Any, data_file: Path, target: str, *extra: str) -> str:
    return run_json(cli, data_file, target, *extra)


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def test_demo_runs_reports_and_says_where_it_stored_the_run(cli: Any, tmp_path: Path) -> None:
    result = cli("demo", "--quiet")
    assert result.code == 0, result.err
    assert "accuracy (mapped)" in result.out
    assert "stored as run" in result.err
    assert "arbiter gate" in result.err  # what to try next
    (run,) = _store(tmp_path).list_runs()
    assert run.status == "completed"
    assert run.n_done == run.n_pairs >= 200


def test_run_prints_a_json_report_and_stores_it(cli: Any, data_file: Path, tmp_path: Path) -> None:
    run_id = _run(cli, data_file, "mostly_right", "--k", "2")
    info = _store(tmp_path).get_run(run_id)
    assert info.n_done == 120
    listed = cli("runs")
    assert run_id in listed.out


@pytest.mark.parametrize(
    ("content", "suffix", "needle"),
    [
        ('{"examples": [', ".json", "bad.json:1:15: invalid JSON"),
        ('{"id": "a", "input": {}}\n', ".jsonl", "expected_label"),
        ("", ".jsonl", "no examples"),
        ("id,label\n1,2\n", ".txt", "unsupported file type"),
    ],
)
def test_bad_dataset_exits_3_with_one_line_and_writes_nothing(
    cli: Any, tmp_path: Path, content: str, suffix: str, needle: str
) -> None:
    bad = tmp_path / f"bad{suffix}"
    bad.write_text(content, encoding="utf-8")
    result = cli("run", "--dataset", str(bad), "--target", "tests.helpers.systems:echo_label")
    assert result.code == 3
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert needle in lines[0]
    assert "bad" in lines[0]
    assert not (tmp_path / "store.db").exists()


def test_dataset_given_as_a_directory_exits_3(cli: Any, tmp_path: Path) -> None:
    result = cli("run", "--dataset", str(tmp_path), "--target", "tests.helpers.systems:echo_label")
    assert result.code == 3
    assert "directory" in result.err


def test_unknown_python_target_exits_3(cli: Any, data_file: Path) -> None:
    result = cli("run", "--dataset", str(data_file), "--target", "no_such_module:fn")
    assert result.code == 3
    assert "cannot import" in result.err


def test_unreachable_http_system_exits_1(cli: Any, data_file: Path) -> None:
    from tests.integration.serving import free_port

    result = cli(
        "run",
        "--dataset",
        str(data_file),
        "--system",
        "http",
        "--target",
        f"http://127.0.0.1:{free_port()}/predict",
        "--retries",
        "0",
        "--limit",
        "3",
        "--quiet",
    )
    assert result.code == 1
    assert "every call failed; the first: SystemUnreachable" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("run", "--k", "zero"), "--k 'zero': not an integer (see arbiter run --help)"),
        (("run", "--k", "0"), "--k '0': expected a number of at least 1 (see arbiter run --help)"),
        (
            ("gate", "RUN", "--min-accuracy", "nan"),
            "--min-accuracy 'nan': not a number (expected a number in [0, 1])",
        ),
        (
            ("gate", "RUN", "--min-accuracy=1.5"),
            "--min-accuracy '1.5': expected a number in [0, 1]",
        ),
        (("gate", "RUN", "--min-decided", "1.5"), "--min-decided '1.5': not an integer"),
        (("report", "RUN", "--format", "xml"), "--format 'xml': 'xml' is not one of 'text'"),
    ],
)
def test_a_bad_option_value_is_invalid_input_one_line_exit_3(
    cli: Any, args: tuple[str, ...], line: str
) -> None:
    result = cli(*args)
    assert result.code == 3
    assert result.err.startswith("arbiter: error: ")
    assert line in result.err
    assert result.err.count("\n") == 1
    assert "╭" not in result.err
    assert "Usage:" not in result.err


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("gate", "RUN", "--bogus"), "No such option: --bogus (see arbiter gate --help)"),
        (("report",), "Missing argument 'run_id'. (see arbiter report --help)"),
        (("run", "--k"), "Option '--k' requires an argument. (see arbiter run --help)"),
    ],
)
def test_a_command_line_that_cannot_be_parsed_is_a_usage_error_one_line_exit_2(
    cli: Any, args: tuple[str, ...], line: str
) -> None:
    result = cli(*args)
    assert result.code == 2
    assert result.err == f"arbiter: error: {line}\n"


def test_help_and_version_still_exit_0(cli: Any) -> None:
    assert cli("gate", "--help").code == 0
    assert cli("--version").code == 0


def test_unknown_run_id_exits_3_with_one_line(cli: Any) -> None:
    result = cli("report", "nope")
    assert result.code == 3
    assert result.err.strip().count("\n") == 0
    assert "no run matches id 'nope'" in result.err


@pytest.mark.parametrize("fmt", ["json", "markdown", "junit", "text"])
def test_report_formats(cli: Any, data_file: Path, fmt: str) -> None:
    run_id = _run(cli, data_file, "mostly_right")
    result = cli("report", run_id[:15], "--format", fmt)
    assert result.code == 0, result.err
    if fmt == "json":
        assert Report.model_validate_json(result.out).run_id == run_id
    elif fmt == "markdown":
        assert "| label | precision | recall | f1 | support |" in result.out
    elif fmt == "junit":
        suite = ET.fromstring(result.out.split("?>", 1)[1])
        wrong = len(suite.findall("testcase/failure"))
        assert int(suite.get("failures", "-1")) == wrong > 0
        assert int(suite.get("tests", "0")) == 60
    else:
        assert "per cohort" in result.out


def test_gate_passes_and_fails_with_every_reason(cli: Any, data_file: Path) -> None:
    run_id = _run(cli, data_file, "mostly_right")
    passed = cli("gate", run_id, "--min-accuracy", "0.5")
    assert passed.code == 0
    assert "gate passed" in passed.out
    failed = cli(
        "gate",
        run_id,
        "--min-accuracy",
        "0.99",
        "--min-pass-k",
        "0.99",
        "--cohort",
        "a=0.99",
        "--cohort",
        "zzz=0.1",
    )
    assert failed.code == 1
    assert "accuracy" in failed.out
    assert "pass^1" in failed.out
    assert "cohort 'a'" in failed.out
    assert "cohort 'zzz' has no examples" in failed.out


def test_gate_fails_on_a_significant_regression_against_the_baseline(
    cli: Any, data_file: Path
) -> None:
    good = _run(cli, data_file, "mostly_right")
    bad = _run(cli, data_file, "often_wrong")
    result = cli("gate", bad, "--baseline", good, "--json")
    assert result.code == 1
    verdict = json.loads(result.out)
    assert any("regressed" in f for f in verdict["failures"])
    tolerated = cli("gate", bad, "--baseline", good, "--epsilon", "0.9")
    assert tolerated.code == 0


def always_down(input: dict[str, Any]) -> str:
    """A system under test whose every call fails."""
    raise ConnectionError("the service is down")


def test_gate_fails_a_run_whose_every_call_failed_with_no_floor_set(
    cli: Any, data_file: Path
) -> None:
    ran = cli(
        "run", "--dataset", str(data_file), "--target", "tests.cli.test_cli:always_down", "-q"
    )
    assert ran.code == 1
    (run,) = json.loads(cli("runs", "--json").out)
    result = cli("gate", run["id"])
    assert result.code == 1
    assert "errors: 60 of 60 calls failed (100.0%; at most 20.0% allowed" in result.out
    assert "gate passed" not in result.out
    relaxed = cli("gate", run["id"], "--max-error-rate", "1", "--json")
    assert relaxed.code == 0, relaxed.out
    assert json.loads(relaxed.out)["passed"] is True


def test_gate_fails_a_run_whose_pairs_are_nearly_all_undecided(cli: Any, tmp_path: Path) -> None:
    rows = [{"id": f"u{i}", "input": {}, "output": "Paris"} for i in range(20)]
    rows[0]["expected"] = "Paris"  # the one pair exact can decide
    data = tmp_path / "undecided.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ran = cli("run", "--dataset", str(data), "--system", "precomputed", "--scorer", "exact", "-q")
    assert ran.code == 0, ran.err
    (run,) = json.loads(cli("runs", "--json").out)
    result = cli("gate", run["id"], "--min-accuracy", "0.9", "--json")
    assert result.code == 1
    failures = json.loads(result.out)["failures"]
    assert [line.split(":")[0] for line in failures] == ["undecided"]
    assert "19 of 20 pairs have no outcome" in failures[0]
    assert cli("gate", run["id"], "--max-undecided-rate", "1").code == 0
    raised = cli("gate", run["id"], "--max-undecided-rate", "1", "--min-decided", "2")
    assert raised.code == 1
    assert "too few decided pairs: 1 (at least 2 required, --min-decided)" in raised.out


def test_gate_refuses_a_run_check_option_with_a_registration(cli: Any, data_file: Path) -> None:
    run_id = _run(cli, data_file, "mostly_right")
    result = cli("gate", run_id, "--registration", "reg.json", "--min-decided", "1")
    assert result.code == 3
    assert "--min-decided cannot be given with it" in result.err


_QA = Path(__file__).parents[2] / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"


@pytest.mark.parametrize(
    ("options_b", "code", "line"),
    [
        (
            "--scorer casefold",
            3,
            "the run gates on casefold and the baseline on casefold, f1_tokens: their "
            "outcomes (accuracy, pass^k) mean different things",
        ),
        (
            "--scorer casefold --scorer f1_tokens:threshold=0.9",
            3,
            "the gating scorer 'f1_tokens' differs, run vs baseline (threshold 0.9 vs 0.5)",
        ),
        (
            "--scorer casefold --scorer f1_tokens --scorer length:max_chars=500 "
            "--gate-on casefold --gate-on f1_tokens",
            0,
            "warning: scorer 'length' is only in the run: not compared",
        ),
    ],
)
def test_gate_baseline_refuses_other_gating_scorers_and_warns_on_reported_ones(
    cli: Any, options_b: str, code: int, line: str
) -> None:
    def run(options: str) -> str:
        target = "arbiter.demo.qa:answer"
        done = cli("run", "--dataset", str(_QA), "--target", target, *options.split(), "--json")
        assert done.code == 0, done.err
        run_id = Report.model_validate_json(done.out).run_id
        assert run_id
        return run_id

    baseline = run("--scorer casefold --scorer f1_tokens")
    candidate = run(options_b)
    result = cli("gate", candidate, "--baseline", baseline)
    assert result.code == code, result.out + result.err
    assert line in (result.out if code == 0 else result.err)
    if code == 3:
        assert result.err.startswith(f"arbiter: error: cannot gate {candidate} against baseline")
        assert result.err.count("\n") == 1


def test_gate_warns_on_a_perfect_score(cli: Any, data_file: Path) -> None:
    run_id = _run(cli, data_file, "echo_label")
    result = cli("gate", run_id, "--min-accuracy", "0.9")
    assert result.code == 0
    assert "over-fit smell" in result.out


def test_diff_lists_flips_and_deltas(cli: Any, data_file: Path) -> None:
    good = _run(cli, data_file, "mostly_right")
    bad = _run(cli, data_file, "often_wrong")
    result = cli("diff", good, bad, "--json")
    assert result.code == 0
    diff = json.loads(result.out)
    assert diff["n_common"] == 60
    assert len(diff["broken"]) > len(diff["fixed"])
    accuracy = next(d for d in diff["deltas"] if d["name"] == "accuracy")
    assert accuracy["delta"] < 0
    assert accuracy["low"] <= accuracy["delta"] <= accuracy["high"]


def test_binary_label_map_collapses_graded_labels(cli: Any, tmp_path: Path) -> None:
    from arbiter.demo import dataset_path

    result = cli(
        "run",
        "--dataset",
        str(dataset_path()),
        "--target",
        "arbiter.demo.classifier:classify",
        "--binary",
        "--quiet",
        "--json",
    )
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    assert report.mapped is not None
    assert report.mapped.labels == ["high", "low"]
    assert report.mapped.accuracy.estimate > report.strict.accuracy.estimate


def test_gate_help_states_the_run_checks_defaults() -> None:
    import typer

    from arbiter.cli.main import app
    from arbiter.harness import gate

    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), "gate")  # type: ignore[attr-defined]
    helps = {p.name: getattr(p, "help", "") for p in command.params}
    assert f"\\[default: {gate.DEFAULT_MAX_ERROR_RATE}]" in helps["max_error_rate"]
    assert f"\\[default: {gate.DEFAULT_MAX_UNDECIDED_RATE}]" in helps["max_undecided_rate"]
    assert f"\\[default: {gate.DEFAULT_MIN_DECIDED}]" in helps["min_decided"]


@pytest.mark.parametrize("extra", [(), ("--dry-run",)])
def test_run_refuses_a_scorer_of_agent_trajectories_naming_the_agent_commands(
    cli: Any, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    data = tmp_path / "texts.jsonl"
    data.write_text('{"id": "a", "input": {}, "expected": "x", "output": "x"}\n')
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--system",
        "precomputed",
        "--scorer",
        "no_tool_loops",
        *extra,
    )
    assert result.code == 3
    assert "scorer 'no_tool_loops' grades an agent's trajectory" in result.err
    assert "arbiter agent score FILE --scorer no_tool_loops" in result.err
    assert "arbiter agent run CASES" in result.err
    assert result.err.count("\n") == 1
    assert not (tmp_path / "store.db").exists()


def test_an_eval_file_with_a_trajectory_scorer_is_refused_at_the_file(
    cli: Any, tmp_path: Path
) -> None:
    data = tmp_path / "texts.jsonl"
    data.write_text('{"id": "a", "input": {}, "expected": "x", "output": "x"}\n')
    spec = tmp_path / "agent.eval.toml"
    spec.write_text(
        '[dataset]\npath = "texts.jsonl"\n[system]\nkind = "precomputed"\n'
        '[[scorers]]\nname = "exact"\n[[scorers]]\nname = "tool_calls"\n'
    )
    result = cli("run", str(spec))
    assert result.code == 3
    assert f"{spec}: scorer 'tool_calls' grades an agent's trajectory" in result.err


def test_run_keeps_model_judges_that_read_an_answer_text(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "texts.jsonl"
    data.write_text('{"id": "a", "input": {}, "expected": "x", "output": "x"}\n')
    done = cli(
        "run",
        "--dataset",
        str(data),
        "--system",
        "precomputed",
        "--scorer",
        "answer_correctness",
        "--dry-run",
    )
    assert done.code == 0, done.err


def test_quiet_prints_only_the_report(cli: Any, data_file: Path) -> None:
    target = "tests.helpers.systems:mostly_right"
    loud = cli("run", "--dataset", str(data_file), "--target", target)
    assert "started (if interrupted: arbiter run --resume" in loud.err
    assert "stored as run" in loud.err
    quiet = cli("run", "--dataset", str(data_file), "--target", target, "-q")
    assert quiet.code == 0
    assert quiet.err == ""
    assert "accuracy (strict)" in quiet.out
    resumed = cli("run", "--resume", json.loads(cli("runs", "--json").out)[0]["id"], "-q")
    assert resumed.code == 0, resumed.err
    assert resumed.err == ""


def test_quiet_still_prints_a_warning(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "one-label.jsonl"
    data.write_text('{"id": "a", "input": {"answer": "x"}, "expected_label": "x"}\n')
    mapping = tmp_path / "all.json"
    mapping.write_text('{"*": "same"}')
    result = cli(
        "run",
        "--dataset",
        str(data),
        "--target",
        "tests.helpers.systems:echo_label",
        "--label-map",
        str(mapping),
        "-q",
    )
    assert result.code == 0, result.err
    assert result.err.startswith("warning: the label map sends every label to 'same'")


@pytest.fixture
def width(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set the terminal width of the next commands (the consoles are made once)."""
    from arbiter.cli import common

    def set_width(columns: int) -> None:
        monkeypatch.setenv("COLUMNS", str(columns))
        common.out_console.cache_clear()
        common.err_console.cache_clear()

    yield set_width
    common.out_console.cache_clear()
    common.err_console.cache_clear()


def _cells(table: str) -> list[str]:
    """Every cell text of a boxed Rich table, line by line."""
    return [
        cell.strip()
        for line in table.splitlines()
        if line.startswith("│")
        for cell in line.strip("│").split("│")
    ]


@pytest.mark.parametrize("columns", [80, 120])
def test_runs_reads_at_80_and_120_columns_with_whole_ids(
    cli: Any, data_file: Path, width: Any, columns: int
) -> None:
    ids = [_run(cli, data_file, "mostly_right", "--name", "a run with a long name") for _ in "ab"]
    width(columns)
    listed = cli("runs")
    assert listed.code == 0, listed.err
    table = [line for line in listed.out.splitlines() if line[:1] in "┏┃┡│└"]
    assert all(len(line) <= columns for line in table), listed.out
    cells = [c for c in _cells(listed.out) if c]
    assert all(run_id in cells for run_id in ids)  # whole, on one line
    assert "…" not in listed.out
    assert all(len(c) > 1 or c in "k1" for c in cells), cells  # no cell cut to a letter
    header = next(line for line in table if line.startswith("┃") and "run" in line)
    for kept in ("run", "status", "accuracy", "pass^k"):
        assert kept in header
    assert "seconds" not in header
    assert f"{columns} columns: " in listed.err
    assert ("name" in header) is (columns == 120)
    assert ("long name" in listed.out) is (columns == 120)


def test_runs_leaves_out_a_column_no_run_fills(cli: Any, data_file: Path, width: Any) -> None:
    _run(cli, data_file, "mostly_right")
    width(200)
    listed = cli("runs")
    header = next(line for line in listed.out.splitlines() if line.startswith("┃"))
    assert "name" not in header
    assert "seconds" in header
    assert listed.err == ""
