"""What the vendor providers share: their HTTP client, keys, usage and cost, cut-offs.

The HTTP itself (pooling, the error map, retries, redaction, bounded answers) is the one
outbound layer's, :mod:`arbiter.http`; this module holds only what is about LLM vendors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from arbiter.contract import Usage
from arbiter.errors import ArbiterError, InvalidResponse, ProviderAuthError, RateLimited

__all__ = [
    "Prices",
    "billed",
    "cut_off",
    "gemini_refine",
    "json_object",
    "require_key",
    "usage_with_cost",
]

Prices = Mapping[str, tuple[float, float]]
"""USD per million input tokens and per million output tokens, by model name."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")  # google.rpc.RetryInfo: "30s", "1.5s"


@contextmanager
def billed(usage: Usage) -> Iterator[None]:
    """Reading an answer that cost ``usage``: an unusable one (cut off at the token limit,
    no text) raises its ``InvalidResponse`` carrying that cost, for it was billed."""
    try:
        yield
    except InvalidResponse as exc:
        exc.usage = usage
        raise


def cut_off(where: str, max_output_tokens: int) -> InvalidResponse:
    """The error for an answer that stopped at the output-token limit (truncated JSON)."""
    return InvalidResponse(
        f"{where}: the answer was cut off at max_output_tokens={max_output_tokens}"
    )


def json_object(document: Any, where: str) -> dict[str, Any]:
    """The decoded answer when it is a JSON object; else an ``InvalidResponse``."""
    if not isinstance(document, dict):
        kind = type(document).__name__
        raise InvalidResponse(f"{where}: the answer is not a JSON object (got {kind})")
    return document


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


def _error_details(document: Any) -> list[dict[str, Any]]:
    error = document.get("error") if isinstance(document, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def gemini_refine(error: ArbiterError, status: int, document: Any) -> ArbiterError:
    """Gemini's own error signals: a refused key is a 400 with reason ``API_KEY_INVALID``;
    a 429 names its delay in a ``google.rpc.RetryInfo`` detail, not in a header."""
    details = _error_details(document)
    if any(d.get("reason") == "API_KEY_INVALID" for d in details):
        return ProviderAuthError(str(error))
    if isinstance(error, RateLimited) and error.retry_after is None:
        for detail in details:
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return RateLimited(str(error), retry_after=float(match.group(1)))
    return error
