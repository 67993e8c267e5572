"""A local OpenAI-compatible chat completions server for a two-turn tool-calling agent.

``POST /v1/chat/completions`` answers a request without a ``tool`` message with an
assistant message calling ``get_weather {"city": "Paris"}``, and a request carrying the
tool's result with a final text answer. Each answer reports fixed token counts, so a
test can assert that a trace carries exactly what the server said.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.helpers.local_server import serve_on_free_port

__all__ = [
    "FINAL_ANSWER",
    "FINAL_USAGE",
    "REQUEST_MODEL",
    "RESPONSE_MODEL",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_USAGE",
    "TOOL_NAME",
    "WEATHER_TOOL",
    "OpenAIStub",
    "Usage",
    "serve_openai_stub",
]

REQUEST_MODEL = "gpt-4o-mini"
"""The model the client asks for."""
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
"""The model the server says answered (a dated snapshot, as OpenAI reports)."""
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS: dict[str, Any] = {"city": "Paris"}
TOOL_CALL_ID = "call_weather_1"
FINAL_ANSWER = "It is 18 degrees and sunny in Paris."

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
"""The tool definition the client sends."""


@dataclass(frozen=True)
class Usage:
    """Token counts one answer reports."""

    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


TOOL_CALL_USAGE = Usage(prompt_tokens=52, completion_tokens=17)
"""Reported by the first answer (the tool call)."""
FINAL_USAGE = Usage(prompt_tokens=83, completion_tokens=12)
"""Reported by the second answer (the text)."""


@dataclass
class OpenAIStub:
    """The stub's state: the URL clients use and the request bodies it received."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


def _completion(message: dict[str, Any], finish_reason: str, usage: Usage) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-stub-{finish_reason}",
        "object": "chat.completion",
        "created": 1_764_547_200,
        "model": RESPONSE_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
        message = {"role": "assistant", "content": FINAL_ANSWER}
        return _completion(message, "stop", FINAL_USAGE)
    call = {
        "id": TOOL_CALL_ID,
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGUMENTS)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return _completion(message, "tool_calls", TOOL_CALL_USAGE)


def _app(requests: list[dict[str, Any]]) -> Starlette:
    async def chat_completions(request: Request) -> JSONResponse:
        body = await request.json()
        if not isinstance(body, dict):
            return JSONResponse({"error": {"message": "expected an object"}}, status_code=400)
        requests.append(body)
        return JSONResponse(_answer(body))

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


@contextmanager
def serve_openai_stub() -> Iterator[OpenAIStub]:
    """Run the stub on 127.0.0.1; yield it with ``base_url`` ending in ``/v1``."""
    requests: list[dict[str, Any]] = []
    with serve_on_free_port(_app(requests)) as url:
        yield OpenAIStub(base_url=f"{url}/v1", requests=requests)
