"""``arbiter agent score | mine | diff`` end to end, in-process, on the shipped examples."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents"
TAU = EXAMPLES / "retail-tau-bench.json"
V1, V2 = EXAMPLES / "support-v1.jsonl", EXAMPLES / "support-v2.jsonl"
TAU_CORRECT = [4, 2, 1]
"""Successful trials of the example's three tasks, out of 4."""


def _json(result: Result) -> Any:
    assert result.code == 0, result.err
    return json.loads(result.out)


# ----------------------------------------------------------------------------- score


def test_score_json_carries_the_documented_keys(cli: Any) -> None:
    report = _json(cli("agent", "score", str(TAU), "--json"))
    assert set(report) == {
        "n_trajectories",
        "n_tasks",
        "gate_on",
        "pass_rate",
        "pass_hat_k",
        "scorers",
        "turn_failed",
        "runs",
        "repairs",
    }
    assert (report["n_trajectories"], report["n_tasks"], report["gate_on"]) == (12, 3, "reward")
    assert set(report["pass_hat_k"]) == {"1", "2", "3", "4"}
    tally = report["scorers"]["reward"]
    assert set(tally) == {
        "pass",
        "fail",
        "abstain",
        "error",
        "bands",
        "dimension",
        "moment",
        "gating",
    }
    assert (tally["pass"], tally["fail"]) == (7, 5)
    assert report["runs"][0]["case_id"] == "0"
    assert report["runs"][0]["source"].endswith("retail-tau-bench.json")


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_score_pass_hat_k_is_the_benchmarks(cli: Any, k: int) -> None:
    report = _json(cli("agent", "score", str(TAU), "--json"))
    by_hand = sum(comb(c, k) / comb(4, k) for c in TAU_CORRECT) / len(TAU_CORRECT)
    assert report["pass_hat_k"][str(k)]["estimate"] == pytest.approx(by_hand, abs=1e-12)


def test_gating_on_scorers_adds_a_second_pass_hat_k(cli: Any) -> None:
    report = _json(cli("agent", "score", str(TAU), "--gate-on", "both", "--json"))
    assert report["gate_on"] == "both"
    assert report["pass_hat_k"]["1"]["estimate"] == pytest.approx(7 / 12)
    assert "pass_hat_k_scorers" in report
    assert report["pass_hat_k_scorers"]["1"]["estimate"] <= 7 / 12


def test_score_table_shows_pass_hat_k_scorers_and_failed_runs(cli: Any) -> None:
    result = cli("agent", "score", str(TAU), "--scorer", "completed")
    assert result.code == 0, result.err
    assert "12 trajectories, 3 tasks" in result.out
    assert "pass^k" in result.out
    assert "runs that did not pass" in result.out
    assert "completed" in result.out


