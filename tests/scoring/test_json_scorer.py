"""The json scorer: parsing, code fences, schemas (checked when built), fields and paths."""

from __future__ import annotations

import json

import pytest

from arbiter.contract import Output
from arbiter.errors import InputError
from arbiter.scoring.structured import json_equal
from tests.scoring.support import build, score_one


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ('{"a": 1}', True),
        ("[1, 2]", True),
        ("  42 ", True),
        ('```json\n{"a": 1}\n```', True),
        ('```\n{"a": 1}\n```', True),
        ('```{"a": 1}```', True),
        ('Here it is: ```json\n{"a": 1}\n```', False),
        ("{'a': 1}", False),
        ("", False),
        (Output(raw={"a": 1}), True),
        (Output(raw=None, text=None, label=None), False),
    ],
)
def test_json_parses_the_raw_output_or_its_text(output: object, passed: bool) -> None:
    score = score_one("json", output)
    assert score.passed is passed
    assert score.value == float(passed)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{'a': 1}", "the output is not JSON: Expecting property name enclosed in double quotes"),
        ("[" * 100_000, "the output is not JSON: it is nested too deeply"),
        ("1" * 10_000, "the output is not JSON: Exceeds the limit"),
    ],
)
def test_what_is_not_json_says_why(text: str, reason: str) -> None:
    score = score_one("json", text)
    assert score.passed is False
    assert score.explanation.startswith(reason)


SCHEMA = {
    "type": "object",
    "required": ["city", "population"],
    "properties": {
        "city": {"type": "string", "pattern": "^[A-Z]"},
        "population": {"type": "integer", "minimum": 0},
    },
}


@pytest.mark.parametrize(
    ("document", "explanation"),
    [
        ({"city": "Paris", "population": 2_100_000}, ""),
        (
            {"city": "Paris"},
            "not valid against the schema at $: 'population' is a required property",
        ),
        (
            {"city": "paris", "population": 1},
            "not valid against the schema at $.city: \"paris\" does not match '^[A-Z]'",
        ),
        (
            {"city": "Paris", "population": -1},
            "not valid against the schema at $.population: -1 is less than the minimum of 0",
        ),
    ],
)
def test_a_schema_is_checked_and_its_first_error_explained(
    document: dict[str, object], explanation: str
) -> None:
    score = score_one(f"json:json_schema={json.dumps(SCHEMA)}", json.dumps(document))
    assert score.passed is (explanation == "")
    assert score.explanation == explanation


def test_schema_patterns_run_in_linear_time() -> None:
    schema = {"type": "string", "pattern": "^(a+)+$"}
    score = score_one(f"json:json_schema={json.dumps(schema)}", json.dumps("a" * 50_000 + "!"))
    assert score.passed is False


def test_the_schema_names_its_draft() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "maximum": 1,
        "exclusiveMaximum": True,
    }
    assert score_one(f"json:json_schema={json.dumps(draft4)}", "1").passed is False
    assert score_one(f"json:json_schema={json.dumps(draft4)}", "0.5").passed is True


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "nope"}, "schema is not a valid JSON Schema at type"),
        ({"properties": {"a": {"pattern": "(?=x)"}}}, "not RE2 syntax"),
        ({"patternProperties": {"^a": {}}}, "patternProperties"),
    ],
)
def test_a_bad_schema_is_refused_when_built(schema: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build(f"json:json_schema={json.dumps(schema)}")


def test_a_property_named_like_a_keyword_is_not_taken_for_one() -> None:
    schema = {"properties": {"patternProperties": {"type": "string"}}}
    assert score_one(f"json:json_schema={json.dumps(schema)}", '{"patternProperties": "x"}').passed


@pytest.mark.parametrize(
    ("fields", "document", "explanation"),
    [
        ({"status": "ok"}, {"status": "ok"}, ""),
        ({"items.0.id": 7}, {"items": [{"id": 7.0}]}, ""),
        ({"status": "ok"}, {"status": "error"}, '\'status\' is "error", expected "ok"'),
        ({"flag": 1}, {"flag": True}, "'flag' is true, expected 1"),
        ({"status": "ok"}, {}, "the output has no value at 'status'"),
        (
            {"a": 1, "b": 2, "c": 3, "d": 4},
            {},
            "the output has no value at 'a'; the output has no value at 'b'; "
            "the output has no value at 'c'; and 1 more",
        ),
    ],
)
def test_fields_must_hold_the_values_given(
    fields: dict[str, object], document: object, explanation: str
) -> None:
    score = score_one(f"json:fields={json.dumps(fields)}", json.dumps(document))
    assert score.passed is (explanation == "")
    assert score.explanation == explanation


def test_paths_compare_the_output_with_the_examples_expected_values() -> None:
    option = 'json:paths=["city","country"]'
    expected = {"city": "Paris", "country": "FR", "extra": 1}
    assert score_one(option, {"city": "Paris", "country": "FR"}, expected=expected).passed
    failed = score_one(option, {"city": "Lyon", "country": "FR"}, expected=expected)
    assert failed.explanation == '\'city\' is "Lyon", expected "Paris"'


def test_paths_the_example_lacks_make_the_score_abstain_unless_something_failed() -> None:
    option = 'json:paths=["city"]'
    assert score_one(option, {"city": "Paris"}, expected={"town": "Paris"}).passed is None
    unknown = score_one(option, {"city": "Paris"})
    assert (unknown.passed, unknown.explanation) == (
        None,
        "the example has no expected JSON to compare paths with",
    )
    assert score_one(option, "not json").passed is False


@pytest.mark.parametrize(
    ("option", "message"),
    [('json:paths=[""]', "paths must be"), ('json:fields={"": 1}', "fields must map")],
)
def test_empty_paths_are_refused_when_built(option: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build(option)


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, None, True),
        (None, 0, False),
        ([1, [2, {"a": "x"}]], [1.0, [2, {"a": "x"}]], True),
        ([1, 2], [2, 1], False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("1", 1, False),
        ([], {}, False),
    ],
)
def test_json_equality_keeps_booleans_apart_from_numbers(
    left: object, right: object, equal: bool
) -> None:
    assert json_equal(left, right) is equal  # type: ignore[arg-type]


def test_json_equality_of_deep_documents_needs_no_recursion() -> None:
    deep: object = 1
    for _ in range(10_000):
        deep = [deep]
    assert json_equal(deep, deep)  # type: ignore[arg-type]
