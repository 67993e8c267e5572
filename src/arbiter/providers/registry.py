"""Build a provider by name from ``Settings``; each vendor module is imported lazily."""

from __future__ import annotations

import importlib
from typing import cast

import httpx
from pydantic import SecretStr

from arbiter.config import Settings
from arbiter.errors import InputError
from arbiter.providers.base import Provider

__all__ = ["PROVIDER_NAMES", "make_provider"]

PROVIDER_NAMES = ("anthropic", "gemini", "llama_cpp", "mock", "ollama", "openai")
"""Names ``make_provider`` knows."""


def make_provider(
    name: str, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
) -> Provider:
    """The provider called ``name``, configured from ``settings``.

    A missing key is not an error here: the provider raises ``ProviderAuthError``
    naming the variable to set when it is first called.

    Args:
        name: One of ``PROVIDER_NAMES``.
        settings: Keys, base URLs, the OpenAI dialect and model prices.
        transport: An httpx transport for every call (tests); None uses the network.

    Returns:
        A ready provider.

    Raises:
        InputError: ``name`` is not a known provider.

    Examples:
        >>> make_provider("ollama", Settings(_env_file=None)).endpoint
        'http://localhost:11434/api/chat'
    """
    prices = settings.model_prices
    if name in ("openai", "llama_cpp", "ollama"):
        from arbiter.providers.openai import Dialect, OpenAIProvider

        if name == "openai":
            return OpenAIProvider(
                "openai",
                base_url=settings.openai_base_url,
                api_key=_secret(settings.openai_api_key),
                dialect=settings.openai_dialect,
                transport=transport,
                prices=prices,
            )
        dialect: Dialect
        if name == "ollama":
            base_url, dialect = settings.ollama_url, "ollama"
        else:
            base_url, dialect = settings.llama_cpp_url, "llama_cpp"
        return OpenAIProvider(
            name,
            base_url=base_url,
            api_key=None,
            dialect=dialect,
            transport=transport,
            prices=prices,
        )
    if name == "anthropic":
        from arbiter.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            api_key=_secret(settings.anthropic_api_key), transport=transport, prices=prices
        )
    if name == "gemini":
        from arbiter.providers.gemini import GeminiProvider

        return GeminiProvider(
            api_key=_secret(settings.gemini_api_key), transport=transport, prices=prices
        )
    if name == "mock":
        # Imported by name: the mock lives in its own module, loaded only when asked for.
        module = importlib.import_module("arbiter.providers.mock")
        return cast(Provider, module.MockProvider())
    raise InputError(
        f"The 'provider' parameter must be one of {', '.join(PROVIDER_NAMES)}. "
        f"Got {name!r} instead."
    )


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None