@pytest.mark.parametrize(("floor", "code"), [("0.5", 0), ("0.9", 1)])
def test_min_pass_rate_gates_with_exit_1(cli: Any, floor: str, code: int) -> None:
    result = cli("agent", "score", str(TAU), "--scorer", "completed", "--min-pass-rate", floor)
    assert result.code == code
    assert ("gate failed" in result.err) == bool(code)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json"], "missing.json: no such file"),
        (["--format", "yaml", str(V1)], "unknown format"),
        (["--scorer", "nope", str(V1)], "nope"),
        (["--gate-on", "reward", str(V1)], "no imported run carries a reward"),
    ],
)
def test_bad_input_is_one_line_and_exit_3(cli: Any, args: list[str], message: str) -> None:
    result = cli("agent", "score", *args)
    assert result.code == 3
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_a_malformed_line_is_named_by_file_and_line(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(V1.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n")
    result = cli("agent", "score", str(bad))
    assert result.code == 3
    assert f"{bad}:2" in result.err


def test_hostile_trace_text_is_shown_inert(cli: Any, tmp_path: Path) -> None:
    hostile = "[bold red]x[/] \x1b[2J\u202eevil"
    record = {
        "id": hostile,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None},
        ],
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = cli("agent", "score", str(path), "--scorer", "completed")
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "\u202e" not in result.out
    assert "[bold red]x[/]" in result.out
    report = json.loads(cli("agent", "score", str(path), "--scorer", "completed", "--json").out)
    assert report["runs"][0]["case_id"] == hostile


# ------------------------------------------------------------------------------ mine


def test_mine_writes_cases_and_never_overwrites_without_force(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "mined.jsonl"
    result = cli("agent", "mine", str(TAU), "--out", str(out))
    assert result.code == 0, result.err
    cases = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["id"] for c in cases] == ["1-r1", "1-r3", "2-r1", "2-r2", "2-r3"]
    assert cases[-1]["metadata"]["mined"]["reasons"][0] == "errored"
    assert "mined 5 of 12 runs" in result.out
    out.write_text("kept\n", encoding="utf-8")
    refused = cli("agent", "mine", str(TAU), "--out", str(out))
    assert refused.code == 3
    assert "--force" in refused.err
    assert out.read_text(encoding="utf-8") == "kept\n"
    assert cli("agent", "mine", str(TAU), "--out", str(out), "--force").code == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 5
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_mine_without_out_prints_the_case_file(cli: Any) -> None:
    result = cli("agent", "mine", str(TAU))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert len(lines) == 5
    assert json.loads(lines[0])["assertions"]["require_tools_subset"]


def test_mine_json_summarises_reasons(cli: Any) -> None:
    summary = _json(cli("agent", "mine", str(TAU), "--json"))
    assert (summary["examined"], summary["mined"]) == (12, 5)
    assert summary["reasons"]["failed"] == 5
    assert summary["reasons"]["errored"] == 1


# ------------------------------------------------------------------------------ diff


def test_diff_shows_changed_calls_side_by_side(cli: Any) -> None:
    result = cli("agent", "diff", str(V1), str(V2))
    assert result.code == 0, result.err
    assert "3 cases compared, 2 differ" in result.out
    assert "case refund-1042" in result.out
    assert "lookup_policy" in result.out
    assert "case status-77" not in result.out


def test_diff_json_lists_every_case(cli: Any) -> None:
    document = _json(cli("agent", "diff", str(V1), str(V2), "--json"))
    assert (document["n_cases"], document["n_changed"]) == (3, 2)
    refund = document["cases"][0]
    assert [row["kind"] for row in refund["calls"]] == ["same", "added", "changed"]


# ------------------------------------------------------------------------------- run

AGENT = f"python:{EXAMPLES / 'support_agent.py'}:answer"
CASES = EXAMPLES / "support-cases.jsonl"


def test_run_stores_k_runs_per_case_and_reports_pass_hat_k(cli: Any) -> None:
    report = _json(cli("agent", "run", str(CASES), "--executor", AGENT, "--k", "2", "-q", "--json"))
    assert (report["k"], report["n_examples"]) == (2, 4)
    assert report["pass_hat_k"]["estimate"] == pytest.approx(0.75)  # cancel-3001 always fails
    assert report["sections"]["forbidden_tools"]["failed"] == 2
    assert report["run_id"]


@pytest.mark.parametrize(("floor", "code"), [("0.7", 0), ("0.8", 1)])
def test_run_gates_on_min_pass_rate(cli: Any, floor: str, code: int) -> None:
    result = cli("agent", "run", str(CASES), "-e", AGENT, "-q", "--min-pass-rate", floor)
    assert result.code == code, result.err
    assert ("gate passed" if code == 0 else "gate failed") in result.out


def test_run_resumes_a_stored_run_by_id(cli: Any) -> None:
    first = _json(cli("agent", "run", str(CASES), "-e", AGENT, "-q", "--json"))
    again = _json(cli("agent", "run", "--resume", first["run_id"], "-q", "--json"))
    assert again["run_id"] == first["run_id"]
    assert again["pass_hat_k"] == first["pass_hat_k"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "shell:x"], "expected python:"),
        ([], "needs a case file and an executor"),
    ],
)
def test_run_refuses_bad_options_with_exit_3(cli: Any, args: list[str], message: str) -> None:
    result = cli("agent", "run", str(CASES), *args, "-q")
    assert result.code == 3
    assert message in result.err


def test_diff_shows_hostile_tool_names_and_arguments_inert(cli: Any, tmp_path: Path) -> None:
    def conversation(arguments: str) -> str:
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "[red]x\x1b[2J", "arguments": arguments},
        }
        messages = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"},
        ]
        return json.dumps({"id": "case\u202e1", "messages": messages}) + "\n"

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(conversation('{"q": "\\u001b]0;title\\u0007"}'), encoding="utf-8")
    b.write_text(conversation('{"q": "[bold]b[/bold]"}'), encoding="utf-8")
    result = cli("agent", "diff", str(a), str(b), "--scorer", "completed")
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "\u202e" not in result.out
    assert "[red]x" in result.out
    assert "[bold]b[/bold]" in result.out
