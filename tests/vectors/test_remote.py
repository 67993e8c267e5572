"""Ollama and OpenAI-compatible embedders and the Upstash store, over an injected transport."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from arbiter.errors import (
    InputError,
    InvalidResponse,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from arbiter.vectors.base import Embedder, VectorItem, VectorStore
from arbiter.vectors.embedders import OllamaEmbedder, OpenAIEmbedder
from arbiter.vectors.stores import UpstashVectorStore

OPENAI_KEY = "sk-test-embed-0123456789"
UPSTASH_TOKEN = "upstash-token-0123456789"
UPSTASH_URL = "https://example-index.upstash.io"


@dataclass
class Recorder:
    """A transport that records every request and answers with ``respond``."""

    respond: Callable[[httpx.Request], httpx.Response]
    requests: list[httpx.Request] = field(default_factory=list)

    @property
    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return self.respond(request)

        return httpx.MockTransport(handle)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def answering(status: int, body: Any = None, **headers: str) -> Recorder:
    if isinstance(body, str):
        return Recorder(lambda request: httpx.Response(status, text=body, headers=headers))
    return Recorder(lambda request: httpx.Response(status, json=body, headers=headers))


def raising(exc: Exception) -> Recorder:
    def respond(request: httpx.Request) -> httpx.Response:
        raise exc

    return Recorder(respond)


def ollama(server: Recorder, **kwargs: Any) -> OllamaEmbedder:
    return OllamaEmbedder("http://ollama.test:11434/", transport=server.transport, **kwargs)


def openai(server: Recorder, api_key: str | None = OPENAI_KEY, **kwargs: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "https://api.openai.test/v1",
        api_key,
        "text-embedding-3-small",
        transport=server.transport,
        **kwargs,
    )


def upstash(server: Recorder) -> UpstashVectorStore:
    return UpstashVectorStore(UPSTASH_URL + "/", UPSTASH_TOKEN, transport=server.transport)


def openai_answer(*vectors: list[float]) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": "text-embedding-3-small"}


# --- Ollama -----------------------------------------------------------------------------


async def test_ollama_posts_model_and_prefixed_texts_to_api_embed() -> None:
    server = answering(200, {"model": "nomic-embed-text", "embeddings": [[0.1, 0.2], [0.3, 0.4]]})
    embedder = ollama(server)
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 0  # not known before the first answer
    vectors = await embedder.embed(["first text", "second"])
    assert vectors == [[0.1, 0.2], [0.3, 0.4]]
    [request] = server.requests
    assert (request.method, str(request.url)) == ("POST", "http://ollama.test:11434/api/embed")
    assert server.body() == {
        "model": "nomic-embed-text",
        "input": ["search_document: first text", "search_document: second"],
    }
    assert "authorization" not in request.headers
    assert (embedder.name, embedder.dimension) == ("ollama:nomic-embed-text", 2)


async def test_ollama_model_and_prefix_are_configurable() -> None:
    server = answering(200, {"embeddings": [[1.0]]})
    await ollama(server, model="mxbai-embed-large", prefix="").embed(["x"])
    assert server.body() == {"model": "mxbai-embed-large", "input": ["x"]}


async def test_no_texts_make_no_request() -> None:
    server = answering(500)
    assert await ollama(server).embed([]) == []
    assert await openai(server).embed([]) == []
    assert server.requests == []


async def test_a_changed_dimension_is_an_input_error() -> None:
    answers = iter([[[0.1] * 768], [[0.1] * 1024]])
    server = Recorder(lambda request: httpx.Response(200, json={"embeddings": next(answers)}))
    embedder = ollama(server)
    assert len((await embedder.embed(["a"]))[0]) == 768
    with pytest.raises(InputError, match="answered 1024-dim vectors, expected 768"):
        await embedder.embed(["b"])
    assert embedder.dimension == 768


async def test_a_declared_dimension_is_enforced_from_the_first_answer() -> None:
    embedder = ollama(answering(200, {"embeddings": [[0.1] * 384]}), dimension=768)
    assert embedder.dimension == 768
    with pytest.raises(InputError, match="answered 384-dim vectors, expected 768"):
        await embedder.embed(["a"])


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"embeddings": [[0.1, 0.2]]}, "asked for 2 embeddings, got 1"),
        ({"error": "no embeddings key"}, "asked for 2 embeddings, got NoneType"),
        ({"embeddings": [[0.1, "x"], [0.1, 0.2]]}, "not a list of numbers"),
        ({"embeddings": [[0.1, 0.2], [0.1]]}, r"lengths \[1, 2\]"),
        ({"embeddings": [[], []]}, r"lengths \[0\]"),
    ],
)
async def test_malformed_ollama_answers_are_invalid_responses(
    answer: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidResponse, match=message):
        await ollama(answering(200, answer)).embed(["a", "b"])


# --- OpenAI-compatible ------------------------------------------------------------------


async def test_openai_posts_model_and_input_with_a_bearer_key() -> None:
    server = answering(200, openai_answer([0.5, 0.5, 0.0], [0.0, 1.0, 0.0]))
    embedder = openai(server)
    assert await embedder.embed(["a", "b"]) == [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]
    [request] = server.requests
    assert str(request.url) == "https://api.openai.test/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert server.body() == {"model": "text-embedding-3-small", "input": ["a", "b"]}
    assert (embedder.name, embedder.dimension) == ("openai:text-embedding-3-small", 3)


async def test_openai_answers_are_put_back_in_index_order() -> None:
    answer = openai_answer([1.0, 0.0], [0.0, 1.0])
    answer["data"].reverse()
    assert await openai(answering(200, answer)).embed(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]]


async def test_openai_without_a_key_sends_no_authorization() -> None:
    server = answering(200, openai_answer([1.0]))
    await openai(server, api_key=None).embed(["a"])
    assert "authorization" not in server.requests[0].headers


async def test_openai_answer_without_data_is_an_invalid_response() -> None:
    with pytest.raises(InvalidResponse, match="no 'data' list"):
        await openai(answering(200, {"object": "list"})).embed(["a"])


# --- HTTP failures of both embedders ----------------------------------------------------

FAILURES = [
    (answering(401, {"error": {"message": f"Incorrect API key {OPENAI_KEY}"}}), ProviderAuthError),
    (answering(403, {"error": "forbidden"}), ProviderAuthError),
    (answering(429, {"error": "slow down"}, **{"Retry-After": "7"}), RateLimited),
    (answering(500, "boom"), ProviderUnavailable),
    (answering(503, {"error": "model is loading"}), ProviderUnavailable),
    (answering(404, {"error": "model 'nomic-embed-text' not found"}), InvalidResponse),
    (answering(200, "not json"), InvalidResponse),
    (raising(httpx.ConnectError("connection refused")), ProviderUnavailable),
    (raising(httpx.ReadTimeout("timed out")), ProviderTimeout),
]


@pytest.mark.parametrize("make", [ollama, openai], ids=["ollama", "openai"])
@pytest.mark.parametrize(("server", "error"), FAILURES)
async def test_http_failures_map_to_the_provider_error_tree(
    make: Callable[[Recorder], Embedder], server: Recorder, error: type[ProviderError]
) -> None:
    with pytest.raises(error) as caught:
        await make(server).embed(["a"])
    if make is openai:  # the only one given a key to leak
        assert OPENAI_KEY not in str(caught.value)
    if error is RateLimited:
        assert caught.value.retry_after == 7.0  # type: ignore[attr-defined]


# --- Upstash ----------------------------------------------------------------------------


async def test_upstash_query_posts_the_reference_shape_with_namespace_in_the_path() -> None:
    result = [
        {"id": "t-1", "score": 0.95, "metadata": {"label": "high"}},
        {"id": 7, "score": 0.5},
    ]
    server = answering(200, {"result": result})
    store = upstash(server)
    assert isinstance(store, VectorStore)
    matches = await store.query("transactions", [0.25, 0.5], top_k=3)
    [request] = server.requests
    assert (request.method, str(request.url)) == ("POST", f"{UPSTASH_URL}/query/transactions")
    assert request.headers["authorization"] == f"Bearer {UPSTASH_TOKEN}"
    assert request.headers["content-type"] == "application/json"
    assert server.body() == {"vector": [0.25, 0.5], "topK": 3, "includeMetadata": True}
    # Upstash's (1 + cos) / 2 is mapped back to the cosine.
    assert [(m.id, m.score, m.metadata) for m in matches] == [
        ("t-1", pytest.approx(0.9), {"label": "high"}),
        ("7", pytest.approx(0.0), {}),
    ]


async def test_upstash_default_namespace_has_no_path_segment_and_names_are_quoted() -> None:
    server = answering(200, {"result": []})
    store = upstash(server)
    assert await store.query("", [1.0]) == []
    await store.query("a b/c", [1.0])
    assert [str(r.url) for r in server.requests] == [
        f"{UPSTASH_URL}/query",
        f"{UPSTASH_URL}/query/a%20b%2Fc",
    ]


async def test_upstash_upsert_posts_a_list_of_items() -> None:
    server = answering(200, {"result": "Success"})
    items = [
        VectorItem(id="a", vector=[0.1, 0.2], metadata={"label": "low"}),
        VectorItem(id="b", vector=[0.3, 0.4]),
    ]
    await upstash(server).upsert("transactions", items)
    [request] = server.requests
    assert str(request.url) == f"{UPSTASH_URL}/upsert/transactions"
    assert request.headers["authorization"] == f"Bearer {UPSTASH_TOKEN}"
    assert server.body() == [
        {"id": "a", "vector": [0.1, 0.2], "metadata": {"label": "low"}},
        {"id": "b", "vector": [0.3, 0.4], "metadata": {}},
    ]
    await upstash(server).upsert("transactions", [])
    assert len(server.requests) == 1


async def test_upstash_dimension_mismatch_is_an_input_error_with_its_message() -> None:
    refusal = {"error": "Invalid vector dimension: 768, expected: 384", "status": 400}
    store = upstash(answering(400, refusal))
    with pytest.raises(InputError, match="Invalid vector dimension: 768, expected: 384"):
        await store.query("transactions", [0.1] * 768)
    with pytest.raises(InputError, match="Invalid vector dimension"):
        await store.upsert("transactions", [VectorItem(id="a", vector=[0.1] * 768)])


UPSTASH_FAILURES = [
    (
        answering(401, {"error": f"Unauthorized: Invalid auth token {UPSTASH_TOKEN}"}),
        ProviderAuthError,
    ),
    (answering(429, {"error": "rate limited"}, **{"Retry-After": "3"}), RateLimited),
    (answering(500, "internal"), ProviderUnavailable),
    (answering(502, {"error": "bad gateway"}), ProviderUnavailable),
    (answering(400, {"error": "Invalid request body"}), InvalidResponse),
    (answering(200, {"nothing": True}), InvalidResponse),
    (answering(200, {"result": [{"id": "a"}]}), InvalidResponse),
    (answering(200, {"result": "Success"}), InvalidResponse),
    (raising(httpx.ConnectError(f"refused {UPSTASH_TOKEN}")), ProviderUnavailable),
    (raising(httpx.ReadTimeout("timed out")), ProviderTimeout),
]


@pytest.mark.parametrize(("server", "error"), UPSTASH_FAILURES)
async def test_upstash_failures_map_to_the_provider_error_tree(
    server: Recorder, error: type[ProviderError]
) -> None:
    with pytest.raises(error) as caught:
        await upstash(server).query("transactions", [0.1, 0.2])
    assert UPSTASH_TOKEN not in str(caught.value)
    assert "upstash query 'transactions'" in str(caught.value)
    if error is RateLimited:
        assert caught.value.retry_after == 3.0  # type: ignore[attr-defined]


async def test_upstash_refuses_what_json_cannot_carry_without_a_request() -> None:
    server = answering(200, {"result": "Success"})
    with pytest.raises(InputError, match="finite"):
        await upstash(server).query("t", [float("nan"), 1.0])
    with pytest.raises(InputError, match="metadata JSON"):
        await upstash(server).upsert("t", [VectorItem(id="a", vector=[1.0], metadata={"x": {1}})])
    assert server.requests == []


async def test_upstash_top_k_must_be_positive() -> None:
    server = answering(200, {"result": []})
    with pytest.raises(ValueError, match="'top_k' parameter of query must be a positive int"):
        await upstash(server).query("t", [1.0], top_k=0)
    assert server.requests == []
