"""The json scorer's ``json_schema_file``: read once when built, stored as the schema itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Output, Report
from arbiter.errors import InputError
from arbiter.scoring.registry import ScorerRegistry
from tests.scoring.support import example as example_of
from tests.scoring.support import score_of, score_one

SCHEMA = {
    "type": "object",
    "required": ["city"],
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
}


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "city.schema.json"
    path.write_text(json.dumps(SCHEMA, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("document", "explanation"),
    [
        ({"city": "Paris", "population": 2_100_000}, ""),
        ({"population": 1}, "not valid against the schema at $: 'city' is a required property"),
        (
            {"city": "Paris", "population": "many"},
            "not valid against the schema at $.population: 'many' is not of type 'integer'",
        ),
    ],
)
def test_a_schema_file_checks_as_the_same_schema_given_inline(
    schema_file: Path, document: dict[str, Any], explanation: str
) -> None:
    from_file = score_one(f"json:json_schema_file={schema_file}", json.dumps(document))
    inline = score_one(f"json:json_schema={json.dumps(SCHEMA)}", json.dumps(document))
    assert (from_file.passed, from_file.explanation) == (explanation == "", explanation)
    assert (inline.passed, inline.explanation) == (from_file.passed, from_file.explanation)


def test_the_spec_holds_the_schema_so_a_rebuild_checks_alike_after_the_file_changed(
    schema_file: Path,
) -> None:
    registry = ScorerRegistry.default(plugins=False)
    spec = registry.spec_of(f"json:json_schema_file={schema_file}")
    stored = spec.args["json_schema_file"]
    assert (stored["path"], stored["schema"]) == (str(schema_file), SCHEMA)
    schema_file.write_text('{"type": "array"}', encoding="utf-8")  # edited after the run
    rebuilt = registry.build(spec)
    score = score_of(rebuilt, example_of(), Output.coerce('{"city": "Lyon"}'))
    assert score.passed is True  # still the stored schema, not the edited file
    schema_file.unlink()
    assert registry.build(spec).spec == rebuilt.spec  # the file is not needed any more


def test_a_stored_schema_that_does_not_match_its_hash_is_refused(schema_file: Path) -> None:
    registry = ScorerRegistry.default(plugins=False)
    spec = registry.spec_of(f"json:json_schema_file={schema_file}")
    tampered = {**spec.args["json_schema_file"], "schema": {}}
    with pytest.raises(InputError, match="the stored schema does not match its sha256"):
        registry.build(spec.model_copy(update={"args": {"json_schema_file": tampered}}))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "missing.json: no such file"),
        ('{"type": ', "missing.json:1:10: invalid JSON: Expecting value"),
        ("[1, 2]", "missing.json: a JSON Schema must be an object, got array"),
        ('{"type": 3}', "missing.json: schema is not a valid JSON Schema at type"),
        (
            '{"patternProperties": {"^a": {}}}',
            "missing.json: schema uses patternProperties",
        ),
    ],
    ids=["missing", "not-json", "not-an-object", "not-a-schema", "refused-keyword"],
)
def test_a_bad_schema_file_is_refused_when_built_naming_the_file(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "missing.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        score_one(f"json:json_schema_file={path}", "{}")
    assert str(raised.value).startswith("scorer 'json': ")
    assert f"{tmp_path}/{message}" in str(raised.value)


def test_a_schema_is_given_inline_or_as_a_file_not_both(schema_file: Path) -> None:
    option = f"json:json_schema_file={schema_file},json_schema={json.dumps(SCHEMA)}"
    with pytest.raises(InputError, match="give the schema as json_schema or json_schema_file"):
        score_one(option, "{}")


def test_a_resumed_run_keeps_its_schema_when_the_file_is_gone(
    cli: Any, schema_file: Path, tmp_path: Path
) -> None:
    data = tmp_path / "cities.jsonl"
    rows = [{"id": "a", "input": {}, "output": {"city": "Nice"}}, {"id": "b", "input": {}}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    started = cli(
        "run", "--dataset", str(data), "--system", "precomputed", "-q", "--json",
        "--scorer", f"json:json_schema_file={schema_file}",
    )  # fmt: skip
    assert started.code == 0, started.err
    run_id = Report.model_validate_json(started.out).run_id
    assert run_id is not None
    schema_file.unlink()
    resumed = cli("run", "--resume", run_id, "-q", "--json")
    assert resumed.code == 0, resumed.err
    assert Report.model_validate_json(resumed.out).sections["json"].passed == 1
