"""The ``json`` scorer: the output is JSON, valid against a schema, with the values expected.

The document read is the output's ``raw`` JSON when it has one, else its text parsed as
JSON (one surrounding Markdown code fence is allowed). Checks, all optional but the
first: it parses; it is valid against a JSON Schema (``json_schema``, or a file:
``json_schema_file``); the values at dotted paths equal fixed ones (``fields``) or the
example's values at the same paths (``paths``). A failed check fails the score; a path
the example does not have makes it abstain when nothing failed.

Schemas are checked when the scorer is built (a bad one is a bad input, exit 3), under
the draft their ``$schema`` names (2020-12 by default). ``format`` is an annotation, as
the standard's default; ``$ref`` to another document is not fetched. ``pattern`` runs on
RE2, in time linear in the output (see :mod:`~arbiter.scoring.patterns`), and
``patternProperties`` is refused: jsonschema would run it on a backtracking engine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from jsonschema import exceptions, validators  # type: ignore[import-untyped]  # no hints
from pydantic import GetCoreSchemaHandler, JsonValue
from pydantic_core import CoreSchema, core_schema

from arbiter.contract import Example, Output, Score
from arbiter.datasets.jsonio import json_type, read_json_file
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.files import FileArgument
from arbiter.scoring.patterns import compile_pattern, searchable
from arbiter.scoring.reading import MAX_QUOTED, Missing, follow_path, json_kind, output_json

__all__ = ["JsonSchemaFile", "json_equal", "json_output"]

_SHOWN_PROBLEMS = 3
"""Failed checks an explanation lists before "and N more"."""

# Where a schema holds subschemas, by keyword: one, a list of them, or a map of them.
_ONE = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAP = frozenset({"$defs", "definitions", "dependentSchemas", "properties", "dependencies"})


class JsonSchemaFile(FileArgument, dict[str, Any]):
    """The ``json_schema_file`` argument: a JSON Schema file's path, read when the scorer
    is built (with Arbiter's one JSON reader: errors name the file, line and column).

    It is stored as ``{"path", "sha256", "schema"}`` (``sha256`` of the schema as
    canonical JSON), so the scorer's spec holds the schema itself: a resumed run checks
    against the same schema even if the file has changed since. A stored value whose
    schema does not match its hash is refused.
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(cls.read)

    @classmethod
    def read(cls, value: Any) -> JsonSchemaFile:
        """The schema ``value`` names: a path to read, or a stored ``{path, sha256, schema}``.

        Raises:
            ValueError: The file cannot be read, is not JSON or holds no JSON object, or a
                stored value is malformed or its schema does not match its sha256.
        """
        if isinstance(value, str):
            try:
                schema = read_json_file(value, what="JSON Schema file")
            except InputError as exc:
                raise ValueError(str(exc)) from None
            if not isinstance(schema, dict):
                raise ValueError(
                    f"{value}: a JSON Schema must be an object, got {json_type(schema)}"
                )
            return cls(path=value, sha256=_schema_sha256(schema), schema=schema)
        if (
            isinstance(value, dict)
            and set(value) == {"path", "sha256", "schema"}
            and isinstance(value["path"], str)
            and isinstance(value["schema"], dict)
        ):
            if _schema_sha256(value["schema"]) != value["sha256"]:
                raise ValueError(f"{value['path']}: the stored schema does not match its sha256")
            return cls(value)
        raise ValueError("expected the path of a JSON Schema file")


def _schema_sha256(schema: dict[str, Any]) -> str:
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _subschemas(schema: object) -> Iterator[dict[str, Any]]:
    """Every schema object within ``schema``, itself included (keywords only, not data)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield node
        for keyword, value in node.items():
            if keyword in _ONE:
                stack.append(value)
            if keyword in _LIST and isinstance(value, list):
                stack.extend(value)
            if keyword in _MAP and isinstance(value, dict):
                stack.extend(value.values())


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``pattern`` keyword on RE2 (the pattern was checked at build time)."""
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(
        searchable(instance)
    ):
        shown = _shown(instance)
        yield exceptions.ValidationError(f"{shown} does not match {pattern!r}")


def _validator(schema: dict[str, Any]) -> Any:
    """A validator of ``schema``; raises ValueError when it is not a valid schema."""
    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        base.check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top"
        raise ValueError(f"schema is not a valid JSON Schema at {where}: {exc.message}") from None
    for node in _subschemas(schema):
        if "patternProperties" in node:
            raise ValueError(
                "schema uses patternProperties, which the json scorer does not run (its "
                "patterns would be matched by a backtracking engine); use propertyNames "
                "with a pattern"
            )
        if isinstance(node.get("pattern"), str):
            compile_pattern(node["pattern"])
    return validators.extend(base, {"pattern": _pattern})(schema)


def json_equal(left: JsonValue, right: JsonValue) -> bool:
    """Equality of JSON values: ``1`` equals ``1.0``, but ``true`` is not ``1``.

    Examples:
        >>> json_equal({"a": [1, True]}, {"a": [1.0, True]}), json_equal(True, 1)
        (True, False)
    """
    stack: list[tuple[JsonValue, JsonValue]] = [(left, right)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif json_kind(a) != json_kind(b) or a != b:
            return False
    return True


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + " [...]"


@scorer(
    name="json",
    description="The output is JSON; optionally valid against a schema, with fields equal "
    "to values.",
)
def json_output(
    *,
    json_schema: dict[str, Any] | None = None,
    json_schema_file: JsonSchemaFile | None = None,
    fields: dict[str, Any] | None = None,
    paths: list[str] | None = None,
) -> ScoreFunction:
    """The output is JSON, valid against a schema, with the values asked for at paths.

    The value is 1.0 when every check passed, 0.0 when one failed.

    Args:
        json_schema: A JSON Schema the document must be valid against (give this or
            ``json_schema_file``).
        json_schema_file: A file holding that JSON Schema; read when the scorer is built,
            and the schema stored with the run.
        fields: Dotted path to the value the document must hold there, the same for
            every example (``{"status": "ok", "items.0.id": 7}``).
        paths: Dotted paths at which the document must hold the example's
            ``expected`` values (``["city", "country"]``).
    """
    if fields is not None and not all(fields):
        raise ValueError("fields must map non-empty dotted paths to values")
    if paths is not None and not all(paths):
        raise ValueError("paths must be non-empty dotted paths")
    if json_schema is not None and json_schema_file is not None:
        raise ValueError("give the schema as json_schema or json_schema_file, not both")
    validator = None
    if json_schema_file is not None:
        try:
            validator = _validator(json_schema_file["schema"])
        except ValueError as exc:
            raise ValueError(f"{json_schema_file['path']}: {exc}") from None
    elif json_schema is not None:
        validator = _validator(json_schema)
    fixed = dict(fields or {})
    compared = list(paths or [])

    def score(example: Example, output: Output) -> Score:
        document = output_json(output)
        if isinstance(document, Missing):
            return Score(value=0.0, passed=False, explanation=document.reason)
        problems: list[str] = []
        if validator is not None:
            error = next(iter(validator.iter_errors(document)), None)
            if error is not None:
                message = " ".join(error.message.split())[: 2 * MAX_QUOTED]
                problems.append(f"not valid against the schema at {error.json_path}: {message}")
        for path, wanted in fixed.items():
            problems.extend(_differences(document, path, wanted))
        unknown: list[str] = []
        for path in compared:
            if example.expected is None:
                unknown.append("the example has no expected JSON to compare paths with")
                break
            wanted = follow_path(example.expected, path, "the example's expected")
            if isinstance(wanted, Missing):
                unknown.append(wanted.reason)
            else:
                problems.extend(_differences(document, path, wanted))
        if problems:
            more = len(problems) - _SHOWN_PROBLEMS
            explanation = "; ".join(problems[:_SHOWN_PROBLEMS])
            if more > 0:
                explanation += f"; and {more:,} more"
            return Score(value=0.0, passed=False, explanation=explanation)
        if unknown:
            return Score(explanation="; ".join(unknown[:_SHOWN_PROBLEMS]))
        return Score(value=1.0, passed=True)

    return score


def _differences(document: JsonValue, path: str, wanted: Any) -> list[str]:
    found = follow_path(document, path, "the output")
    if isinstance(found, Missing):
        return [found.reason]
    if json_equal(found, wanted):
        return []
    return [f"{path!r} is {_shown(found)}, expected {_shown(wanted)}"]
