"""Strict JSON schema and Gemini's responseSchema, generated from Pydantic models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import Critique
from arbiter.providers.schema import gemini_schema, strict_json_schema, to_gemini_schema


def subschemas(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node reachable from ``node`` (properties, items, anyOf, $defs)."""
    if not isinstance(node, dict):
        return
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from subschemas(sub, f"{path}/properties/{name}")
    for name, sub in node.get("$defs", {}).items():
        yield from subschemas(sub, f"{path}/$defs/{name}")
    if isinstance(node.get("items"), dict):
        yield from subschemas(node["items"], f"{path}/items")
    for i, sub in enumerate(node.get("anyOf", [])):
        yield from subschemas(sub, f"{path}/anyOf/{i}")


def all_keys(node: Any) -> Iterator[str]:
    """Every key anywhere in a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from all_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from all_keys(value)


class Inner(BaseModel):
    """No extra="forbid" here: Pydantic leaves additionalProperties out."""

    title: str = Field(default="x", title="A title", max_length=10)
    default: int | None = Field(default=None, ge=0, le=9)


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grade: Literal[1, 2, 3] = 2
    mood: Literal["up", "down"]
    inner: Inner = Field(description="An inline nested model.")
    inners: list[Inner] = Field(default_factory=list, min_length=1)
    maybe: Inner | None = None


def test_every_object_of_the_critique_schema_is_closed_and_fully_required() -> None:
    schema = strict_json_schema(Critique)
    objects = [(p, n) for p, n in subschemas(schema) if n.get("type") == "object"]
    assert {p for p, _ in objects} == {"#", "#/$defs/Callout"}
    for path, node in objects:
        assert node["additionalProperties"] is False, path
        assert sorted(node["required"]) == sorted(node["properties"]), path


def test_critique_scores_are_integer_enums_one_to_five() -> None:
    properties = strict_json_schema(Critique)["properties"]
    for dimension in ("accuracy", "consistency", "completeness"):
        assert properties[dimension] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}


def test_optional_rival_is_required_but_nullable() -> None:
    callout = strict_json_schema(Critique)["$defs"]["Callout"]
    assert "rival" in callout["required"]
    assert callout["properties"]["rival"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_recursive_walk_finds_no_open_object_or_noise_keyword_at_any_depth() -> None:
    schema = strict_json_schema(Outer)
    for path, node in subschemas(schema):
        for keyword in ("title", "default", "minimum", "maximum", "maxLength", "minItems"):
            assert keyword not in node, f"{keyword} at {path}"
        if node.get("type") == "object" or "properties" in node:
            assert node["additionalProperties"] is False, path
            assert sorted(node["required"]) == sorted(node["properties"]), path


def test_property_names_that_look_like_keywords_are_kept() -> None:
    inner = strict_json_schema(Outer)["$defs"]["Inner"]
    assert list(inner["properties"]) == ["title", "default"]
    assert inner["properties"]["default"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def test_a_described_ref_is_inlined_because_strict_mode_rejects_siblings_of_ref() -> None:
    inner = strict_json_schema(Outer)["properties"]["inner"]
    assert "$ref" not in inner
    assert inner["description"] == "An inline nested model."
    assert inner["additionalProperties"] is False


def test_the_pydantic_model_is_left_untouched() -> None:
    before = Critique.model_json_schema()
    strict_json_schema(Critique)
    assert Critique.model_json_schema() == before


# --- Gemini ----------------------------------------------------------------------------


def test_gemini_schema_has_no_ref_defs_additional_properties_or_null_union() -> None:
    keys = set(all_keys(gemini_schema(Critique)))
    assert keys.isdisjoint({"$ref", "$defs", "additionalProperties", "anyOf", "title"})


def test_gemini_schema_inlines_callouts_with_nullable_rival() -> None:
    callout = gemini_schema(Critique)["properties"]["callouts"]["items"]
    assert callout["type"] == "OBJECT"
    assert callout["properties"]["rival"] == {"type": "STRING", "nullable": True}
    assert callout["properties"]["kind"] == {
        "type": "STRING",
        "enum": ["contradicted", "unsupported", "opinion"],
    }
    assert callout["required"] == ["dimension", "kind", "claim", "quote", "rival"]


def test_gemini_scores_are_bounded_integers_because_gemini_enums_are_strings() -> None:
    accuracy = gemini_schema(Critique)["properties"]["accuracy"]
    assert accuracy == {
        "type": "INTEGER",
        "minimum": 1,
        "maximum": 5,
        "description": "One of: 1, 2, 3, 4, 5.",
    }


def test_gemini_types_are_upper_case_and_order_follows_the_model() -> None:
    schema = gemini_schema(Critique)
    types = {node["type"] for _, node in subschemas(schema) if "type" in node}
    assert types <= {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
    assert schema["propertyOrdering"] == ["accuracy", "consistency", "completeness", "callouts"]


def test_gemini_nullable_nested_model_and_type_lists() -> None:
    schema = gemini_schema(Outer)
    assert schema["properties"]["maybe"]["nullable"] is True
    assert schema["properties"]["maybe"]["type"] == "OBJECT"
    converted = to_gemini_schema({"type": ["integer", "null"], "enum": [2, 7]})
    assert converted == {"type": "INTEGER", "description": "One of: 2, 7.", "nullable": True}


def test_gemini_cannot_inline_a_recursive_model() -> None:
    class Node(BaseModel):
        children: list[Node]

    with pytest.raises(ValueError, match="recursive"):
        gemini_schema(Node)
