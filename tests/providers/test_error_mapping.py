"""How every provider maps HTTP failures and bad answers into the ProviderError tree."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from arbiter.contract import Critique, Usage
from arbiter.errors import (
    InvalidResponse,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from arbiter.providers.anthropic import AnthropicProvider
from arbiter.providers.base import Provider
from arbiter.providers.gemini import GeminiProvider
from arbiter.providers.openai import OpenAIProvider
from arbiter.providers.parse import parse_structured

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

KEYS = (OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY)
VENDOR = {vendor.id: vendor for vendor in VENDORS}
by_vendor = pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.id)


def answering(status: int, body: Any = None, **headers: str) -> FakeServer:
    def respond(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return FakeServer(respond)


def raising(exc: Exception) -> FakeServer:
    def respond(request: httpx.Request) -> httpx.Response:
        raise exc

    return FakeServer(respond)


async def call(vendor: Vendor, server: FakeServer) -> Any:
    return await vendor.build(server.transport).complete(critique_request())


async def judge(vendor: Vendor, server: FakeServer) -> Critique:
    """What a critic does: complete, then parse the text as a Critique."""
    response = await call(vendor, server)
    return parse_structured(response.text, Critique)


def error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "error"}}


# --- HTTP status --------------------------------------------------------------------


@by_vendor
@pytest.mark.parametrize("status", [401, 403])
async def test_refused_key_is_an_auth_error_with_the_vendors_message(
    vendor: Vendor, status: int
) -> None:
    def echo_the_key(request: httpx.Request) -> httpx.Response:
        sent = (
            request.headers.get("authorization", "").removeprefix("Bearer ")
            or request.headers.get("x-api-key")
            or request.headers.get("x-goog-api-key")
        )
        return httpx.Response(status, json=error_body(f"Incorrect API key provided: {sent}"))

    server = FakeServer(echo_the_key)
    with pytest.raises(ProviderAuthError) as caught:
        await call(vendor, server)
    message = str(caught.value)
    assert message.startswith(f"{vendor.build(server.transport).name} test-model at http")
    assert f": HTTP {status}: " in message
    assert "Incorrect API key provided" in message
    assert all(key not in message for key in KEYS)
    assert "\n" not in message


@by_vendor
@pytest.mark.parametrize("header", ["Retry-After", "retry-after"])
async def test_429_with_retry_after_seconds_is_rate_limited(vendor: Vendor, header: str) -> None:
    server = answering(429, error_body("slow down"), **{header: "7"})
    with pytest.raises(RateLimited) as caught:
        await call(vendor, server)
    assert caught.value.retry_after == 7.0
    assert caught.value.retryable


@by_vendor
async def test_429_with_retry_after_http_date_is_rate_limited(vendor: Vendor) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    with pytest.raises(RateLimited) as caught:
        await call(vendor, answering(429, error_body("slow down"), **{"Retry-After": when}))
    assert caught.value.retry_after == pytest.approx(120, abs=5)


@by_vendor
async def test_429_without_retry_after_has_no_delay(vendor: Vendor) -> None:
    with pytest.raises(RateLimited) as caught:
        await call(vendor, answering(429, error_body("quota")))
    assert caught.value.retry_after is None


async def test_gemini_429_takes_the_delay_from_its_retry_info_detail() -> None:
    body = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}],
        }
    }
    gemini = VENDOR["gemini"]
    with pytest.raises(RateLimited) as caught:
        await call(gemini, answering(429, body))
    assert caught.value.retry_after == 31.0


@by_vendor
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_server_errors_are_unavailable_and_retryable(vendor: Vendor, status: int) -> None:
    with pytest.raises(ProviderUnavailable, match=f"HTTP {status}: overloaded") as caught:
        await call(vendor, answering(status, error_body("overloaded")))
    assert caught.value.retryable


@by_vendor
async def test_other_client_errors_are_invalid_with_the_vendors_message(vendor: Vendor) -> None:
    body = error_body("'max_tokens' is too large")
    with pytest.raises(InvalidResponse, match="HTTP 400: 'max_tokens' is too large") as caught:
        await call(vendor, answering(400, body))
    assert not caught.value.retryable


async def test_ollama_string_error_and_plain_text_errors_are_quoted() -> None:
    ollama = VENDOR["ollama"]
    with pytest.raises(InvalidResponse, match="HTTP 404: model 'llama9' not found"):
        await call(ollama, answering(404, {"error": "model 'llama9' not found"}))
    with pytest.raises(ProviderUnavailable, match="HTTP 500: Internal Server Error"):
        await call(ollama, answering(500, "Internal Server Error"))


async def test_gemini_invalid_key_400_is_an_auth_error() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    gemini = VENDOR["gemini"]
    with pytest.raises(ProviderAuthError, match="API key not valid"):
        await call(gemini, answering(400, body))


# --- transport failures ---------------------------------------------------------------


@by_vendor
async def test_read_timeout_is_provider_timeout(vendor: Vendor) -> None:
    with pytest.raises(ProviderTimeout, match="no answer within 5s"):
        await call(vendor, raising(httpx.ReadTimeout("timed out")))


@by_vendor
async def test_connect_error_is_unavailable(vendor: Vendor) -> None:
    with pytest.raises(
        ProviderUnavailable,
        match=r"test-model at https?://[^/ ]+: unreachable: \[Errno 111\] Connection refused",
    ):
        await call(vendor, raising(httpx.ConnectError("[Errno 111] Connection refused")))


async def test_the_whole_call_is_bounded_by_the_request_timeout() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        return httpx.Response(200, json=openai_answer(CRITIQUE))

    provider = OpenAIProvider(
        base_url="http://x.test/v1", api_key=None, transport=httpx.MockTransport(slow)
    )
    with pytest.raises(ProviderTimeout, match=r"within 0\.05s"):
        await provider.complete(critique_request(timeout=0.05))


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        (OpenAIProvider(base_url="https://api.openai.com/v1", api_key=None), "OPENAI_API_KEY"),
        (AnthropicProvider(api_key=None), "ANTHROPIC_API_KEY"),
        (GeminiProvider(api_key=None), "GEMINI_API_KEY"),
    ],
    ids=["openai", "anthropic", "gemini"],
)
async def test_a_missing_key_says_which_variable_to_set(provider: Provider, variable: str) -> None:
    with pytest.raises(ProviderAuthError, match=f"set {variable}"):
        await provider.complete(critique_request())


# --- bad answers ----------------------------------------------------------------------


@by_vendor
@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", '{"choices": [', "[1, 2]"])
async def test_a_body_that_is_not_a_json_object_is_invalid(vendor: Vendor, body: str) -> None:
    with pytest.raises(InvalidResponse, match=r"not JSON|not a JSON object"):
        await call(vendor, answering(200, body))


@by_vendor
async def test_an_answer_of_the_wrong_shape_is_invalid(vendor: Vendor) -> None:
    with pytest.raises(InvalidResponse):
        await call(vendor, answering(200, {"id": "x", "object": "unexpected"}))


@by_vendor
async def test_content_that_is_not_json_is_invalid(vendor: Vendor) -> None:
    server = answering(200, vendor.answer("Looks fine to me, 5/5."))
    with pytest.raises(InvalidResponse):
        await judge(vendor, server)


@by_vendor
async def test_json_that_breaks_the_critique_schema_names_the_field(vendor: Vendor) -> None:
    bad = {**CRITIQUE, "accuracy": 7}
    with pytest.raises(InvalidResponse, match="field 'accuracy'"):
        await judge(vendor, answering(200, vendor.answer(bad)))


@pytest.mark.parametrize(
    ("vendor_id", "document"),
    [
        ("openai", openai_answer(CRITIQUE, finish_reason="length")),
        ("llama_cpp", openai_answer(CRITIQUE, finish_reason="length")),
        ("ollama", ollama_answer(CRITIQUE, done_reason="length")),
        ("anthropic", anthropic_answer(CRITIQUE, stop_reason="max_tokens")),
        ("gemini", gemini_answer(CRITIQUE, finish_reason="MAX_TOKENS")),
    ],
)
async def test_an_answer_cut_off_at_the_token_limit_is_invalid(
    vendor_id: str, document: dict[str, Any]
) -> None:
    vendor = VENDOR[vendor_id]
    with pytest.raises(InvalidResponse, match="cut off at max_output_tokens=512") as caught:
        await call(vendor, answering(200, document))
    # The cut-off answer was billed: the error carries what it cost.
    assert caught.value.usage == Usage(input_tokens=1200, output_tokens=300, cost_usd=0.0054)


async def test_an_openai_refusal_is_invalid() -> None:
    document = openai_answer(CRITIQUE)
    document["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "no"}
    with pytest.raises(InvalidResponse, match="refused: no"):
        await call(VENDOR["openai"], answering(200, document))


# --- success --------------------------------------------------------------------------


@by_vendor
async def test_usage_and_cost_are_recorded_from_a_successful_answer(vendor: Vendor) -> None:
    response = await call(vendor, answering(200, vendor.answer(CRITIQUE)))
    assert parse_structured(response.text, Critique) == Critique.model_validate(CRITIQUE)
    assert response.usage == Usage(input_tokens=1200, output_tokens=300, cost_usd=0.0054)
    assert response.latency_ms > 0


async def test_an_unpriced_model_has_no_cost_and_missing_usage_counts_zero() -> None:
    document = openai_answer(CRITIQUE)
    del document["usage"]
    response = (
        await VENDOR["openai"]
        .build(answering(200, document).transport)
        .complete(critique_request(model="unpriced"))
    )
    assert response.usage == Usage(input_tokens=0, output_tokens=0, cost_usd=None)


async def test_gemini_counts_thinking_tokens_as_output() -> None:
    document = gemini_answer(CRITIQUE)
    document["usageMetadata"]["thoughtsTokenCount"] = 100
    document["candidates"][0]["content"]["parts"].insert(0, {"text": "hmm", "thought": True})
    gemini = VENDOR["gemini"]
    response = await call(gemini, answering(200, document))
    assert response.usage.output_tokens == 400
    assert response.text.startswith("{")


# --- parse_structured -----------------------------------------------------------------


CLEAN = '{"accuracy": 5, "consistency": 5, "completeness": 5, "callouts": []}'


@pytest.mark.parametrize(
    "text",
    [CLEAN, f"```json\n{CLEAN}\n```", f"Here it is:\n```\n{CLEAN}\n```  "],
    ids=["bare", "json-fence", "prose-and-fence"],
)
def test_parse_structured_reads_bare_and_fenced_json(text: str) -> None:
    assert parse_structured(text, Critique).accuracy == 5


def test_parse_structured_says_not_json() -> None:
    with pytest.raises(InvalidResponse, match=r"^not JSON: "):
        parse_structured("accuracy: 5", Critique)


def test_parse_structured_names_a_nested_bad_field() -> None:
    bad = {**CRITIQUE, "callouts": [{**CRITIQUE["callouts"][0], "kind": "wrong"}]}
    with pytest.raises(InvalidResponse, match=r"field 'callouts\[0\]\.kind'") as caught:
        parse_structured(json.dumps(bad), Critique)
    assert isinstance(caught.value, ProviderError)


def test_raw_control_characters_inside_json_strings_are_accepted() -> None:
    from arbiter.contract import Critique
    from arbiter.providers.parse import parse_structured

    text = (
        '{"accuracy": 2, "consistency": 5, "completeness": 5, "callouts": [{"dimension": '
        '"accuracy", "kind": "unsupported", "claim": "two\nlines", "quote": "x\ty", '
        '"rival": null}]}'
    )
    critique = parse_structured(text, Critique)
    assert critique.callouts[0].claim == "two\nlines"
