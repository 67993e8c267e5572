"""The ``mcp`` system under test: one tool of an MCP server, over streamable HTTP.

Each example input becomes the tool's arguments (merged with fixed arguments, which
win); the tool's structured result, or else its first text block parsed as JSON, is
mapped into a ``Prediction`` by a ``ResponseMapping``. The SDK speaks HTTP through the
client of the one outbound HTTP layer (:func:`arbiter.http.sdk.sdk_client`): what fails
on the wire reads as every other call's failure (the table of :mod:`arbiter.http.errors`),
answers are bounded by ``ARBITER_MAX_RESPONSE_BYTES`` and a text result is read by the
one JSON reader. What the SDK itself raises (MCP errors, a tool's error) is converted
here into a ``SystemUnderTestError`` subclass.

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

from collections.abc import Mapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
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
    SystemTimeout,
    SystemUnreachable,
    ToolError,
)
from arbiter.http.bodies import parse_answer
from arbiter.http.client import DEFAULT_MAX_RESPONSE_BYTES
from arbiter.http.errors import transport_error
from arbiter.http.redact import redact_url
from arbiter.http.sdk import WireNotes, sdk_client
from arbiter.params import check_number, invalid
from arbiter.systems.base import ResponseMapping, check_headers
from arbiter.systems.registry import SystemKind, SystemOptions, require

__all__ = ["KIND", "McpToolSystem"]

_SNIPPET = 200
_MAX_TOOL_PAGES = 100

# The SDK runs every POST in the sender's context, so each call sees its own notes.
_WIRE: ContextVar[WireNotes | None] = ContextVar("arbiter_mcp_wire", default=None)


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
        max_response_bytes: Larger answers are invalid responses (never read whole).

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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
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
        check_number(
            max_response_bytes, "max_response_bytes", "McpToolSystem", minimum=1, integer=True
        )
        check_headers(
            dict(headers or {}), url_has_credentials=bool(parsed.username), owner="mcp system"
        )
        self.url = url
        self.tool = tool
        self.fixed_arguments = dict(fixed_arguments or {})
        self.mapping = mapping or ResponseMapping(label="risk_level", confidence="confidence")
        self.headers = dict(headers or {})
        self.timeout = float(timeout)
        self.max_response_bytes = max_response_bytes
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
        trouble = WireNotes()
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
        trouble = WireNotes()
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
        http = sdk_client(
            headers=self.headers,
            timeout=self.timeout,
            read_timeout=self.timeout + 5.0,
            max_response_bytes=self.max_response_bytes,
            notes=_WIRE.get,
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
            document = parse_answer(texts[0], side="system", where=self._where, status=None)
        try:
            return self.mapping.to_prediction(document)
        except (MissingField, InvalidSystemResponse) as exc:
            raise type(exc)(f"{self._where}: {exc}") from None

    def _convert(self, exc: Exception, trouble: WireNotes) -> ArbiterError:
        error = _innermost(exc)
        where = self._where
        if isinstance(error, ArbiterError):
            return error
        timed_out = isinstance(error, TimeoutError | httpx2.TimeoutException) or (
            isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT
        )
        if timed_out:
            return SystemTimeout(f"{where}: no answer within {self.timeout:g}s")
        on_the_wire = trouble.error("system", where, timeout=self.timeout) or transport_error(
            "system", where, error, timeout=self.timeout
        )
        if on_the_wire is not None:
            return on_the_wire
        if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
            return SystemUnreachable(f"{where}: the server closed the connection: {_reason(error)}")
        if isinstance(error, MCPError):
            return InvalidSystemResponse(
                f"{where} answered MCP error {error.code}: {_reason(error)}"
            )
        return InvalidSystemResponse(f"{where} failed: {type(error).__name__}: {_reason(error)}")


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


def _describe(options: SystemOptions) -> dict[str, Any]:
    if not options.tool:
        raise InputError("--tool is required for --system mcp: the name of the tool to call")
    mapping = ResponseMapping(
        label=options.label_path or "risk_level",
        confidence=options.confidence_path or "confidence",
        id=options.id_path,
    )
    return {
        "kind": "mcp",
        "url": options.target,
        "tool": options.tool,
        "fixed_arguments": dict(options.fixed_arguments),
        "mapping": mapping.model_dump(mode="json"),
        "headers": sorted(options.header_names),
        "timeout": options.timeout,
    }


def _build(description: Mapping[str, Any], headers: Mapping[str, str]) -> McpToolSystem:
    require(description, "mcp", "url", "tool")
    return McpToolSystem(
        str(description["url"]),
        str(description["tool"]),
        fixed_arguments=description.get("fixed_arguments") or {},
        mapping=ResponseMapping.model_validate(description.get("mapping") or {}),
        headers=headers,
        timeout=float(description.get("timeout", 30.0)),
    )


KIND = SystemKind(
    name="mcp",
    summary="one tool of an MCP server (streamable HTTP)",
    target="the service URL",
    describe=_describe,
    build=_build,
    reads=frozenset(
        {"tool", "fixed_arguments", "label_path", "confidence_path", "id_path", "header_names"}
    ),
)
"""The ``mcp`` kind: ``--target`` is the server's MCP URL, ``--tool`` the tool to call."""
