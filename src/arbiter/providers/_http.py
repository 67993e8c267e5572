"""The one HTTP call every vendor provider makes, and how its failures map to our errors.

``post_json`` converts every httpx exception and HTTP error status into the
``ProviderError`` tree, with a one-line message naming provider, model and status and
carrying the vendor's own explanation (with the API key redacted, should it echo it).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

import httpx

from arbiter.contract import Usage
from arbiter.errors import (
    InvalidResponse,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from arbiter.retry_after import parse_retry_after

__all__ = ["Prices", "cut_off", "post_json", "require_key", "usage_with_cost"]

Prices = Mapping[str, tuple[float, float]]
"""USD per million input tokens and per million output tokens, by model name."""

_SNIPPET = 200
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")  # google.rpc.RetryInfo: "30s", "1.5s"


async def post_json(
    *,
    provider: str,
    model: str,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    time_limit: float,
    transport: httpx.AsyncBaseTransport | None = None,
    secret: str | None = None,
) -> dict[str, Any]:
    """POST a JSON body and return the JSON object the provider answered.

    Args:
        provider: Provider name, for messages.
        model: Model name, for messages.
        url: Full endpoint URL.
        headers: Request headers (authentication included).
        body: The JSON body.
        time_limit: Seconds the whole call may take.
        transport: An httpx transport to use instead of the network (tests).
        secret: The API key, redacted from any message that would echo it.

    Returns:
        The decoded JSON object of a 2xx answer.

    Raises:
        ProviderAuthError: HTTP 401 / 403 (or Gemini's 400 for an invalid key).
        RateLimited: HTTP 429, with ``retry_after`` from ``Retry-After`` when given.
        ProviderUnavailable: HTTP 5xx, or the connection failed.
        ProviderTimeout: No answer within ``time_limit``.
        InvalidResponse: Any other HTTP error, or a body that is not a JSON object.
    """
    where = f"{provider} {model}"
    try:
        async with (
            asyncio.timeout(time_limit),
            httpx.AsyncClient(timeout=time_limit, transport=transport) as client,
        ):
            response = await client.post(url, json=dict(body), headers=dict(headers))
    except (TimeoutError, httpx.TimeoutException):
        raise ProviderTimeout(f"{where}: no answer within {time_limit:g}s") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = _redact(_snippet(str(exc)) or type(exc).__name__, secret)
        raise ProviderUnavailable(f"{where}: unreachable at {_origin(url)}: {reason}") from None
    try:
        document = response.json()
    except ValueError:
        document = None
    if response.status_code >= 400:
        raise _status_error(where, response, document, secret)
    if not isinstance(document, dict):
        snippet = _redact(_snippet(response.text), secret)
        raise InvalidResponse(
            f"{where}: HTTP {response.status_code} with a body that is not a JSON object: "
            f"{snippet!r}"
        )
    return document


def cut_off(where: str, max_output_tokens: int) -> InvalidResponse:
    """The error for an answer that stopped at the output-token limit (truncated JSON)."""
    return InvalidResponse(
        f"{where}: the answer was cut off at max_output_tokens={max_output_tokens}"
    )


def require_key(api_key: str | None, *, provider: str, env: str) -> str:
    """The API key, or a ``ProviderAuthError`` telling which variable to set.

    Raises:
        ProviderAuthError: No key is configured.
    """
    if not api_key:
        raise ProviderAuthError(f"{provider}: no API key configured; set {env}")
    return api_key


def usage_with_cost(
    input_tokens: Any, output_tokens: Any, *, models: tuple[str, ...], prices: Prices | None
) -> Usage:
    """Token usage, priced with the first of ``models`` found in ``prices``.

    Args:
        input_tokens: Prompt tokens as the provider reported them (missing: 0).
        output_tokens: Completion tokens as the provider reported them (missing: 0).
        models: Names to look the price up under, most specific first.
        prices: USD per million input and output tokens, by model.

    Returns:
        The usage; ``cost_usd`` is None when no name is priced.
    """
    tokens_in = input_tokens if isinstance(input_tokens, int) else 0
    tokens_out = output_tokens if isinstance(output_tokens, int) else 0
    cost = None
    for name in models:
        if prices and name in prices:
            per_in, per_out = prices[name]
            cost = (tokens_in * per_in + tokens_out * per_out) / 1_000_000
            break
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost)


def _status_error(
    where: str, response: httpx.Response, document: Any, secret: str | None
) -> ProviderError:
    status = response.status_code
    message = _redact(_provider_message(response, document), secret)
    line = f"{where}: HTTP {status}: {message}"
    if status in (401, 403) or _is_invalid_key(document):
        return ProviderAuthError(line)
    if status == 429:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if retry_after is None:
            retry_after = _rpc_retry_delay(document)
        return RateLimited(line, retry_after=retry_after)
    if status >= 500:
        return ProviderUnavailable(line)
    return InvalidResponse(line)


def _provider_message(response: httpx.Response, document: Any) -> str:
    """The vendor's own explanation of an error status.

    OpenAI, Anthropic, Gemini and llama.cpp answer ``{"error": {"message": ...}}``,
    Ollama ``{"error": "..."}``, FastAPI-based servers ``{"detail": ...}``.
    """
    if isinstance(document, dict):
        for key in ("error", "detail", "message"):
            value = document.get(key)
            if isinstance(value, dict):
                value = value.get("message") or value.get("msg")
            if isinstance(value, list) and value and isinstance(value[0], dict):
                value = value[0].get("msg")
            if isinstance(value, str) and value.strip():
                return _snippet(value)
    return _snippet(response.text) or response.reason_phrase


def _error_details(document: Any) -> list[dict[str, Any]]:
    error = document.get("error") if isinstance(document, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _is_invalid_key(document: Any) -> bool:
    """Gemini refuses a bad key with HTTP 400 and reason ``API_KEY_INVALID``."""
    return any(d.get("reason") == "API_KEY_INVALID" for d in _error_details(document))


def _rpc_retry_delay(document: Any) -> float | None:
    """Gemini's 429 names the delay in a ``google.rpc.RetryInfo`` detail, not a header."""
    for detail in _error_details(document):
        match = _DURATION.match(str(detail.get("retryDelay", "")))
        if match:
            return float(match.group(1))
    return None


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "[redacted]") if secret else text


def _snippet(text: str) -> str:
    return " ".join(text.split())[:_SNIPPET]


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"
