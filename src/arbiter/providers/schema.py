"""JSON schemas for structured output, generated from Pydantic models.

Pydantic is the single source of truth; these functions turn its JSON schema into
what each vendor's constrained decoding accepts:

- ``strict_json_schema`` — OpenAI structured outputs with ``strict: true`` (also used
  for Anthropic tool input, llama.cpp's grammar and Ollama's ``format``).
- ``gemini_schema`` / ``to_gemini_schema`` — Gemini's ``responseSchema``, a subset of
  the OpenAPI 3.0 schema object.

Why a conversion is needed at all: Pydantic omits ``additionalProperties`` on nested
models unless each sets ``extra="forbid"``, leaves fields with defaults out of
``required``, and emits keywords (``default``, ``title``, numeric bounds) that strict
mode rejects or ignores. The root looking right is not enough: the first real call
fails on a nested object.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

__all__ = ["gemini_schema", "strict_json_schema", "to_gemini_schema"]

JsonSchema = dict[str, Any]

# OpenAI strict mode documents support for string ``pattern``/``format``, numeric
# bounds and ``minItems``/``maxItems`` on current models, but not on fine-tuned ones,
# and other OpenAI-compatible servers (vLLM, llama.cpp grammars) differ again. We drop
# every validation keyword and keep only the structural core; the answer is validated
# by Pydantic afterwards anyway (``parse_structured``), so no constraint is lost.
_STRICT_DROPPED = frozenset(
    {
        "title",
        "default",
        "examples",
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "dependentRequired",
        "dependentSchemas",
        "discriminator",
        "contentEncoding",
        "contentMediaType",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)


def strict_json_schema(model: type[BaseModel]) -> JsonSchema:
    """The strict JSON schema of a Pydantic model (OpenAI structured-output rules).

    Every object, nested ones and every ``$defs`` entry included, gets
    ``additionalProperties: false`` and lists all its properties in ``required``;
    nullable fields stay ``anyOf`` with ``null``; ``Literal`` integers stay ``enum``;
    ``title``, ``default`` and validation keywords are dropped.

    Args:
        model: The Pydantic model the answer must follow.

    Returns:
        A new JSON-able dict.

    Examples:
        >>> from arbiter.contract import Critique
        >>> strict_json_schema(Critique)["properties"]["accuracy"]
        {'enum': [1, 2, 3, 4, 5], 'type': 'integer'}
    """
    raw = model.model_json_schema(mode="validation")
    defs = raw.get("$defs", {})
    strict = _strict_node(raw, defs)
    if "$defs" in raw:
        strict["$defs"] = {name: _strict_node(node, defs) for name, node in defs.items()}
    return strict


def _strict_node(node: JsonSchema, defs: JsonSchema) -> JsonSchema:
    node = _flatten_all_of(node)
    if "$ref" in node and len(node) > 1:
        # OpenAI rejects keywords beside a $ref ({"$ref": ..., "description": ...}): inline it.
        node = {**_resolve(node["$ref"], defs), **{k: v for k, v in node.items() if k != "$ref"}}
    out: JsonSchema = {}
    for key, value in node.items():
        if key in _STRICT_DROPPED or key == "$defs":
            continue
        if key == "properties":
            out[key] = {name: _strict_node(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _strict_node(value, defs)
        elif key in ("anyOf", "oneOf"):
            # oneOf is unsupported in strict mode; for model fields anyOf means the same.
            out["anyOf"] = [_strict_node(sub, defs) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    if out.get("type") == "object" or "properties" in out:
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _flatten_all_of(node: JsonSchema) -> JsonSchema:
    """Merge a one-element ``allOf`` (older Pydantic wraps a described ``$ref`` so)."""
    parts = node.get("allOf")
    if not isinstance(parts, list) or len(parts) != 1:
        return node
    return {**parts[0], **{k: v for k, v in node.items() if k != "allOf"}}


def _resolve(ref: str, defs: JsonSchema) -> JsonSchema:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise ValueError(f"cannot resolve $ref {ref!r}: only local '#/$defs/...' refs are known")
    resolved: JsonSchema = defs[ref[len(prefix) :]]
    return resolved


# --------------------------------------------------------------------------- Gemini
#
# What Gemini's responseSchema takes (Gemini API reference, ``Schema`` of
# generativelanguage v1beta, and the structured-output guide):
# - a "select subset of an OpenAPI 3.0 schema object": no $ref / $defs, so definitions
#   are inlined (a recursive model cannot be expressed and raises);
# - ``type`` is the proto enum Type: STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT
#   (the docs' REST examples write it upper-case, which is what we send);
# - nullability is ``nullable: true``, not a union with ``null``;
# - no ``additionalProperties`` and no ``title`` in the guide's field list;
# - ``enum`` is ``string[]``: "possible values of the element of Type.STRING with enum
#   format". Vertex documents ``{type: INTEGER, format: enum, enum: ["101", ...]}``
#   but the Developer API only accepts format 'enum' / 'date-time' on strings, so an
#   integer ``Literal`` becomes ``type: INTEGER`` with ``minimum`` / ``maximum`` (both
#   fields of v1beta Schema) when its values are contiguous, and the allowed values
#   are named in ``description`` either way;
# - ``propertyOrdering`` (a Gemini extension) fixes the order fields are generated in;
#   without it Gemini orders them alphabetically.
# Unsupported fields are ignored rather than rejected, per the guide, but we send none.

_GEMINI_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}


def gemini_schema(model: type[BaseModel]) -> JsonSchema:
    """Gemini's ``responseSchema`` for a Pydantic model.

    Args:
        model: The Pydantic model the answer must follow.

    Returns:
        An OpenAPI-subset schema: definitions inlined, upper-case types,
        ``nullable`` flags, integer enums as bounded integers.
    """
    return to_gemini_schema(strict_json_schema(model))


def to_gemini_schema(schema: JsonSchema) -> JsonSchema:
    """Convert a JSON schema (strict or plain Pydantic output) into Gemini's subset.

    Args:
        schema: A JSON schema whose refs, if any, point into its own ``$defs``.

    Returns:
        A new dict for ``generationConfig.responseSchema``.

    Raises:
        ValueError: The schema is recursive or uses a construct Gemini cannot express.
    """
    return _gemini_node(schema, schema.get("$defs", {}), ())


def _gemini_node(node: JsonSchema, defs: JsonSchema, seen: tuple[str, ...]) -> JsonSchema:
    node = _flatten_all_of(node)
    if "$ref" in node:
        ref = node["$ref"]
        if ref in seen:
            raise ValueError(
                f"recursive schema at {ref!r}: Gemini's responseSchema cannot inline it"
            )
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _gemini_node({**_resolve(ref, defs), **siblings}, defs, (*seen, ref))

    nullable = False
    variants = node.get("anyOf") or node.get("oneOf")
    if variants is not None:
        non_null = [v for v in variants if v.get("type") != "null"]
        nullable = len(non_null) < len(variants)
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        if len(non_null) == 1:
            out = _gemini_node({**non_null[0], **rest}, defs, seen)
        else:
            out = {"anyOf": [_gemini_node(v, defs, seen) for v in non_null]}
            if "description" in node:
                out["description"] = node["description"]
        if nullable:
            out["nullable"] = True
        return out

    types = node.get("type")
    if isinstance(types, list):  # {"type": ["string", "null"]}
        nullable = "null" in types
        concrete = [t for t in types if t != "null"]
        if len(concrete) != 1:
            raise ValueError(f"Gemini's responseSchema cannot express the type union {types}")
        types = concrete[0]

    out = {}
    if "description" in node:
        out["description"] = node["description"]
    enum = node.get("enum", [node["const"]] if "const" in node else None)
    if enum is not None:
        _gemini_enum(out, enum, types)
    elif isinstance(types, str):
        out["type"] = _gemini_type(types)
    if "properties" in node:
        out["type"] = "OBJECT"
        out["properties"] = {
            name: _gemini_node(sub, defs, seen) for name, sub in node["properties"].items()
        }
        out["required"] = list(node.get("required", []))
        out["propertyOrdering"] = list(node["properties"])
    if isinstance(node.get("items"), dict):
        out["items"] = _gemini_node(node["items"], defs, seen)
    for key in ("minItems", "maxItems", "minimum", "maximum"):
        if key in node:
            out[key] = node[key]
    if nullable:
        out["nullable"] = True
    return out


def _gemini_type(name: str) -> str:
    if name not in _GEMINI_TYPES:
        raise ValueError(f"Gemini's responseSchema has no type {name!r}")
    return _GEMINI_TYPES[name]


def _gemini_enum(out: JsonSchema, enum: list[Any], declared: Any) -> None:
    if all(isinstance(v, str) for v in enum):
        out.update(type="STRING", enum=list(enum))
        return
    if all(isinstance(v, int) and not isinstance(v, bool) for v in enum):
        values = sorted(enum)
        out["type"] = "INTEGER"
        if values == list(range(values[0], values[-1] + 1)):
            out.update(minimum=values[0], maximum=values[-1])
        allowed = "One of: " + ", ".join(str(v) for v in values) + "."
        out["description"] = f"{out['description']} {allowed}" if "description" in out else allowed
        return
    raise ValueError(f"Gemini's responseSchema cannot express the enum {enum} (type {declared})")
