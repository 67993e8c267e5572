"""Jury case files read as datasets, and the output field of a dataset row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.datasets import dump_dataset_jsonl, load_dataset
from arbiter.datasets.case_rows import CASE_METADATA_KEY
from arbiter.errors import InputError
from arbiter.jury import bundled_cases_path, load_cases

CASE: dict[str, Any] = {
    "id": "a",
    "task": "Summarise the refund policy.",
    "context": "Refunds within 30 days.",
    "output": "Refunds within 45 days.",
    "expected": "REJECT",
    "defects": [
        {
            "dimension": "accuracy",
            "kind": "contradicted",
            "quote": "45 days",
            "rival": "30 days",
            "detectable": "string",
            "family": "number",
        }
    ],
    "metadata": {"domain": "retail"},
}
EXAMPLE: dict[str, Any] = {"id": "e", "input": {"q": "?"}, "expected_label": "yes"}


def _jsonl(path: Path, *rows: Any) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _error(path: Path, **options: Any) -> str:
    with pytest.raises(InputError) as caught:
        load_dataset(path, **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_bundled_case_file_is_a_dataset_of_its_cases() -> None:
    cases = load_cases(bundled_cases_path())
    examples = load_dataset(bundled_cases_path()).examples
    assert [e.id for e in examples] == [c.id for c in cases]
    for case, example in zip(cases, examples, strict=True):
        assert example.input == {"task": case.task, "context": case.context}
        assert example.output == case.output
        assert example.expected == case.expected
        assert example.metadata[CASE_METADATA_KEY]["defective"] == case.defective


def test_a_case_keeps_its_defects_and_metadata_beside_the_reserved_key(tmp_path: Path) -> None:
    (example,) = load_dataset(_jsonl(tmp_path / "cases.jsonl", CASE)).examples
    assert example.expected_label is None
    assert example.cohort is None
    assert example.metadata["domain"] == "retail"
    labels = example.metadata[CASE_METADATA_KEY]
    assert labels["defective"] is True  # follows from expected=REJECT, as in Case
    assert labels["defects"][0]["quote"] == "45 days"


def test_a_case_labelled_only_defective_has_no_expected_decision(tmp_path: Path) -> None:
    row = {k: v for k, v in CASE.items() if k not in ("expected", "id")} | {"defective": False}
    (example,) = load_dataset(_jsonl(tmp_path / "summedits.jsonl", row)).examples
    assert example.id == "summedits-1"  # named as load_cases names it
    assert example.expected is None
    assert example.metadata[CASE_METADATA_KEY]["defective"] is False


def test_cases_in_a_json_file_are_read_as_in_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"name": "mine", "examples": [CASE]}), encoding="utf-8")
    dataset = load_dataset(path)
    assert dataset.name == "mine"
    assert dataset.examples[0].output == CASE["output"]


@pytest.mark.parametrize(
    "row",
    [
        {**CASE, "expected": "MAYBE"},
        {k: v for k, v in CASE.items() if k != "task"},
        {k: v for k, v in CASE.items() if k != "context"},
        {**CASE, "expected": "ACCEPT", "defective": True},
        {**CASE, "surprise": 1},
        {**CASE, "defects": [{"dimension": "tone", "kind": "contradicted", "quote": "x"}]},
        {**CASE, "output": 7},
    ],
    ids=[
        "bad-decision",
        "no-task",
        "no-context",
        "contradiction",
        "extra-key",
        "bad-defect",
        "number",
    ],
)
def test_an_invalid_case_fails_as_arbiter_judge_would_fail_it(
    tmp_path: Path, row: dict[str, Any]
) -> None:
    path = _jsonl(tmp_path / "cases.jsonl", CASE | {"id": "first"}, row)
    with pytest.raises(InputError) as by_the_jury:
        load_cases(path)
    message = _error(path)
    assert message == str(by_the_jury.value)
    assert message.startswith(f"{path}:2: ")


def test_an_error_in_a_json_case_file_names_its_line_and_item(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([CASE, {**CASE, "id": "b", "expected": "NO"}], indent=2))
    message = _error(path)
    assert message.startswith(f"{path}:")
    assert ": [1]: field 'expected'" in message


def test_a_duplicate_case_id_names_the_first_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "cases.jsonl", CASE, CASE)
    assert _error(path) == f"{path}:2: duplicate id 'a' (first used at line 1)"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ((EXAMPLE, CASE), ":2: a jury case among examples (the first at line 1)"),
        ((CASE, EXAMPLE), ":2: an example among jury cases (the first at line 1)"),
    ],
)
def test_a_file_mixing_cases_and_examples_is_refused(
    tmp_path: Path, rows: tuple[dict[str, Any], ...], message: str
) -> None:
    path = _jsonl(tmp_path / "mixed.jsonl", *rows)
    error = _error(path)
    assert error.startswith(f"{path}{message}")
    assert "not both" in error


def test_the_reserved_metadata_key_is_refused_in_a_case(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "cases.jsonl", {**CASE, "metadata": {CASE_METADATA_KEY: 1}})
    assert f"{path}:1: field 'metadata.{CASE_METADATA_KEY}': reserved" in _error(path)


def test_a_case_file_dumped_and_reloaded_keeps_its_content_hash(tmp_path: Path) -> None:
    loaded = load_dataset(bundled_cases_path())
    dumped = tmp_path / "dumped.jsonl"
    dump_dataset_jsonl(loaded, dumped)
    again = load_dataset(dumped)
    assert again.content_hash == loaded.content_hash
    assert again.examples == loaded.examples


def test_the_content_hash_follows_the_case_outputs(tmp_path: Path) -> None:
    one = load_dataset(_jsonl(tmp_path / "one.jsonl", CASE)).content_hash
    other = load_dataset(_jsonl(tmp_path / "two.jsonl", {**CASE, "output": "x"})).content_hash
    assert one != other


# ------------------------------------------------------------------- the output field


def test_a_renamed_output_field_becomes_the_example_output(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "logs.jsonl", {**EXAMPLE, "response": {"text": "yes"}})
    (example,) = load_dataset(path, output_field="response").examples
    assert example.output == {"text": "yes"}


def test_a_renamed_output_field_reads_the_same_hash_as_output(tmp_path: Path) -> None:
    renamed = _jsonl(tmp_path / "a.jsonl", {**EXAMPLE, "response": "yes"})
    plain = _jsonl(tmp_path / "b.jsonl", {**EXAMPLE, "output": "yes"})
    assert (
        load_dataset(renamed, output_field="response").content_hash
        == load_dataset(plain).content_hash
    )


def test_without_the_option_the_renamed_field_is_an_unknown_key(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "logs.jsonl", {**EXAMPLE, "response": "yes"})
    assert "unknown key 'response'" in _error(path)


def test_output_beside_a_renamed_output_field_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "logs.jsonl", EXAMPLE, {**EXAMPLE, "id": "f", "output": "no"})
    message = _error(path, output_field="response")
    assert message == (
        f"{path}:2: key 'output' would shadow the output field 'response'; rename or remove one"
    )


def test_a_case_file_may_name_its_output_field_too(tmp_path: Path) -> None:
    row = {k: v for k, v in CASE.items() if k != "output"} | {"answer": "Refunds within 30 days."}
    (example,) = load_dataset(_jsonl(tmp_path / "c.jsonl", row), output_field="answer").examples
    assert example.output == "Refunds within 30 days."


def test_a_csv_column_named_as_the_output_field_is_the_output(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    path.write_text("id,input.q,response\na,capital?,Paris\n", encoding="utf-8")
    (example,) = load_dataset(path, output_field="response").examples
    assert (example.input, example.output) == ({"q": "capital?"}, "Paris")


def test_a_csv_output_column_is_unknown_when_the_output_field_is_renamed(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    path.write_text("id,input.q,output\na,capital?,Paris\n", encoding="utf-8")
    message = _error(path, output_field="response")
    assert message.startswith(f"{path}:1:3: unknown column 'output'; expected id, ")
    assert "response" in message


@pytest.mark.parametrize("field", ["id", "input", "expected", "metadata", "task", "defective"])
def test_an_output_field_named_after_another_field_is_refused(tmp_path: Path, field: str) -> None:
    path = _jsonl(tmp_path / "d.jsonl", EXAMPLE)
    assert f"the output field cannot be {field!r}" in _error(path, output_field=field)


@pytest.mark.parametrize("field", ["", " "])
def test_an_empty_output_field_is_refused(tmp_path: Path, field: str) -> None:
    path = _jsonl(tmp_path / "d.jsonl", EXAMPLE)
    assert "the output field must be a non-empty key" in _error(path, output_field=field)
