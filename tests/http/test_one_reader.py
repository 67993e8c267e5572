"""Every outbound client reads answers the same way: one size bound, one JSON reader.

The same answer goes to the pooled client (as a provider and as a system), the HTTP
agent executor and the ``http`` system under test (a real uvicorn server: its wire is
aiohttp); each must refuse, or accept, it alike, with the error class of its side.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from arbiter.contract import Example
from arbiter.errors import InvalidResponse, InvalidSystemResponse, SystemHTTPError
from arbiter.http.client import HttpClient
from arbiter.systems.http import HttpSystem
from arbiter.trajectories.agent_http_config import AgentHttpConfig
from arbiter.trajectories.executors_http import HttpStepsExecutor
from tests.integration.serving import serve_asgi

GOOD = b'{"label": "ok", "confidence": 0.5, "answer": "fine"}'
# Each is refused by the project's one JSON reader, as it is in a dataset file; the
# libraries' own json.loads took all of them.
UNUSABLE = {
    "nan": (b'{"label": "ok", "x": NaN}', "NaN is not valid JSON"),
    "overflow": (b'{"label": "ok", "x": 1e999}', "too large for a float"),
    "surrogate": (b'{"label": "ok", "x": "\\ud800"}', "lone UTF-16 surrogate"),
    "too-deep": (b'{"label": "ok", "x": ' + b"[" * 200 + b"]" * 200 + b"}", "nested deeper"),
}


class Answering:
    """An ASGI app answering every request with ``body`` (status 200)."""

    def __init__(self) -> None:
        self.body = GOOD
        self.status = 200

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Answering]]:
    app = Answering()
    with serve_asgi(app) as url:
        yield url, app


Call = Callable[[str, Answering], Awaitable[Any]]


async def as_provider(url: str, app: Answering) -> Any:
    client = HttpClient(transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]
    return (await client.post_json(f"{url}/x", {}, where="p m", timeout=5)).document


async def as_system_client(url: str, app: Answering) -> Any:
    client = HttpClient(side="system", transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]
    return (await client.request("GET", f"{url}/x", where="GET x", timeout=5)).document


async def as_agent(url: str, app: Answering) -> Any:
    config = AgentHttpConfig.model_validate(
        {
            "base_url": url,
            "submit": {"url": "{base_url}/ask", "body": {"q": "{query}"}},
            "result": {"final_answer": "answer"},
        }
    )
    executor = HttpStepsExecutor(config, transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]
    output = await executor.run(Example(id="c", input={"query": "q"}))
    assert output.trajectory is not None
    return output.trajectory.final_answer


async def as_http_system(url: str, app: Answering) -> Any:
    return (await HttpSystem(f"{url}/ingest", timeout=5)({"q": 1})).label


CLIENTS: dict[str, tuple[Call, type[Exception], Any]] = {
    "provider": (as_provider, InvalidResponse, json.loads(GOOD)),
    "system-client": (as_system_client, InvalidSystemResponse, json.loads(GOOD)),
    "agent-executor": (as_agent, InvalidSystemResponse, "fine"),
    "http-system": (as_http_system, InvalidSystemResponse, "ok"),
}


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_good_answer_is_read_alike(client: str, served: tuple[str, Answering]) -> None:
    url, app = served
    app.body, app.status = GOOD, 200
    call, _, expected = CLIENTS[client]
    assert await call(url, app) == expected


@pytest.mark.parametrize("answer", UNUSABLE)
@pytest.mark.parametrize("client", CLIENTS)
async def test_json_that_cannot_mean_one_thing_is_refused_by_every_client(
    client: str, answer: str, served: tuple[str, Answering]
) -> None:
    url, app = served
    app.body, app.status = UNUSABLE[answer][0], 200
    call, error, _ = CLIENTS[client]
    with pytest.raises(error, match=UNUSABLE[answer][1]) as caught:
        await call(url, app)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("client", ["system-client", "agent-executor", "http-system"])
async def test_an_error_body_is_read_by_the_same_reader(
    client: str, served: tuple[str, Answering]
) -> None:
    url, app = served
    app.body, app.status = b'{"detail": "judge_rejected", "x": NaN}', 422
    call, _, _ = CLIENTS[client]
    # Not JSON to the one reader: the message is the body's text, not its "detail".
    shown = r"HTTP 422: \{\"detail\": \"judge_rejected\""
    with pytest.raises(SystemHTTPError, match=shown) as caught:
        await call(url, app)
    assert caught.value.status_code == 422


async def test_a_get_sends_its_parameters_and_no_body() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    client = HttpClient(
        side="system", transport=httpx.MockTransport(handle), headers={"Accept": "x/y"}
    )
    answer = await client.request(
        "GET", "http://h.test/q", where="GET q", params=[("a", "1"), ("a", "2")], timeout=5
    )
    assert answer.document == {"ok": True}
    assert seen[0].url.params.get_list("a") == ["1", "2"]
    assert seen[0].content == b""
    assert seen[0].headers["accept"] == "x/y"
    assert "content-type" not in seen[0].headers
