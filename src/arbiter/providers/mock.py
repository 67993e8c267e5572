"""The ``mock`` provider: deterministic, offline answers that follow the requested schema.

With no script it answers the simplest JSON the request's schema admits (the first
value of every enum, empty strings and lists, zeros, ``false``), so any structured call
of Arbiter's gets a valid, repeatable answer without a model. A caller that can compute
a meaningful offline answer puts it in ``request.metadata["mock_answer"]`` (which real
providers never send), and the mock answers that instead: the ``rubric`` scorer does,
with its reference check. A script (a fixed text or a function of the request) answers
exactly what a test needs. The mock costs nothing: ``cost_usd`` is 0. The jury's offline critics
do not come through here: they run the string detectors directly
(:mod:`arbiter.jury.offline`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from arbiter.contract import Usage
from arbiter.errors import InvalidResponse
from arbiter.providers.base import CompletionRequest, CompletionResponse

__all__ = ["MOCK_ANSWER", "MockProvider", "simplest_instance"]

MOCK_ANSWER = "mock_answer"
"""Key of ``CompletionRequest.metadata`` holding the JSON the mock should answer."""

Script = str | Callable[[CompletionRequest], str]


def simplest_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The simplest JSON value a (strict) JSON schema admits.

    Args:
        schema: A JSON schema, e.g. from :func:`arbiter.providers.schema.strict_json_schema`.
        defs: Its ``$defs`` (found in ``schema`` when not given).

    Raises:
        InvalidResponse: The schema uses a construct this cannot fill (a ``$ref`` that
            does not resolve).

    Examples:
        >>> simplest_instance({"type": "object", "properties": {"label": {"enum": ["a", "b"]}},
        ...                    "required": ["label"]})
        {'label': 'a'}
    """
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        name = str(schema["$ref"]).removeprefix("#/$defs/")
        if name not in defs:
            raise InvalidResponse(f"mock: cannot resolve {schema['$ref']!r} in the schema")
        return simplest_instance(defs[name], defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return simplest_instance(schema[key][0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: simplest_instance(properties[name], defs) for name in required}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(str(kind))


class MockProvider:
    """A provider that never leaves the process.

    Args:
        script: The answer: a text, or a function of the request returning one; None
            answers the request's ``metadata["mock_answer"]`` when it has one, else
            :func:`simplest_instance` of the request's schema.
        model: The model it reports having answered with.

    Examples:
        >>> import asyncio
        >>> request = CompletionRequest(model="m", system="", prompt="",
        ...     json_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
        >>> asyncio.run(MockProvider().complete(request)).text
        '{"ok": false}'
    """

    name = "mock"
    cacheable = False
    """Its answers cost nothing to compute again: the model-call cache passes it by."""

    def __init__(self, script: Script | None = None, *, model: str = "mock") -> None:
        self.script = script
        self.model = model
        self.requests: list[CompletionRequest] = []
        """Every request answered, in order."""

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Answer ``request`` from the script, its mock answer, or the simplest instance."""
        self.requests.append(request)
        if self.script is None and MOCK_ANSWER in request.metadata:
            text = json.dumps(request.metadata[MOCK_ANSWER])
        elif self.script is None:
            text = json.dumps(simplest_instance(request.json_schema))
        elif isinstance(self.script, str):
            text = self.script
        else:
            text = self.script(request)
        return CompletionResponse(text=text, model=self.model, usage=Usage(cost_usd=0.0))
