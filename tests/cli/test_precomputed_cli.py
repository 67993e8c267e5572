"""``arbiter run --system precomputed``: outputs from the dataset, the jury as a scorer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arbiter.jury import bundled_cases_path


def _json(result: Any) -> dict[str, Any]:
    assert result.code == 0, result.err
    loaded: dict[str, Any] = json.loads(result.out)
    return loaded


def test_the_case_file_run_with_the_jury_scorer_gives_jury_evals_figures(cli: Any) -> None:
    cases = str(bundled_cases_path())
    report = _json(
        cli("run", "--dataset", cases, "--system", "precomputed", "--scorer", "jury", "--json")
    )
    evaluation = _json(cli("jury", "eval", "--cases", cases, "--json", "--no-audit", "-q"))[
        "evaluation"
    ]
    section = report["sections"]["jury"]
    assert section["classification"]["accuracy"] == evaluation["verdict_accuracy"]
    defective = section["mapped"]["per_label"]["defective"]
    detection = evaluation["detection"]
    assert defective["precision"] == detection["precision"]["estimate"]
    assert defective["recall"] == detection["recall"]["estimate"]
    assert section["n"] == evaluation["n_cases"]


def test_the_output_field_option_names_where_the_outputs_sit(cli: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    rows = [
        {"id": "top", "input": {"q": "a"}, "response": "yes", "expected_label": "yes"},
        {"id": "inside", "input": {"q": "b", "response": "no"}, "expected_label": "yes"},
        {"id": "none", "input": {"q": "c"}, "expected_label": "yes"},
    ]
    logs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = _json(
        cli(
            "run",
            "--dataset",
            str(logs),
            "--system",
            "precomputed",
            "--output-field",
            "response",
            "--json",
        )
    )
    section = report["sections"]["label"]
    assert (section["passed"], section["failed"]) == (1, 2)
    assert report["errors_by_type"] == {"MissingField": 1}
    assert report["error_examples"]["MissingField"] == "example 'none' has no field 'response'"


def test_a_mixed_file_exits_3_naming_the_line(cli: Any, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps({"id": "e", "input": {"q": 1}})
        + "\n"
        + json.dumps({"id": "c", "task": "t", "context": "c", "output": "o"})
        + "\n",
        encoding="utf-8",
    )
    result = cli("run", "--dataset", str(mixed), "--system", "precomputed", "--scorer", "jury")
    assert result.code == 3
    assert f"{mixed}:2: a jury case among examples" in result.err
    assert "Traceback" not in result.err


def test_an_unreadable_recorded_output_is_one_line_naming_the_field(
    cli: Any, tmp_path: Path
) -> None:
    data = tmp_path / "logs.jsonl"
    row = {"id": "a", "input": {}, "expected": "x", "output": {"label": "a", "confidence": 7}}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = cli("run", "--dataset", str(data), "--system", "precomputed", "--quiet")
    assert result.code == 1  # every call failed: the run is stored, its pair failed
    (message,) = [line for line in result.err.splitlines() if line.startswith("arbiter:")]
    assert "example 'a': the recorded output is unreadable: field 'confidence'" in message
    assert "errors.pydantic.dev" not in result.err
