"""The ``mcp`` system under test: one tool of an MCP server, over streamable HTTP.

Each example input becomes the tool's arguments (merged with fixed arguments, which
win); the tool's structured result, or else its first text block parsed as JSON, is
mapped into a ``Prediction`` by a ``ResponseMapping``. Every error of the ``mcp`` SDK
and its HTTP client is converted here into a ``SystemUnderTestError`` subclass.

Examples:
    Sentinel-L7's ``analyze-transaction``, pinned to one provider::

        system = McpToolSystem(
            "http://localhost:8000/mcp",
            "analyze-transaction",
            fixed_arguments={"driver": "gemini"},
        )
        async with system:
            prediction = await system({"amount": 950.0, "country": "NG"})
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, TextContent

from arbiter.contract import Prediction
from arbiter.errors import (
    ArbiterError,
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemHTTPError,
    SystemTimeout,
    SystemUnreachable,
    ToolError,
)
from arbiter.http.errors import service_message
from arbiter.http.redact import redact_url
from arbiter.params import check_number, invalid
from arbiter.systems.base import ResponseMapping, check_headers

__all__ = ["McpToolSystem"]

_SNIPPET = 200
_MAX_TOOL_PAGES = 100
_FAILED_POST_STATUS = 503  # stands in for a POST that never got an answer
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass
class _WireTrouble:
    """What went wrong on the HTTP wire beneath one call; the SDK does not say."""

    failure: httpx2.TransportError | None = None
    status: int | None = None
    detail: str = ""
    retry_after: float | None = None

    def note_failure(self, exc: httpx2.TransportError) -> None:
        self.failure = self.failure or exc

    def note_status(self, response: httpx2.Response, body: bytes) -> None:
        if self.status is None:
            self.status, self.detail = response.status_code, service_message(body)
            with suppress(ValueError):  # Retry-After as delta-seconds only
                self.retry_after = max(0.0, float(response.headers.get("Retry-After", "")))


# The SDK runs every POST in the sender's context, so each call sees its own record.
_WIRE: ContextVar[_WireTrouble | None] = ContextVar("arbiter_mcp_wire", default=None)


class McpToolSystem:
    """One tool of an MCP server (streamable HTTP) as a system under test.

    Enter it with ``async with`` to open one MCP session for every call until exit
    (enter and exit from the same task, as the runner does); called outside such a
    block, each call opens and closes its own session. Calls are safe to run
    concurrently on one session.

    Args:
        url: The server's MCP endpoint, e.g. ``http://localhost:8000/mcp``.
        tool: Name of the tool to call.
        fixed_arguments: Arguments added to every call; they override the input's
            (e.g. ``{"driver": "gemini"}`` to pick Sentinel-L7's provider).
        mapping: Where label, confidence and id live in the tool's result;
            defaults to ``risk_level`` and ``confidence``.
        headers: Extra HTTP headers (e.g. an Authorization header).
        timeout: Seconds allowed for connecting and for each MCP request.

    Raises:
        InputError: The URL, tool name or timeout is invalid.
    """

    def __init__(
        self,
        url: str,
        tool: str,
        *,
        fixed_arguments: Mapping[str, Any] | None = None,
        mapping: ResponseMapping | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL as exc:
            raise InputError(f"invalid MCP server URL {redact_url(url)!r}: {exc}") from None
        if parsed.scheme not in {"http", "https"} or not parsed.host:
            raise InputError(
                f"the MCP server URL must be http(s)://host/...; got {redact_url(url)!r}"
            )
        if not tool.strip():
            raise invalid("tool", "McpToolSystem", "a non-empty tool name", tool)
        check_number(timeout, "timeout", "McpToolSystem", minimum=0, open_min=True)
        check_headers(
            dict(headers or {}), url_has_credentials=bool(parsed.username), owner="mcp system"
        )
        self.url = url
        self.tool = tool
        self.fixed_arguments = dict(fixed_arguments or {})
        self.mapping = mapping or ResponseMapping(label="risk_level", confidence="confidence")
        self.headers = dict(headers or {})
        self.timeout = float(timeout)
        self._shown_url = redact_url(url)
        self._where = f"MCP tool {tool!r} at {self._shown_url}"
        self._stack: AsyncExitStack | None = None
        self._client: Client | None = None

    async def __aenter__(self) -> McpToolSystem:
        """Open the session, initialize it and check that the tool exists.

        Raises:
            InputError: The server has no tool of that name (the message lists its tools).
            SystemUnderTestError: The server cannot be reached or answers wrongly.
        """
        if self._client is not None:
            return self
        stack = AsyncExitStack()
        trouble = _WireTrouble()
        token = _WIRE.set(trouble)
        try:
            client = await self._open(stack)
            tools = await _tool_names(client)
        except BaseException as exc:
            await _close_quietly(stack)
            if isinstance(exc, Exception):
                raise self._convert(exc, trouble) from None
            raise
        finally:
            _WIRE.reset(token)
        if self.tool not in tools:
            await _close_quietly(stack)
            available = ", ".join(sorted(tools)) or "none"
            raise InputError(f"{self._where}: no such tool; the server offers: {available}")
        self._stack, self._client = stack, client
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the session; never raises."""
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await _close_quietly(stack)

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """Call the tool with one example input and map its result.

        Raises:
            SystemUnreachable: The server cannot be reached.
            SystemTimeout: No answer within ``timeout``.
            SystemHTTPError: The server answered with an HTTP error status.
            ToolError: The tool reported an error (its message is kept).
            InvalidSystemResponse: A protocol error, or a result that is not JSON.
            MissingField: A mapped field is absent from the result.
        """
        arguments = {**input, **self.fixed_arguments}
        trouble = _WireTrouble()
        token = _WIRE.set(trouble)
        try:
            if self._client is not None:
                result = await self._client.call_tool(self.tool, arguments, self.timeout)
            else:
                async with AsyncExitStack() as stack:
                    client = await self._open(stack)
                    result = await client.call_tool(self.tool, arguments, self.timeout)
        except Exception as exc:
            raise self._convert(exc, trouble) from None
        finally:
            _WIRE.reset(token)
        return self._to_prediction(result)

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for reports and audit records.

        Header values are left out because they may hold secrets; a password in
        the URL is masked.
        """
        return {
            "kind": "mcp",
            "url": self._shown_url,
            "tool": self.tool,
            "fixed_arguments": self.fixed_arguments,
            "mapping": self.mapping.model_dump(mode="json"),
            "headers": sorted(self.headers),
            "timeout": self.timeout,
        }

    async def _open(self, stack: AsyncExitStack) -> Client:
        # A finite read timeout keeps closing (the session DELETE) from hanging; it
        # exceeds the per-request timeout so the SDK's own clock decides first.
        http = httpx2.AsyncClient(
            headers=self.headers,
            timeout=httpx2.Timeout(self.timeout, read=self.timeout + 5.0),
            transport=_GuardedTransport(httpx2.AsyncHTTPTransport()),
        )
        await stack.enter_async_context(http)
        transport = streamable_http_client(self.url, http_client=http)
        client = Client(transport, read_timeout_seconds=self.timeout, cache=None)
        return await stack.enter_async_context(client)

    def _to_prediction(self, result: CallToolResult) -> Prediction:
        if result.is_error:
            message = " ".join(_texts(result)) or "no message"
            raise ToolError(f"{self._where} reported an error: {message[: _SNIPPET * 2]}")
        document = result.structured_content
        if document is None:
            texts = _texts(result)
            if not texts:
                raise InvalidSystemResponse(f"{self._where} answered with neither JSON nor text")
            try:
                document = json.loads(texts[0])
            except ValueError:
                raise InvalidSystemResponse(
                    f"{self._where} answered with text that is not JSON: {texts[0][:_SNIPPET]!r}"
                ) from None
        try:
            return self.mapping.to_prediction(document)
        except (MissingField, InvalidSystemResponse) as exc:
            raise type(exc)(f"{self._where}: {exc}") from None

    def _convert(self, exc: Exception, trouble: _WireTrouble) -> ArbiterError:
        error = _innermost(exc)
        where = self._where
        if isinstance(error, ArbiterError):
            return error
        timed_out = isinstance(error, TimeoutError | httpx2.TimeoutException) or (
            isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT
        )
        if timed_out or isinstance(trouble.failure, httpx2.TimeoutException):
            return SystemTimeout(f"{where} gave no answer within {self.timeout:g}s")
        failure = trouble.failure or error
        if isinstance(failure, httpx2.TransportError | OSError):
            return SystemUnreachable(f"{where} is unreachable: {_reason(failure)}")
        if trouble.status is not None:
            return SystemHTTPError(
                trouble.status,
                f"{where} answered HTTP {trouble.status}: {trouble.detail or _reason(error)}",
                retry_after=trouble.retry_after,
            )
        if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
            return SystemUnreachable(f"{where} closed the connection: {_reason(error)}")
        if isinstance(error, MCPError):
            return InvalidSystemResponse(
                f"{where} answered MCP error {error.code}: {_reason(error)}"
            )
        return InvalidSystemResponse(f"{where} failed: {type(error).__name__}: {_reason(error)}")


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """Turns a POST that fails on the wire into an error answer, noting the cause.

    The SDK sends each POST from a task of the session's task group, where an HTTP
    client error would tear the whole session down and cancel the task that opened
    it. Answered with an error status instead, the SDK fails only the one request,
    and the call that sent it learns the real cause from its ``_WireTrouble``.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # The SDK already survives failures of its GET stream and session DELETE.
        if request.method != "POST":
            return await self._inner.handle_async_request(request)
        trouble = _WIRE.get()
        try:
            response = await self._inner.handle_async_request(request)
            if response.status_code >= 400:
                # Read the (small) error body here: the SDK drops it unless it is JSON-RPC.
                body = await response.aread()
        except httpx2.TransportError as exc:
            if trouble is not None:
                trouble.note_failure(exc)
            return httpx2.Response(_FAILED_POST_STATUS, request=request)
        if response.status_code < 400:
            if isinstance(response.stream, httpx2.AsyncByteStream):
                response.stream = _GuardedStream(response.stream, trouble)
            return response
        if trouble is not None:
            trouble.note_status(response, body)
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _BODY_HEADERS]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedStream(httpx2.AsyncByteStream):
    """A response body that ends early, instead of raising, when the wire fails."""

    def __init__(self, inner: httpx2.AsyncByteStream, trouble: _WireTrouble | None) -> None:
        self._inner = inner
        self._trouble = trouble

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.TransportError as exc:
            if self._trouble is not None:
                self._trouble.note_failure(exc)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _tool_names(client: Client) -> set[str]:
    names: set[str] = set()
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        names.update(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return names


async def _close_quietly(stack: AsyncExitStack) -> None:
    try:
        await stack.aclose()
    except Exception:  # closing is best effort: the session is gone either way
        return


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of (possibly nested) exception groups that is not a cancellation."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_innermost(sub) for sub in exc.exceptions]
        errors = [leaf for leaf in leaves if isinstance(leaf, Exception)]
        return (errors or leaves)[0]
    return exc


def _texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def _reason(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())[:_SNIPPET]
