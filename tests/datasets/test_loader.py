"""Tests for loading datasets from JSON, JSONL and CSV files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import arbiter.datasets
from arbiter.contract import Dataset, Example
from arbiter.datasets import SUPPORTED_SUFFIXES, dump_dataset_jsonl, load_dataset
from arbiter.errors import InputError

EXAMPLES: list[dict[str, Any]] = [
    {
        "id": "tx-1",
        "input": {"amount": 1200, "rate": 0.5, "country": "DE", "flags": {"vip": True}},
        "expected_label": "high",
        "cohort": "eu",
        "metadata": {"source": "hand", "reviewed": False},
    },
    {
        "id": "tx-2",
        "input": {"amount": 15, "country": "007", "flags": {"vip": False, "note": None}},
        "expected_label": "low",
    },
]

CSV_TEXT = (
    "id,expected_label,cohort,input.amount,input.rate,input.country,"
    "input.flags.vip,input.flags.note,metadata.source,metadata.reviewed\n"
    "tx-1,high,eu,1200,0.5,DE,true,,hand,false\n"
    "tx-2,low,,15,,007,false,null,,\n"
)


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl(*records: Any) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_public_surface_is_sorted_and_complete() -> None:
    assert arbiter.datasets.__all__ == sorted(arbiter.datasets.__all__)
    assert set(arbiter.datasets.__all__) == {
        "SUPPORTED_SUFFIXES",
        "dump_dataset_jsonl",
        "load_dataset",
    }
    assert SUPPORTED_SUFFIXES == (".json", ".jsonl", ".csv")


def test_json_object_form_keeps_name_version_and_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path / "golden.json",
        json.dumps({"name": "compliance", "version": 2, "examples": EXAMPLES}),
    )
    dataset = load_dataset(path)
    assert dataset.name == "compliance"
    assert dataset.version == "2"
    assert [e.model_dump() for e in dataset.examples] == [
        Example.model_validate(e).model_dump() for e in EXAMPLES
    ]


def test_json_bare_list_gets_stem_name_and_positional_ids(tmp_path: Path) -> None:
    path = write(
        tmp_path / "smoke.json",
        json.dumps(
            [{"input": {"a": 1}, "expected_label": "x"}, {"input": {}, "expected_label": "y"}]
        ),
    )
    dataset = load_dataset(path)
    assert dataset.name == "smoke"
    assert dataset.version == "1"
    assert [e.id for e in dataset.examples] == ["smoke-1", "smoke-2"]


def test_name_argument_overrides_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "golden.json", json.dumps({"name": "inner", "examples": EXAMPLES}))
    assert load_dataset(path, name="outer").name == "outer"


def test_jsonl_skips_blank_lines_and_numbers_ids_by_example_position(tmp_path: Path) -> None:
    text = (
        json.dumps({"input": {"q": 1}, "expected_label": "a"})
        + "\n\n   \n"
        + json.dumps({"id": "named", "input": {}, "expected_label": "b"})
        + "\r\n"
        + json.dumps({"input": {"q": 3}, "expected_label": "c", "cohort": "k"})
    )
    dataset = load_dataset(write(tmp_path / "run.jsonl", text))
    assert [e.id for e in dataset.examples] == ["run-1", "named", "run-3"]
    assert [e.expected_label for e in dataset.examples] == ["a", "b", "c"]
    assert dataset.examples[2].cohort == "k"
    assert dataset.name == "run"


def test_csv_nests_input_and_metadata_columns_and_omits_empty_cells(tmp_path: Path) -> None:
    dataset = load_dataset(write(tmp_path / "golden.csv", CSV_TEXT))
    first, second = dataset.examples
    assert first.input == {"amount": 1200, "rate": 0.5, "country": "DE", "flags": {"vip": True}}
    assert first.cohort == "eu"
    assert first.metadata == {"source": "hand", "reviewed": False}
    assert second.input == {"amount": 15, "country": "007", "flags": {"vip": False, "note": None}}
    assert second.cohort is None
    assert second.metadata == {}


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("12", 12),
        ("-3.25", -3.25),
        ("1e3", 1000.0),
        ("true", True),
        ("false", False),
        ("null", None),
        ("007", "007"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ('"quoted"', '"quoted"'),
        ("[1, 2]", "[1, 2]"),
        ("hello world", "hello world"),
    ],
)
def test_csv_cell_becomes_json_scalar_or_stays_text(tmp_path: Path, cell: str, value: Any) -> None:
    quoted = '"' + cell.replace('"', '""') + '"'
    path = write(tmp_path / "cells.csv", f"id,expected_label,input.v\nr1,ok,{quoted}\n")
    assert load_dataset(path).examples[0].input == {"v": value}


def test_csv_id_label_and_cohort_stay_strings(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "id,expected_label,cohort\n1,0,2\n")
    example = load_dataset(path).examples[0]
    assert (example.id, example.expected_label, example.cohort) == ("1", "0", "2")


def test_csv_without_id_column_and_with_bom_and_blank_rows(tmp_path: Path) -> None:
    text = "\ufeffexpected_label, input.q\nyes,1\n\n,\nno,2\n"
    dataset = load_dataset(write(tmp_path / "plain.csv", text))
    assert [(e.id, e.expected_label, e.input) for e in dataset.examples] == [
        ("plain-1", "yes", {"q": 1}),
        ("plain-2", "no", {"q": 2}),
    ]


def test_suffix_is_matched_case_insensitively(tmp_path: Path) -> None:
    path = write(tmp_path / "UPPER.JSONL", jsonl(*EXAMPLES))
    assert len(load_dataset(path).examples) == 2


def test_content_hash_is_equal_across_formats(tmp_path: Path) -> None:
    from_json = load_dataset(write(tmp_path / "a.json", json.dumps({"examples": EXAMPLES})))
    from_jsonl = load_dataset(write(tmp_path / "b.jsonl", jsonl(*EXAMPLES)))
    from_csv = load_dataset(write(tmp_path / "c.csv", CSV_TEXT))
    expected = Dataset(examples=[Example.model_validate(e) for e in EXAMPLES]).content_hash
    assert from_json.content_hash == expected
    assert from_jsonl.content_hash == expected
    assert from_csv.content_hash == expected


@pytest.mark.parametrize(
    ("filename", "before", "after"),
    [
        ("d.json", json.dumps(EXAMPLES), json.dumps(EXAMPLES).replace('"low"', '"medium"')),
        ("d.jsonl", jsonl(*EXAMPLES), jsonl(*EXAMPLES).replace('"low"', '"medium"')),
        ("d.csv", CSV_TEXT, CSV_TEXT.replace("tx-2,low", "tx-2,medium")),
    ],
)
def test_content_hash_changes_when_a_label_changes(
    tmp_path: Path, filename: str, before: str, after: str
) -> None:
    assert before != after
    original = load_dataset(write(tmp_path / filename, before)).content_hash
    changed = load_dataset(write(tmp_path / filename, after)).content_hash
    assert original != changed


def test_dump_jsonl_round_trips_examples_and_hash(tmp_path: Path) -> None:
    dataset = load_dataset(write(tmp_path / "src.csv", CSV_TEXT))
    out = tmp_path / "out.jsonl"
    dump_dataset_jsonl(dataset, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert lines[0] == json.dumps(
        dataset.examples[0].canonical_dump(),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    reloaded = load_dataset(out)
    assert reloaded.examples == dataset.examples
    assert reloaded.content_hash == dataset.content_hash


def test_dump_jsonl_keeps_non_ascii_text_readable(tmp_path: Path) -> None:
    dataset = Dataset(examples=[Example(id="ü", input={"q": "straße"}, expected_label="ok")])
    out = tmp_path / "uni.jsonl"
    dump_dataset_jsonl(dataset, out)
    assert "straße" in out.read_text(encoding="utf-8")
    assert load_dataset(out).examples == dataset.examples


DIRECTORY = object()
"""Marker content: create a directory at the path instead of a file."""

OK = {"id": "a", "input": {}, "expected_label": "x"}
NO_LABEL = {"id": "b", "input": {}}

BAD_INPUTS = [
    pytest.param("missing.json", None, ["no such file"], id="file-not-found"),
    pytest.param("folder.json", DIRECTORY, ["is a directory"], id="directory"),
    pytest.param("data.txt", "x", ["'.txt'", ".json, .jsonl, .csv"], id="unknown-suffix"),
    pytest.param("data", "x", ["no suffix", ".json, .jsonl, .csv"], id="no-suffix"),
    pytest.param(
        "data.jsonl",
        b'{"id": "a", "input": {}, "expected_label": "x"}\n{"id": "\xff"}\n',
        [":2:", "UTF-8", "0xff", "byte offset 56"],
        id="not-utf8",
    ),
    pytest.param(
        "data.json",
        '{"examples": [\n  {"id": "a",}\n]}',
        [":2:14:", "invalid JSON", "property name"],
        id="malformed-json",
    ),
    pytest.param("data.json", "", [":1:1:", "invalid JSON"], id="empty-json-file"),
    pytest.param(
        "data.jsonl",
        jsonl(OK) + '{"id": "b", oops}\n',
        [":2:13:", "invalid JSON"],
        id="jsonl-line-not-json",
    ),
    pytest.param(
        "data.jsonl",
        '{"id": "a", "input": {"v": NaN}, "expected_label": "x"}\n',
        [":1:", "NaN is not valid JSON"],
        id="jsonl-nan",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK, {**NO_LABEL, "input": 5}),
        [":2:", "field 'input'", "dictionary"],
        id="jsonl-input-not-object",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK, [1, 2]),
        [":2:", "must be an object", "array"],
        id="jsonl-line-not-object",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({"id": "a", "input": [], "expected_label": "x"}),
        [":1:", "field 'input'", "valid dictionary"],
        id="jsonl-input-not-object",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({**OK, "raw_output": {}}),
        [":1:", "unknown key 'raw_output'", "an example has 'id', 'input'"],
        id="jsonl-unknown-field",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({**OK, "expected_label": "  "}),
        [":1:", "field 'expected_label'", "must not be empty"],
        id="jsonl-blank-label",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK, {**OK, "id": "b"}, OK),
        [":3:", "duplicate id 'a'", "first used at line 1"],
        id="jsonl-duplicate-id",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({**OK, "id": "data-2"}, {"input": {}, "expected_label": "y"}),
        [":2:", "duplicate id 'data-2'", "line 1"],
        id="generated-id-collides",
    ),
    pytest.param("data.jsonl", "\n  \n", ["no examples"], id="jsonl-empty"),
    pytest.param(
        "data.json",
        '{\n  "examples": [\n    {"id": "a", "input": {}, "expected_label": "x"},\n'
        '    {"id": "b",\n     "input": {}, "expected_label": ""}\n  ]\n}',
        [":4:", "examples[1]", "field 'expected_label'", "must not be empty"],
        id="json-example-empty-label",
    ),
    pytest.param(
        "data.json",
        '[\n {"id": "a", "input": {}, "expected_label": "x"},\n "oops"\n]',
        [":3:", "[1]", "must be an object", "string"],
        id="json-example-not-object",
    ),
    pytest.param(
        "data.json",
        json.dumps({"examples": [OK, {**OK, "id": "b"}, OK]}, indent=1),
        ["examples[2]", "duplicate id 'a'", "examples[0]"],
        id="json-duplicate-id",
    ),
    pytest.param("data.json", '{"examples": []}', ["no examples"], id="json-empty"),
    pytest.param("data.json", "[]", ["no examples"], id="json-empty-list"),
    pytest.param(
        "data.json", '"hello"', ["top level must be", "got string"], id="json-top-level-string"
    ),
    pytest.param(
        "data.json", '{"name": "x"}', ["missing top-level key 'examples'"], id="json-no-examples"
    ),
    pytest.param(
        "data.json",
        '{"examples": {}}',
        ["'examples' must be an array", "object"],
        id="json-examples-not-array",
    ),
    pytest.param(
        "data.json",
        json.dumps({"exmaples": [OK], "examples": [OK]}),
        ["unknown top-level key 'exmaples'"],
        id="json-unknown-top-level-key",
    ),
    pytest.param(
        "data.json",
        json.dumps({"name": 5, "examples": [OK]}),
        ["field 'name'", "valid string"],
        id="json-name-not-string",
    ),
    pytest.param(
        "data.json",
        '{"examples": [{"id": "a", "input": {"w": Infinity}, "expected_label": "x"}]}',
        ["Infinity is not valid JSON"],
        id="json-infinity",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label,input\na,x,1\nb,,2\n",
        [":1:3:", "unknown column 'input'"],
        id="csv-bare-input-column",
    ),
    pytest.param(
        "data.csv",
        'id,expected_label,input.q\na,x,"multi\nline"\na,y,2\n',
        [":4:", "duplicate id 'a'"],
        id="csv-line-after-multiline-cell",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label\na,x\na,y\n",
        [":3:", "duplicate id 'a'", "first used at line 2"],
        id="csv-duplicate-id",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label,amount\n",
        [":1:3:", "unknown column 'amount'"],
        id="csv-unknown-column",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label,input.\n",
        [":1:3:", "unknown column 'input.'"],
        id="csv-empty-key",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label,id\n",
        [":1:3:", "duplicate column 'id'"],
        id="csv-duplicate-column",
    ),
    pytest.param(
        "data.csv",
        "expected_label,input.a.b,input.a\n",
        [":1:3:", "'input.a' clashes with column 'input.a.b'"],
        id="csv-nested-clash",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label\na,x\nb,y,extra\n",
        [":3:", "3 cells", "2 columns"],
        id="csv-row-too-long",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK, {**OK, "id": "b", "input": {"q": "x\x00y"}}),
        [":2:", "field 'input.q'", "must not contain a NUL character (U+0000)"],
        id="jsonl-nul-in-input",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({**OK, "expected_label": "x\x00"}),
        [":1:", "field 'expected_label'", "NUL character"],
        id="jsonl-nul-in-label",
    ),
    pytest.param(
        "data.jsonl",
        jsonl({**OK, "metadata": {"tags": ["ok", {"a\x00": 1}]}}),
        [":1:", "field 'metadata.tags[1].a\\x00'", "NUL character"],
        id="jsonl-nul-in-a-nested-key",
    ),
    pytest.param(
        "data.json",
        '{"examples": [\n'
        + json.dumps(OK)
        + ",\n"
        + json.dumps({**OK, "id": "b", "cohort": "\x00"})
        + "]}",
        [":3:", "examples[1]", "field 'cohort'", "NUL character"],
        id="json-nul-in-cohort",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label,input.q\na,x,ok\nb,y,bad\x00cell\n",
        [":3:", "field 'input.q'", "NUL character"],
        id="csv-nul-in-a-cell",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK) + '{"id": "b", "input": {"q": 1, "q": 2}, "expected_label": "x"}\n',
        [":2:31:", "duplicate key 'q' in one object"],
        id="jsonl-duplicate-key",
    ),
    pytest.param(
        "data.json",
        '{"examples": [\n  {"id": "a", "input": {}, "expected_label": "x",\n'
        '   "expected_label": "y"}\n]}',
        [":3:4:", "duplicate key 'expected_label' in one object"],
        id="json-duplicate-key",
    ),
    pytest.param(
        "data.json",
        '{"examples": [' + json.dumps(OK) + '], "examples": []}',
        [":1:", "duplicate key 'examples'"],
        id="json-duplicate-top-level-key",
    ),
    pytest.param(
        "data.jsonl",
        '{"id": "a", "input": {"n": ' + "9" * 5000 + '}, "expected_label": "x"}\n',
        [":1:28:", "the integer here has 5,000 digits, more than the 4,300", "as a string)"],
        id="jsonl-5000-digit-integer",
    ),
    pytest.param(
        "data.jsonl",
        jsonl(OK, {**OK, "id": "x" * 201}),
        [":2:", "field 'id': 201 characters, more than the 200 the store keeps"],
        id="jsonl-id-too-long",
    ),
    pytest.param(
        "data.csv",
        "id,expected_label\n" + "y" * 300 + ",x\n",
        [":2:", "field 'id': 300 characters"],
        id="csv-id-too-long",
    ),
    pytest.param("data.csv", "id,expected_label\n", ["no examples"], id="csv-header-only"),
    pytest.param("data.csv", "", ["empty file", "header"], id="csv-empty-file"),
    pytest.param(
        "data.csv",
        'id,expected_label\na,"x"y\n',
        [":2:", "malformed CSV", "expected after"],
        id="csv-text-after-closing-quote",
    ),
    pytest.param(
        "data.csv",
        'id,expected_label\na,x\nb,"never closed\n',
        [":3:", "malformed CSV", "unexpected end of data"],
        id="csv-unterminated-quote",
    ),
]


@pytest.mark.parametrize(("filename", "content", "fragments"), BAD_INPUTS)
def test_bad_input_raises_one_line_input_error_naming_file_and_place(
    tmp_path: Path, filename: str, content: object, fragments: list[str]
) -> None:
    path = tmp_path / filename
    if content is DIRECTORY:
        path.mkdir()
    elif isinstance(content, str | bytes):
        write(path, content)

    with pytest.raises(InputError) as caught:
        load_dataset(path)

    message = str(caught.value)
    assert message.startswith(str(path))
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    assert caught.value.exit_code == 3


def test_examples_without_a_label_load_beside_labelled_ones(tmp_path: Path) -> None:
    path = tmp_path / "free.jsonl"
    rows = [OK, NO_LABEL, {"id": "c", "input": {"q": "2+2?"}, "expected": {"answer": 4}}]
    write(path, jsonl(*rows))
    dataset = load_dataset(path)
    assert [e.expected_label for e in dataset.examples] == ["x", None, None]
    assert dataset.examples[2].expected == {"answer": 4}
    assert dataset.labels == ["x"]


def test_csv_reads_expected_and_output_columns_as_text(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    write(path, "id,input.q,expected,output\na,capital of France?,Paris,paris\n")
    (example,) = load_dataset(path).examples
    assert (example.expected, example.output, example.expected_label) == ("Paris", "paris", None)


def test_a_labelled_dataset_keeps_the_hash_it_had_before_expected_and_output() -> None:
    """Runs stored by 0.2 must stay resumable: the hash is over the 0.2 fields alone."""
    import hashlib
    import json

    from arbiter.contract import Dataset, Example

    example = Example(id="a", input={"q": 1}, expected_label="x", cohort="c", metadata={"m": 1})
    old_shape = [
        {"id": "a", "input": {"q": 1}, "expected_label": "x", "cohort": "c", "metadata": {"m": 1}}
    ]
    canonical = json.dumps(old_shape, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert (
        Dataset(examples=[example]).content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    )
    with_reference = Example(id="a", input={"q": 1}, expected_label="x", expected="y")
    assert (
        Dataset(examples=[with_reference]).content_hash != Dataset(examples=[example]).content_hash
    )


def test_an_id_of_the_longest_length_the_store_keeps_loads(tmp_path: Path) -> None:
    from arbiter.datasets.loader import MAX_ID_CHARS
    from arbiter.store.models import ResultRow

    assert ResultRow.__table__.c.example_id.type.length == MAX_ID_CHARS  # one limit
    path = tmp_path / "long.jsonl"
    path.write_text(jsonl({**OK, "id": "z" * MAX_ID_CHARS}), encoding="utf-8")
    assert len(load_dataset(path).examples[0].id) == MAX_ID_CHARS
