"""``arbiter gate-bench``: the grounding gate's benchmark on the bundled set, and on a file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.judges.gate_bench import GateCase, bench_gate
from arbiter.judges.gate_triggers import GateScope
from arbiter.service.grounding_gate import load_gate_cases

RATE_KEYS = {"count", "n", "rate", "low", "high"}


def test_the_bundled_set_has_the_families_the_benchmark_needs() -> None:
    cases = load_gate_cases()
    kinds = {case.kind for case in cases}
    assert len(cases) >= 30
    assert {"honest_refusal", "answer_only_drift", "numbers_only"} <= kinds
    assert {case.label for case in cases} == {"drifted", "faithful"}


def test_gate_bench_prints_the_matrix_and_lists_every_miss(cli: Any) -> None:
    result = cli("gate-bench")
    assert result.code == 0, result.err
    report = json.loads(cli("gate-bench", "--json").out)
    assert "trigger vs judge-confirmed drift" in result.out
    assert f"trigger recall       {report['trigger_recall']['rate']:.3f}" in result.out
    for case_id in report["false_negatives"] + report["false_positives"]:
        assert case_id in result.out


def test_gate_bench_json_has_every_figure_and_consistent_counts(cli: Any) -> None:
    result = cli("gate-bench", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["n"] == report["tp"] + report["fn"] + report["fp"] + report["tn"]
    assert report["drifted"] == report["tp"] + report["fn"]
    for key in (
        "trigger_recall",
        "trigger_precision",
        "judge_call_rate",
        "baseline_drift_rate",
        "enforce_drift_rate",
    ):
        assert set(report[key]) == RATE_KEYS
    assert report["baseline_drift_rate"]["count"] == report["drifted"]
    assert report["enforce_drift_rate"]["count"] == report["fn"]
    assert len(report["false_negatives"]) == report["fn"]
    assert len(report["false_positives"]) == report["fp"]
    assert report["faithful_withheld"] == 0  # the gate defers to the (oracle) judge
    assert len(report["cases"]) == report["n"]


def case(case_id: str, label: str, answer: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "label": label,
        "scope": {"databases": ["sales"]},
        "question": "q",
        "answer": answer,
    }


def test_gate_bench_reads_a_given_file(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    lines = [
        case("hit", "drifted", "From crm.accounts."),
        case("miss", "drifted", "Their bank approved it."),
        case("alarm", "faithful", "The hr.salaries data is outside my scope."),
        case("quiet", "faithful", "Sales rose."),
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    report = json.loads(cli("gate-bench", str(path), "--json").out)
    assert (report["tp"], report["fn"], report["fp"], report["tn"]) == (1, 1, 1, 1)
    assert report["false_negatives"] == ["miss"]
    assert report["false_positives"] == ["alarm"]
    assert report["net_drop"] == pytest.approx(0.25)
    assert report["relative_drop"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", "line 1: not JSON"),
        ('{"id": "a"}\n', "line 1: field 'label'"),
        (
            json.dumps(case("a", "faithful", "x")) + "\n" + json.dumps(case("a", "drifted", "y")),
            "line 2: id 'a' appears twice",
        ),
        ("\n", "no cases"),
    ],
)
def test_a_bad_case_file_is_one_input_error_line(
    cli: Any, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(content, encoding="utf-8")
    result = cli("gate-bench", str(path))
    assert result.code == 3
    assert message in result.err
    assert "Traceback" not in result.err


def test_a_missing_case_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.jsonl: no such file"):
        load_gate_cases(tmp_path / "absent.jsonl")


def test_an_empty_benchmark_reports_no_rate_as_zero() -> None:
    report = asyncio.run(bench_gate([]))
    assert report.trigger_recall.rate is None
    assert report.net_drop is None
    assert report.relative_drop is None


def test_a_set_without_drift_has_no_recall_and_no_relative_drop() -> None:
    quiet = GateCase(
        id="a", label="faithful", scope=GateScope(databases=("s",)), question="q", answer="ok"
    )
    report = asyncio.run(bench_gate([quiet]))
    assert report.trigger_recall.rate is None
    assert report.trigger_precision.rate is None
    assert report.net_drop == 0.0
    assert report.relative_drop is None


def test_docs_show_what_gate_bench_prints(cli: Any) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "judges.md").read_text("utf-8")
    section = page.split("## The grounding gate", 1)[1]
    shown = section.split("```sh\narbiter gate-bench\n```\n\n```text\n", 1)[1].split("\n```", 1)[0]
    result = cli("gate-bench")
    assert result.code == 0, result.err
    assert result.out.rstrip("\n") == shown
