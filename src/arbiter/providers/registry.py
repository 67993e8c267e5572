"""Providers by name: an explicit registry, built-ins and plugins alike.

A registry maps a name to a factory ``(settings, http) -> Provider``. The default one
(:meth:`ProviderRegistry.default`) holds the built-ins (``openai``, ``llama_cpp``,
``ollama``, ``anthropic``, ``gemini``, ``mock``) and every factory third parties publish
in the entry-point group ``arbiter.providers``; a program adds its own with
:meth:`ProviderRegistry.register_provider`. Nothing is registered at import time, and no
vendor module is imported until its provider is built.

Every provider built here calls through its own pooled :class:`~arbiter.http.client.HttpClient`
that retries what may pass on a second try (``ARBITER_RETRIES``, ``Retry-After``
honoured, under a retry budget) and keeps at most ``ARBITER_PROVIDER_CONCURRENCY`` calls
in flight (per name: ``ARBITER_PROVIDER_LIMITS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from arbiter.plugins import Registry

if TYPE_CHECKING:
    import httpx

    from arbiter.config import Settings
    from arbiter.http.client import HttpClient
    from arbiter.providers.base import Provider

__all__ = [
    "BUILTIN_FAMILIES",
    "BUILTIN_PROVIDERS",
    "ENTRY_POINT_GROUP",
    "CredentialCheck",
    "ProviderFactory",
    "ProviderRegistry",
    "make_provider",
]

ProviderFactory = Callable[["Settings", "HttpClient"], "Provider"]
"""Builds a provider from the settings and the HTTP client it must call through."""

ENTRY_POINT_GROUP = "arbiter.providers"
"""Entry-point group of third-party providers: ``name = "package.module:factory"``."""

BUILTIN_PROVIDERS = ("anthropic", "gemini", "llama_cpp", "mock", "ollama", "openai")
"""Names the default registry knows without any plugin."""

CredentialCheck = Callable[["Settings"], bool]
"""Whether the settings hold what a provider needs before it can be called."""

BUILTIN_FAMILIES: dict[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "llama_cpp": "llama_cpp",
    "ollama": "ollama",
    "mock": "mock",
}
"""The vendor behind each built-in provider (two models of one vendor share blind
spots); a provider registered without a family is its own."""


def _secret(value: object) -> str | None:
    getter = getattr(value, "get_secret_value", None)
    return str(getter()) if callable(getter) else None


def _openai_compatible(name: str) -> ProviderFactory:
    """The factory of an OpenAI-compatible server: OpenAI itself, llama.cpp or Ollama."""

    def build(settings: Settings, http: HttpClient) -> Provider:
        from arbiter.providers.openai import OpenAIProvider

        endpoints = {
            "openai": (settings.openai_base_url, settings.openai_dialect),
            "llama_cpp": (settings.llama_cpp_url, "llama_cpp"),
            "ollama": (settings.ollama_url, "ollama"),
        }
        base_url, dialect = endpoints[name]
        return OpenAIProvider(
            name,
            base_url=base_url,
            api_key=_secret(settings.openai_api_key) if name == "openai" else None,
            dialect=dialect,
            http=http,
            prices=settings.model_prices,
        )

    return build


def _anthropic(settings: Settings, http: HttpClient) -> Provider:
    from arbiter.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        api_key=_secret(settings.anthropic_api_key), http=http, prices=settings.model_prices
    )


def _gemini(settings: Settings, http: HttpClient) -> Provider:
    from arbiter.providers.gemini import GeminiProvider

    return GeminiProvider(
        api_key=_secret(settings.gemini_api_key), http=http, prices=settings.model_prices
    )


def _mock(settings: Settings, http: HttpClient) -> Provider:
    from arbiter.providers.mock import MockProvider

    return MockProvider()


def _openai_credentials(settings: Settings) -> bool:
    # Only OpenAI's own server wants a key: the same provider pointed at vLLM needs none.
    own_server = "api.openai.com" in settings.openai_base_url
    return settings.openai_api_key is not None or not own_server


def _anthropic_credentials(settings: Settings) -> bool:
    return settings.anthropic_api_key is not None


def _gemini_credentials(settings: Settings) -> bool:
    return settings.gemini_api_key is not None


_BUILTIN_CREDENTIALS: dict[str, CredentialCheck] = {
    "openai": _openai_credentials,
    "anthropic": _anthropic_credentials,
    "gemini": _gemini_credentials,
}
"""Providers that need a key; the others (local servers, the mock) always can be called."""

_BUILTINS: dict[str, ProviderFactory] = {
    "anthropic": _anthropic,
    "gemini": _gemini,
    "llama_cpp": _openai_compatible("llama_cpp"),
    "mock": _mock,
    "ollama": _openai_compatible("ollama"),
    "openai": _openai_compatible("openai"),
}


class ProviderRegistry(Registry[ProviderFactory]):
    """Provider factories by name; an explicit object, passed to whoever builds providers.

    Examples:
        >>> registry = ProviderRegistry.default()
        >>> registry.register_provider("echo", lambda settings, http: EchoProvider())
        >>> "echo" in registry.names()
        True
    """

    what = "provider"
    group = ENTRY_POINT_GROUP

    def __init__(self) -> None:
        super().__init__()
        self._families: dict[str, str] = {}
        self._credentials: dict[str, CredentialCheck] = {}

    @classmethod
    def default(cls, *, plugins: bool = True) -> ProviderRegistry:
        """The built-in providers, plus those of the ``arbiter.providers`` entry points.

        Args:
            plugins: Also load the entry points (a plugin never replaces a built-in).
        """
        registry = cls()
        for name, factory in _BUILTINS.items():
            registry.register_provider(
                name,
                factory,
                family=BUILTIN_FAMILIES[name],
                credentials=_BUILTIN_CREDENTIALS.get(name),
            )
        if plugins:
            registry.load_plugins()
        return registry

    def register_provider(
        self,
        name: str,
        factory: ProviderFactory,
        *,
        replace: bool = False,
        family: str | None = None,
        credentials: CredentialCheck | None = None,
    ) -> None:
        """Make ``name`` buildable by ``factory(settings, http)``.

        Args:
            name: The provider's name.
            factory: Builds it.
            replace: Override a provider of that name.
            family: Its vendor (judge panels seat one model per family); None: its name.
            credentials: Whether the settings let it be called; None: always.

        Raises:
            ValueError: ``name`` is taken (pass ``replace=True`` to override) or empty.
        """
        self.add(name, factory, replace=replace)
        self._families[name] = family or BUILTIN_FAMILIES.get(name, name)
        if credentials is not None:
            self._credentials[name] = credentials
        else:
            self._credentials.pop(name, None)

    def family(self, name: str) -> str:
        """The vendor behind provider ``name`` (its own name when none was registered).

        Examples:
            >>> ProviderRegistry.default(plugins=False).family("gemini")
            'google'
        """
        return self._families.get(name, BUILTIN_FAMILIES.get(name, name))

    def has_credentials(self, name: str, settings: Settings) -> bool:
        """Whether ``settings`` hold what provider ``name`` needs to be called.

        Providers that need no key (local servers, the mock, plugins registered without
        a check) always have them; ``openai`` pointed at another server needs none either.
        """
        check = self._credentials.get(name)
        return True if check is None else check(settings)

    def build(
        self,
        name: str,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        http: HttpClient | None = None,
    ) -> Provider:
        """The provider ``name``, configured from ``settings``.

        A missing key is not an error here: the provider raises ``ProviderAuthError``
        naming the variable to set when it is first called.

        Args:
            name: A registered name.
            settings: Keys, URLs, retries, concurrency limits, model prices.
            transport: An httpx transport for every call (tests); None uses the network.
            http: The client to call through; default: one built from ``settings``.

        Raises:
            InputError: ``name`` is not registered.
        """
        factory = self.factory(name)
        return factory(settings, http or provider_client(name, settings, transport=transport))


def provider_client(
    name: str, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
) -> HttpClient:
    """The HTTP client of provider ``name``: retries and concurrency from ``settings``."""
    from arbiter.http.client import HttpClient
    from arbiter.http.retry import RetryBudget, RetryPolicy

    return HttpClient(
        side="provider",
        transport=transport,
        retry=RetryPolicy(retries=settings.retries),
        budget=RetryBudget(),
        concurrency=settings.provider_limits.get(name, settings.provider_concurrency),
        max_response_bytes=settings.max_response_bytes,
    )


def make_provider(
    name: str, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
) -> Provider:
    """The provider ``name`` from the default registry (see :meth:`ProviderRegistry.build`).

    Raises:
        InputError: ``name`` is not a known provider.

    Examples:
        >>> from arbiter.config import Settings
        >>> make_provider("ollama", Settings(_env_file=None)).endpoint
        'http://localhost:11434/api/chat'
    """
    return ProviderRegistry.default().build(name, settings, transport=transport)
