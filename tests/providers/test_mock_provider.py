"""The mock provider: deterministic answers that follow the requested schema, or a script."""

from __future__ import annotations

import json

import pytest

from arbiter.config import Settings
from arbiter.contract import Critique
from arbiter.errors import InvalidResponse
from arbiter.providers.base import CompletionRequest
from arbiter.providers.mock import MockProvider, simplest_instance
from arbiter.providers.parse import parse_structured
from arbiter.providers.registry import make_provider
from arbiter.providers.schema import strict_json_schema


def request(schema: dict[str, object], prompt: str = "p") -> CompletionRequest:
    return CompletionRequest(model="m", system="s", prompt=prompt, json_schema=schema)


async def test_an_unscripted_answer_validates_against_the_requested_model() -> None:
    response = await MockProvider().complete(request(strict_json_schema(Critique)))
    critique = parse_structured(response.text, Critique)
    assert (critique.accuracy, critique.callouts) == (1, [])
    assert response.model == "mock"


def test_the_simplest_instance_takes_the_first_enum_value_and_fills_required_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "label": {"enum": ["nominal", "critical"]},
            "reason": {"type": "string"},
            "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["label", "reason", "score", "tags"],
    }
    assert simplest_instance(schema) == {"label": "nominal", "reason": "", "score": 0, "tags": []}


def test_an_unresolvable_reference_is_an_invalid_response() -> None:
    with pytest.raises(InvalidResponse, match="cannot resolve"):
        simplest_instance({"$ref": "#/$defs/Missing"})


async def test_a_script_answers_exactly_and_every_request_is_recorded() -> None:
    provider = MockProvider(lambda r: json.dumps({"echo": r.prompt}))
    first = await provider.complete(request({}, "one"))
    second = await provider.complete(request({}, "two"))
    assert [json.loads(r.text)["echo"] for r in (first, second)] == ["one", "two"]
    assert [r.prompt for r in provider.requests] == ["one", "two"]


async def test_the_registry_builds_it_by_name_and_it_repeats_itself() -> None:
    provider = make_provider("mock", Settings(_env_file=None))
    schema = strict_json_schema(Critique)
    answers = {(await provider.complete(request(schema))).text for _ in range(3)}
    assert len(answers) == 1
