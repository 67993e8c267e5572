"""Shared fakes for provider tests: HTTP is faked only by an injected ``httpx.MockTransport``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from arbiter.contract import Critique
from arbiter.providers.anthropic import AnthropicProvider
from arbiter.providers.base import CompletionRequest, Provider
from arbiter.providers.gemini import GeminiProvider
from arbiter.providers.openai import OpenAIProvider
from arbiter.providers.schema import strict_json_schema

OPENAI_KEY = "sk-test-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-0123456789"
GEMINI_KEY = "AIza-test-0123456789"

CRITIQUE: dict[str, Any] = {
    "accuracy": 2,
    "consistency": 5,
    "completeness": 4,
    "callouts": [
        {
            "dimension": "accuracy",
            "kind": "contradicted",
            "claim": "The refund window is 45 days, the policy says 30.",
            "quote": "Refunds are accepted within 45 days",
            "rival": "30 days",
        }
    ],
}
"""A valid critique, as a model would answer it."""


def critique_request(**overrides: Any) -> CompletionRequest:
    """A critique request as a critic would build it."""
    fields: dict[str, Any] = {
        "model": "test-model",
        "system": "You are a strict reviewer.",
        "prompt": "TASK: t\nCONTEXT: c\nOUTPUT: o",
        "json_schema": strict_json_schema(Critique),
        "max_output_tokens": 512,
        "timeout": 5.0,
    }
    return CompletionRequest(**{**fields, **overrides})


@dataclass
class FakeServer:
    """A transport that records every request and answers with ``respond``."""

    respond: Callable[[httpx.Request], httpx.Response]
    requests: list[httpx.Request] = field(default_factory=list)

    @property
    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return self.respond(request)

        return httpx.MockTransport(handler)

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body of the one request received."""
        assert len(self.requests) == 1
        document: dict[str, Any] = json.loads(self.requests[0].content)
        return document


# --- what each vendor answers on success ---------------------------------------------


def openai_answer(content: Any, *, finish_reason: str = "stop") -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test-2025-01-01",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500},
    }


def ollama_answer(content: Any, *, done_reason: str = "stop") -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "model": "llama3.2",
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": done_reason,
        "prompt_eval_count": 1200,
        "eval_count": 300,
    }


def anthropic_answer(content: Any, *, stop_reason: str = "tool_use") -> dict[str, Any]:
    block: dict[str, Any]
    if isinstance(content, str):  # a model that talks instead of calling the tool
        block = {"type": "text", "text": content}
    else:
        block = {"type": "tool_use", "id": "toolu_1", "name": "critique", "input": content}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [block],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 1200, "output_tokens": 300},
    }


def gemini_answer(content: Any, *, finish_reason: str = "STOP") -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish_reason}
        ],
        "usageMetadata": {
            "promptTokenCount": 1200,
            "candidatesTokenCount": 300,
            "totalTokenCount": 1500,
        },
        "modelVersion": "gemini-test",
    }


PRICES = {"test-model": (2.0, 10.0)}
"""USD per million tokens: 1200 in + 300 out cost 0.0024 + 0.003 = 0.0054."""


@dataclass(frozen=True)
class Vendor:
    """One provider under test: how to build it and what it answers on success."""

    id: str
    build: Callable[[httpx.AsyncBaseTransport], Provider]
    answer: Callable[[Any], dict[str, Any]]


VENDORS = [
    Vendor(
        "openai",
        lambda t: OpenAIProvider(
            base_url="https://api.openai.com/v1", api_key=OPENAI_KEY, transport=t, prices=PRICES
        ),
        openai_answer,
    ),
    Vendor(
        "llama_cpp",
        lambda t: OpenAIProvider(
            "llama_cpp",
            base_url="http://127.0.0.1:8089/v1",
            api_key=None,
            dialect="llama_cpp",
            transport=t,
            prices=PRICES,
        ),
        openai_answer,
    ),
    Vendor(
        "ollama",
        lambda t: OpenAIProvider(
            "ollama",
            base_url="http://localhost:11434",
            api_key=None,
            dialect="ollama",
            transport=t,
            prices=PRICES,
        ),
        ollama_answer,
    ),
    Vendor(
        "anthropic",
        lambda t: AnthropicProvider(api_key=ANTHROPIC_KEY, transport=t, prices=PRICES),
        anthropic_answer,
    ),
    Vendor(
        "gemini",
        lambda t: GeminiProvider(api_key=GEMINI_KEY, transport=t, prices=PRICES),
        gemini_answer,
    ),
]
"""Every provider, for tests parametrized over all of them."""
