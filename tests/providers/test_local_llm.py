"""The real provider path end to end: the ``openai`` provider against a real llama.cpp server.

Skipped, with the reason shown, when no server answers. ``../shared/tools/local-llm start``
serves SmolLM2-135M at http://127.0.0.1:8089/v1. The tiny model makes up quotes and
flips its scores between identical calls; this test proves the plumbing (request
shape, grammar-constrained JSON, parsing, usage), not judgment.
"""

from __future__ import annotations

import os

import httpx
import pytest

from arbiter.contract import Critique
from arbiter.errors import InvalidResponse
from arbiter.providers.base import CompletionRequest
from arbiter.providers.openai import OpenAIProvider
from arbiter.providers.parse import parse_structured
from arbiter.providers.schema import strict_json_schema

ATTEMPTS = 4
URL = os.environ.get("ARBITER_LLAMA_CPP_URL", "http://127.0.0.1:8089/v1").rstrip("/")

SYSTEM = (
    "You are a strict reviewer. Compare the OUTPUT with the CONTEXT. Score accuracy, "
    "consistency and completeness from 1 (bad) to 5 (perfect) and list each problem as a "
    "callout that quotes the OUTPUT word for word. Answer with JSON only."
)
PROMPT = (
    "TASK: State the refund window.\n"
    "CONTEXT: Refunds are accepted within 30 days of delivery.\n"
    "OUTPUT: Refunds are accepted within 45 days of delivery."
)


async def server_up(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=1.0) as client:
            return (await client.get(f"{url}/models")).status_code == 200
    except httpx.HTTPError:
        return False


async def test_llama_cpp_answers_a_critique_that_validates() -> None:
    if not await server_up(URL):
        pytest.skip(f"no local model server at {URL}: run ../shared/tools/local-llm start")
    provider = OpenAIProvider("llama_cpp", base_url=URL, api_key=None, dialect="llama_cpp")
    request = CompletionRequest(
        model="smollm2",
        system=SYSTEM,
        prompt=PROMPT,
        json_schema=strict_json_schema(Critique),
        max_output_tokens=400,
        timeout=120.0,
    )
    # The tiny model sometimes rambles until the token limit: that must surface as our
    # InvalidResponse, and one of a few identical calls must come back whole.
    failures: list[InvalidResponse] = []
    for _ in range(ATTEMPTS):
        try:
            response = await provider.complete(request)
            critique = parse_structured(response.text, Critique)
        except InvalidResponse as exc:
            failures.append(exc)
            continue
        assert {critique.accuracy, critique.consistency, critique.completeness} <= {1, 2, 3, 4, 5}
        assert response.usage.input_tokens > 0
        assert response.usage.output_tokens > 0
        return
    pytest.fail(f"no valid critique in {ATTEMPTS} calls; last: {failures[-1]}")
