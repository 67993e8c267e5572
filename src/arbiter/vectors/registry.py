"""Embedders and vector stores by kind: explicit registries, built-ins and plugins alike.

A factory takes the options of one configuration entry (``{"kind": "upstash",
"timeout": 5}`` as a mapping), the settings and the HTTP client to call through, and
returns the embedder or store. The defaults hold the built-ins (embedders ``local``,
``ollama``, ``openai``; stores ``embedded``, ``upstash``) and what third parties publish
in the entry-point groups ``arbiter.embedders`` and ``arbiter.vector_stores``. Nothing is
registered at import time, and no backend module is imported until it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from arbiter.errors import InputError
from arbiter.plugins import Registry

if TYPE_CHECKING:
    from arbiter.config import Settings
    from arbiter.http.client import HttpClient
    from arbiter.vectors.base import Embedder, VectorStore

__all__ = [
    "EMBEDDER_GROUP",
    "VECTOR_STORE_GROUP",
    "EmbedderFactory",
    "EmbedderRegistry",
    "VectorStoreFactory",
    "VectorStoreRegistry",
]

EMBEDDER_GROUP = "arbiter.embedders"
"""Entry-point group of third-party embedders."""
VECTOR_STORE_GROUP = "arbiter.vector_stores"
"""Entry-point group of third-party vector stores."""

EmbedderFactory = Callable[[Mapping[str, Any], "Settings", "HttpClient"], "Embedder"]
"""Builds an embedder from its configuration entry, the settings and its HTTP client."""
VectorStoreFactory = Callable[[Mapping[str, Any], "Settings", "HttpClient"], "VectorStore"]
"""Builds a vector store from its configuration entry, the settings and its HTTP client."""


def _local(options: Mapping[str, Any], settings: Settings, http: HttpClient) -> Embedder:
    from arbiter.vectors.embedders import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder()


def _ollama(options: Mapping[str, Any], settings: Settings, http: HttpClient) -> Embedder:
    from arbiter.vectors.embedders import OllamaEmbedder

    prefix = options.get("prefix")
    return OllamaEmbedder(
        options.get("base_url") or settings.ollama_url,
        options.get("model") or settings.ollama_embedding_model,
        settings.ollama_embedding_prefix if prefix is None else prefix,
        dimension=options.get("dimension"),
        timeout=options.get("timeout", 30.0),
        http=http,
    )


def _openai(options: Mapping[str, Any], settings: Settings, http: HttpClient) -> Embedder:
    from arbiter.vectors.embedders import OpenAIEmbedder

    model = options.get("model")
    if not model:
        raise InputError("embedder: the openai embedder needs a 'model'")
    key = settings.openai_api_key
    return OpenAIEmbedder(
        options.get("base_url") or settings.openai_base_url,
        key.get_secret_value() if key is not None else None,
        model,
        dimension=options.get("dimension"),
        timeout=options.get("timeout", 30.0),
        http=http,
    )


def _embedded(options: Mapping[str, Any], settings: Settings, http: HttpClient) -> VectorStore:
    from arbiter.vectors.stores import EmbeddedVectorStore

    path = options.get("path")
    return EmbeddedVectorStore(Path(path) if path else None)


def _upstash(options: Mapping[str, Any], settings: Settings, http: HttpClient) -> VectorStore:
    from arbiter.vectors.upstash import UpstashVectorStore

    token = settings.upstash_vector_rest_token
    if not settings.upstash_vector_rest_url or token is None:
        raise InputError(
            "the upstash store needs UPSTASH_VECTOR_REST_URL and UPSTASH_VECTOR_REST_TOKEN"
        )
    return UpstashVectorStore(
        settings.upstash_vector_rest_url,
        token.get_secret_value(),
        timeout=options.get("timeout", 10.0),
        http=http,
    )


class EmbedderRegistry(Registry[EmbedderFactory]):
    """Embedder factories by kind (``local``, ``ollama``, ``openai`` and plugins)."""

    what = "embedder"
    group = EMBEDDER_GROUP

    @classmethod
    def default(cls, *, plugins: bool = True) -> EmbedderRegistry:
        """The built-in embedders, plus those of the ``arbiter.embedders`` entry points."""
        registry = cls()
        for kind, factory in (("local", _local), ("ollama", _ollama), ("openai", _openai)):
            registry.register_embedder(kind, factory)
        if plugins:
            registry.load_plugins()
        return registry

    def register_embedder(
        self, kind: str, factory: EmbedderFactory, *, replace: bool = False
    ) -> None:
        """Make ``kind`` buildable by ``factory(options, settings, http)``.

        Raises:
            ValueError: ``kind`` is taken (pass ``replace=True``) or empty.
        """
        self.add(kind, factory, replace=replace)

    def build(self, options: Mapping[str, Any], settings: Settings, http: HttpClient) -> Embedder:
        """The embedder ``options["kind"]`` names (see :func:`build_backend`)."""
        return build_backend(self, options, settings, http)


class VectorStoreRegistry(Registry[VectorStoreFactory]):
    """Vector-store factories by kind (``embedded``, ``upstash`` and plugins)."""

    what = "vector store"
    group = VECTOR_STORE_GROUP

    @classmethod
    def default(cls, *, plugins: bool = True) -> VectorStoreRegistry:
        """The built-in stores, plus those of the ``arbiter.vector_stores`` entry points."""
        registry = cls()
        for kind, factory in (("embedded", _embedded), ("upstash", _upstash)):
            registry.register_vector_store(kind, factory)
        if plugins:
            registry.load_plugins()
        return registry

    def register_vector_store(
        self, kind: str, factory: VectorStoreFactory, *, replace: bool = False
    ) -> None:
        """Make ``kind`` buildable by ``factory(options, settings, http)``.

        Raises:
            ValueError: ``kind`` is taken (pass ``replace=True``) or empty.
        """
        self.add(kind, factory, replace=replace)

    def build(
        self, options: Mapping[str, Any], settings: Settings, http: HttpClient
    ) -> VectorStore:
        """The vector store ``options["kind"]`` names (see :func:`build_backend`)."""
        return build_backend(self, options, settings, http)


T = TypeVar("T")


def build_backend(
    registry: Registry[Callable[[Mapping[str, Any], Settings, HttpClient], T]],
    options: Mapping[str, Any],
    settings: Settings,
    http: HttpClient,
) -> T:
    """The backend ``options["kind"]`` names, built from its options.

    Raises:
        InputError: The kind is missing or not registered, or an option is invalid.
    """
    return registry.factory(options.get("kind"))(options, settings, http)
