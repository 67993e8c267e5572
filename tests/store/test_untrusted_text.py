"""A lone surrogate in what a system answers is stored, never a failed run.

``json.loads`` and ``surrogateescape`` both make such strings, and no database driver
encodes them: stored as is, one would fail the transaction of a whole run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Report
from arbiter.store.types import storable

SURROGATE = "\ud800"


def answers_a_surrogate(input: dict[str, Any]) -> str:
    return f"Paris {SURROGATE}"


def raises_a_surrogate(input: dict[str, Any]) -> str:
    raise RuntimeError(f"broke on {SURROGATE}")


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "a", "input": {"q": 1}, "expected": "Paris"}) + "\n")
    return path


def _run(cli: Any, data_file: Path, target: str, *, code: int = 0) -> Report:
    result = cli(
        "run",
        "--dataset",
        str(data_file),
        "--target",
        f"tests.store.test_untrusted_text:{target}",
        "--scorer",
        "contains",
        "--quiet",
        "--json",
    )
    assert result.code == code, result.err
    # The JSON keeps a lone surrogate as a \\ud800 escape: valid JSON, which Python's
    # reader takes back exactly (pydantic's refuses it, so the report is read in two steps).
    return Report.model_validate(json.loads(result.out))


def test_an_answer_with_a_lone_surrogate_is_scored_and_stored(cli: Any, data_file: Path) -> None:
    report = _run(cli, data_file, "answers_a_surrogate")
    assert report.status == "completed"
    shown = cli("report", report.run_id, "--failures", "--json")
    assert shown.code == 0, shown.err
    stored = cli("report", report.run_id, "--format", "csv")
    assert stored.code == 0, stored.err
    assert "Paris" in stored.out


def test_an_error_message_with_a_lone_surrogate_is_stored(cli: Any, data_file: Path) -> None:
    report = _run(cli, data_file, "raises_a_surrogate", code=1)  # every call failed: exit 1
    assert report.status == "completed"
    failures = cli("report", report.run_id, "--failures", "--json")
    assert failures.code == 0, failures.err
    assert "broke on" in failures.out


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("plain", "plain"),
        (f"a{SURROGATE}b", "a\ufffdb"),
        ("\udfff\ud800", "\ufffd\ufffd"),
        ("😀 stays", "😀 stays"),
        ("nul\x00byte", "nul\ufffdbyte"),
    ],
)
def test_storable_replaces_only_lone_surrogates(text: str, stored: str) -> None:
    assert storable(text) == stored
    storable(text).encode("utf-8")  # encodable, or this raises


def test_an_id_with_a_nul_is_refused_as_input_naming_the_line(cli: Any, tmp_path: Path) -> None:
    # Ids are keys of the store, kept exactly; PostgreSQL text holds no NUL.
    path = tmp_path / "nul.jsonl"
    rows = [{"id": "a", "input": {}, "expected": "x"}, {"id": "b\x00c", "input": {}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = cli("run", "--dataset", str(path), "--system", "precomputed", "--quiet")
    assert result.code == 3
    assert result.err.strip().endswith(
        "nul.jsonl:2: field 'id': must not contain a NUL character (U+0000)"
    )


def test_a_case_id_with_a_nul_is_refused(tmp_path: Path) -> None:
    from arbiter.errors import InputError
    from arbiter.jury import load_cases

    path = tmp_path / "cases.jsonl"
    case = {"id": "c\x00", "task": "t", "context": "c", "output": "o"}
    path.write_text(json.dumps(case) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="NUL character"):
        load_cases(path)
