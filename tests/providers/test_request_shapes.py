"""The exact HTTP request each provider sends: method, URL, headers and JSON body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from arbiter.config import Settings
from arbiter.contract import Critique
from arbiter.errors import InputError
from arbiter.providers.anthropic import AnthropicProvider
from arbiter.providers.base import Provider
from arbiter.providers.gemini import GeminiProvider
from arbiter.providers.mock import MockProvider
from arbiter.providers.openai import OpenAIProvider
from arbiter.providers.registry import ProviderRegistry, make_provider
from arbiter.providers.schema import gemini_schema, strict_json_schema

from .conftest import (
    ANTHROPIC_KEY,
    CRITIQUE,
    GEMINI_KEY,
    OPENAI_KEY,
    VENDORS,
    FakeServer,
    Vendor,
    anthropic_answer,
    critique_request,
    gemini_answer,
    ollama_answer,
    openai_answer,
)

SYSTEM = "You are a strict reviewer."
PROMPT = "TASK: t\nCONTEXT: c\nOUTPUT: o"
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
STRICT = strict_json_schema(Critique)
SAMPLING = {"temperature", "top_p", "top_k", "topP", "topK", "seed"}


def server_answering(document: dict[str, Any]) -> FakeServer:
    return FakeServer(lambda request: httpx.Response(200, json=document))


def all_keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from all_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from all_keys(value)


# --- openai, three dialects ---------------------------------------------------------


async def test_openai_dialect_sends_strict_json_schema_and_bearer_key() -> None:
    server = server_answering(openai_answer(CRITIQUE))
    provider = OpenAIProvider(
        base_url="https://api.openai.com/v1/", api_key=OPENAI_KEY, transport=server.transport
    )
    await provider.complete(critique_request(model="gpt-5-mini"))
    request = server.requests[0]
    assert (request.method, str(request.url)) == (
        "POST",
        "https://api.openai.com/v1/chat/completions",
    )
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert server.body == {
        "model": "gpt-5-mini",
        "messages": MESSAGES,
        "max_completion_tokens": 512,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "critique", "strict": True, "schema": STRICT},
        },
    }


@pytest.mark.parametrize(("effort", "sent"), [("low", "low"), ("high", "high"), ("max", "high")])
async def test_openai_dialect_sends_reasoning_effort_only_when_set(effort: str, sent: str) -> None:
    server = server_answering(openai_answer(CRITIQUE))
    provider = OpenAIProvider(
        base_url="https://api.openai.com/v1", api_key=OPENAI_KEY, transport=server.transport
    )
    await provider.complete(critique_request(model="o4-mini", effort=effort))
    assert server.body["reasoning_effort"] == sent


async def test_llama_cpp_dialect_sends_json_object_with_schema_and_no_key() -> None:
    server = server_answering(openai_answer(CRITIQUE))
    provider = OpenAIProvider(
        "llama_cpp",
        base_url="http://127.0.0.1:8089/v1",
        api_key=None,
        dialect="llama_cpp",
        transport=server.transport,
    )
    await provider.complete(critique_request(model="smollm2", effort="high"))
    request = server.requests[0]
    assert (request.method, str(request.url)) == (
        "POST",
        "http://127.0.0.1:8089/v1/chat/completions",
    )
    assert "authorization" not in request.headers
    assert server.body == {
        "model": "smollm2",
        "messages": MESSAGES,
        "max_tokens": 512,
        "response_format": {"type": "json_object", "schema": STRICT},
    }


@pytest.mark.parametrize("base_url", ["http://localhost:11434", "http://localhost:11434/v1/"])
async def test_ollama_dialect_uses_the_native_chat_api_with_format(base_url: str) -> None:
    server = server_answering(ollama_answer(CRITIQUE))
    provider = OpenAIProvider(
        "ollama", base_url=base_url, api_key=None, dialect="ollama", transport=server.transport
    )
    await provider.complete(critique_request(model="llama3.2", effort="low"))
    request = server.requests[0]
    assert (request.method, str(request.url)) == ("POST", "http://localhost:11434/api/chat")
    assert "authorization" not in request.headers
    assert server.body == {
        "model": "llama3.2",
        "messages": MESSAGES,
        "stream": False,
        "format": STRICT,
        "options": {"num_predict": 512},
    }


def test_an_unknown_dialect_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="'dialect' parameter of OpenAIProvider"):
        OpenAIProvider(base_url="http://x/v1", api_key=None, dialect="vllm")  # type: ignore[arg-type]


# --- anthropic ------------------------------------------------------------------------


def anthropic_body(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 512,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": [
            {
                "name": "critique",
                "description": "Record your answer as a critique.",
                "input_schema": STRICT,
            }
        ],
        "tool_choice": {"type": "tool", "name": "critique"},
    }


async def test_anthropic_sends_a_forced_tool_with_version_and_key_headers() -> None:
    server = server_answering(anthropic_answer(CRITIQUE))
    provider = AnthropicProvider(api_key=ANTHROPIC_KEY, transport=server.transport)
    await provider.complete(critique_request(model="claude-sonnet-4-5"))
    request = server.requests[0]
    assert (request.method, str(request.url)) == ("POST", "https://api.anthropic.com/v1/messages")
    assert request.headers["x-api-key"] == ANTHROPIC_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert server.body == anthropic_body("claude-sonnet-4-5")


async def test_anthropic_sends_effort_to_sonnet() -> None:
    server = server_answering(anthropic_answer(CRITIQUE))
    provider = AnthropicProvider(api_key=ANTHROPIC_KEY, transport=server.transport)
    await provider.complete(critique_request(model="claude-sonnet-4-5", effort="medium"))
    assert server.body == {
        **anthropic_body("claude-sonnet-4-5"),
        "output_config": {"effort": "medium"},
    }


async def test_anthropic_leaves_effort_out_for_haiku_which_rejects_it() -> None:
    server = server_answering(anthropic_answer(CRITIQUE))
    provider = AnthropicProvider(api_key=ANTHROPIC_KEY, transport=server.transport)
    await provider.complete(critique_request(model="claude-haiku-4-5", effort="medium"))
    assert server.body == anthropic_body("claude-haiku-4-5")


async def test_anthropic_effort_rule_is_an_injected_predicate() -> None:
    server = server_answering(anthropic_answer(CRITIQUE))
    provider = AnthropicProvider(
        api_key=ANTHROPIC_KEY,
        transport=server.transport,
        supports_effort=lambda model: model == "claude-haiku-9",
    )
    await provider.complete(critique_request(model="claude-haiku-9", effort="low"))
    assert server.body["output_config"] == {"effort": "low"}


# --- gemini ---------------------------------------------------------------------------


async def test_gemini_sends_response_schema_with_the_key_in_a_header_not_the_url() -> None:
    server = server_answering(gemini_answer(CRITIQUE))
    provider = GeminiProvider(api_key=GEMINI_KEY, transport=server.transport)
    await provider.complete(critique_request(model="gemini-2.5-flash", effort="high"))
    request = server.requests[0]
    assert (request.method, str(request.url)) == (
        "POST",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
    )
    assert request.headers["x-goog-api-key"] == GEMINI_KEY
    assert GEMINI_KEY not in str(request.url)
    assert server.body == {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseSchema": gemini_schema(Critique),
            "maxOutputTokens": 512,
        },
    }


# --- every provider -------------------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
@pytest.mark.parametrize("effort", [None, "max"])
async def test_no_sampling_parameter_is_ever_sent(vendor: Vendor, effort: str | None) -> None:
    server = server_answering(vendor.answer(CRITIQUE))
    await vendor.build(server.transport).complete(critique_request(effort=effort))
    assert SAMPLING.isdisjoint(all_keys(server.body))


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)
def test_repr_never_shows_the_key(vendor: Vendor) -> None:
    shown = repr(vendor.build(httpx.MockTransport(lambda r: httpx.Response(500))))
    assert all(key not in shown for key in (OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY))


# --- registry -------------------------------------------------------------------------


def settings() -> Settings:
    return Settings(
        _env_file=None,
        openai_api_key="sk-reg",
        openai_base_url="http://vllm.test/v1",
        anthropic_api_key="sk-ant-reg",
        gemini_api_key="gm-reg",
        ollama_url="http://ollama.test:11434",
        llama_cpp_url="http://llama.test:8089/v1",
        model_prices={"test-model": (1.0, 1.0)},
    )


OPENAI_AUTH = ("authorization", "Bearer sk-reg")
ANTHROPIC_AUTH = ("x-api-key", "sk-ant-reg")
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/test-model:generateContent"


@pytest.mark.parametrize(
    ("name", "answer", "url", "header"),
    [
        ("openai", openai_answer, "http://vllm.test/v1/chat/completions", OPENAI_AUTH),
        ("llama_cpp", openai_answer, "http://llama.test:8089/v1/chat/completions", None),
        ("ollama", ollama_answer, "http://ollama.test:11434/api/chat", None),
        ("anthropic", anthropic_answer, "https://api.anthropic.com/v1/messages", ANTHROPIC_AUTH),
        ("gemini", gemini_answer, GEMINI_URL, ("x-goog-api-key", "gm-reg")),
    ],
)  # fmt: skip
async def test_make_provider_wires_keys_and_urls_from_settings(
    name: str, answer: Any, url: str, header: tuple[str, str] | None
) -> None:
    server = server_answering(answer(CRITIQUE))
    provider: Provider = make_provider(name, settings(), transport=server.transport)
    response = await provider.complete(critique_request())
    assert provider.name == name
    assert str(server.requests[0].url) == url
    if header is not None:
        assert server.requests[0].headers[header[0]] == header[1]
    assert response.usage.cost_usd == pytest.approx(0.0015)


async def test_make_provider_takes_the_openai_dialect_from_settings() -> None:
    server = server_answering(openai_answer(CRITIQUE))
    custom = settings().model_copy(update={"openai_dialect": "llama_cpp"})
    await make_provider("openai", custom, transport=server.transport).complete(critique_request())
    assert server.body["response_format"]["type"] == "json_object"


def test_make_provider_reads_the_vendors_own_variable_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("OLLAMA_URL", "http://ollama.env:1")
    monkeypatch.setenv("ARBITER_OPENAI_DIALECT", "ollama")
    provider = make_provider("openai", Settings(_env_file=None))
    assert isinstance(provider, OpenAIProvider)
    assert (provider.base_url, provider.dialect) == ("http://env.test/v1", "ollama")
    ollama = make_provider("ollama", Settings(_env_file=None))
    assert isinstance(ollama, OpenAIProvider)
    assert ollama.endpoint == "http://ollama.env:1/api/chat"


def test_make_provider_refuses_an_unknown_name_and_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="unknown provider 'gpt'; known: 'anthropic', 'gemini'"):
        make_provider("gpt", settings())


def test_a_registered_provider_is_built_through_the_registry_with_its_client() -> None:
    registry = ProviderRegistry.default(plugins=False)
    seen: list[object] = []

    def factory(config: Settings, http: object) -> MockProvider:
        seen.append(http)
        return MockProvider(model="echo")

    registry.register_provider("echo", factory)
    provider = registry.build("echo", settings())
    assert isinstance(provider, MockProvider)
    assert "echo" in registry.names()
    (client,) = seen
    assert client.retry.retries == settings().retries  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="registered already"):
        registry.register_provider("echo", factory)
