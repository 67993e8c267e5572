"""The ``http`` system under test: one JSON-over-HTTP call per example.

The input (or a body template rendered from it) is sent as JSON; the JSON answer is
mapped into a ``Prediction`` by a ``ResponseMapping``. Every httpx error is converted
here into a ``SystemUnderTestError`` subclass. Synapse-L4's ``/ingest`` is
``HttpSystem(url, mapping=ResponseMapping(label="status", confidence="anomaly_score"))``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from arbiter.contract import Prediction
from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemHTTPError,
    SystemTimeout,
    SystemUnreachable,
)
from arbiter.systems.base import ResponseMapping, lookup_path

__all__ = ["HttpSystem", "parse_retry_after", "render_template"]

_PLACEHOLDER = re.compile(r"\{\{\s*(input(?:\.[^{}\s]*)?)\s*\}\}")
_QUERY_METHODS = frozenset({"GET", "DELETE"})
_MESSAGE_KEYS = ("detail", "message", "error")
_SNIPPET = 200


def render_template(template: Any, input: dict[str, Any]) -> Any:
    """Fill ``{{input.a.b}}`` placeholders of a JSON-like template from an input.

    A string that is exactly one placeholder becomes the raw value at that dotted
    path (its type kept); placeholders inside longer strings are interpolated as
    text (strings as is, anything else as compact JSON). ``{{input}}`` is the whole
    input. Dicts and lists are rendered recursively; other values are returned as is.

    Args:
        template: A dict, list, string or scalar; never modified.
        input: The example input the placeholders refer to.

    Returns:
        The template with every placeholder filled.

    Raises:
        InputError: A placeholder names a field the input does not have.

    Examples:
        >>> render_template({"n": "{{input.n}}", "id": "id-{{input.n}}"}, {"n": 7})
        {'n': 7, 'id': 'id-7'}
    """
    if isinstance(template, dict):
        return {key: render_template(value, input) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(item, input) for item in template]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole is not None:
        return _resolve(whole, input)
    return _PLACEHOLDER.sub(lambda match: _as_text(_resolve(match, input)), template)


def _resolve(match: re.Match[str], input: dict[str, Any]) -> Any:
    expression = match.group(1)
    if expression == "input":
        return input
    try:
        return lookup_path(input, expression.removeprefix("input."))
    except MissingField:
        raise InputError(
            f"body template placeholder {match.group(0)} names a field the input lacks"
        ) from None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


class HttpSystem:
    """A JSON HTTP service as a system under test.

    Enter it with ``async with`` to share one connection pool across calls; called
    outside such a block, each call opens and closes its own client, so nothing
    leaks and no client outlives the event loop it was made on.

    Args:
        url: Address of the endpoint (http or https).
        method: HTTP method; GET and DELETE send the input as query parameters.
        body_template: JSON-like template rendered by ``render_template``; None
            sends the example input itself.
        mapping: Where label, confidence and id live in the answer.
        headers: Extra request headers (e.g. an Authorization header).
        timeout: Seconds allowed for each of connect, write, read and pool wait.
        transport: An httpx transport to use instead of the network (tests).

    Raises:
        InputError: The URL or timeout is invalid.
    """

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        body_template: dict[str, Any] | list[Any] | str | None = None,
        mapping: ResponseMapping | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise InputError(f"invalid system URL {url!r}: {exc}") from None
        if parsed.scheme not in {"http", "https"} or not parsed.host:
            raise InputError(f"the system URL must be http(s)://host/...; got {url!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise InputError(
                f"The 'timeout' parameter of HttpSystem must be a positive number. "
                f"Got {timeout!r} instead."
            )
        self.url = url
        self.method = method.upper()
        self.body_template = body_template
        self.mapping = mapping if mapping is not None else ResponseMapping()
        self.headers = httpx.Headers({"Accept": "application/json"})
        self.headers.update(dict(headers or {}))
        self.timeout = float(timeout)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._shown_url = (
            str(parsed.copy_with(username=parsed.username, password="***"))
            if parsed.password
            else url
        )

    async def __aenter__(self) -> HttpSystem:
        """Open the shared client used by every call until exit."""
        if self._client is None:
            self._client = self._new_client()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the shared client."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """Send one example input and map the JSON answer into a ``Prediction``.

        Raises:
            InputError: The body template names a field the input lacks, or a
                GET/DELETE input is not a JSON object.
            SystemUnreachable: The connection failed.
            SystemTimeout: No answer within ``timeout``.
            SystemHTTPError: The service answered with status >= 400.
            InvalidSystemResponse: The answer is not JSON of the expected shape.
            MissingField: A mapped field is absent from the answer.
        """
        request = self._request_options(input)
        where = f"{self.method} {self._shown_url}"
        try:
            if self._client is not None:
                response = await self._client.request(self.method, self.url, **request)
            else:
                async with self._new_client() as client:
                    response = await client.request(self.method, self.url, **request)
        except httpx.TimeoutException:
            raise SystemTimeout(f"{where} gave no answer within {self.timeout:g}s") from None
        except httpx.DecodingError as exc:
            raise InvalidSystemResponse(f"{where} sent an undecodable body: {exc}") from None
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
            reason = str(exc) or type(exc).__name__
            raise SystemUnreachable(f"{where} is unreachable: {reason}") from None
        if response.status_code >= 400:
            raise SystemHTTPError(
                response.status_code,
                f"{where} answered HTTP {response.status_code}: {_service_message(response)}",
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        try:
            document = response.json()
        except ValueError:
            raise InvalidSystemResponse(
                f"{where} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{_snippet(response)!r}"
            ) from None
        try:
            return self.mapping.to_prediction(document)
        except (MissingField, InvalidSystemResponse) as exc:
            raise type(exc)(f"{where}: {exc}") from None

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for reports; header values and URL passwords left out."""
        return {
            "kind": "http",
            "url": self._shown_url,
            "method": self.method,
            "mapping": self.mapping.model_dump(mode="json"),
            "headers": sorted(self.headers.keys()),
            "timeout": self.timeout,
            "body_template": self.body_template,
        }

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            headers=self.headers, timeout=self.timeout, transport=self._transport
        )

    def _request_options(self, input: dict[str, Any]) -> dict[str, Any]:
        body = input if self.body_template is None else render_template(self.body_template, input)
        if self.method not in _QUERY_METHODS:
            return {"json": body}
        if not isinstance(body, dict):
            raise InputError(
                f"{self.method} sends the input as query parameters, which needs a JSON "
                f"object; got {type(body).__name__}"
            )
        return {"params": {str(key): _query_value(value) for key, value in body.items()}}


def _query_value(value: Any) -> Any:
    scalar = (str, int, float, bool, type(None))
    if isinstance(value, scalar) or (
        isinstance(value, list) and all(isinstance(item, scalar) for item in value)
    ):
        return value
    return json.dumps(value, separators=(",", ":"))


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait according to a Retry-After header, never negative.

    Args:
        value: The header (delta-seconds or an HTTP-date), None when absent.
        now: The current time; defaults to the clock.

    Returns:
        The delay in seconds, or None when the header is absent or unparsable.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        pass
    else:  # an infinite or NaN delay would stall a retry loop forever
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _service_message(response: httpx.Response) -> str:
    try:
        document = response.json()
    except ValueError:
        return _snippet(response) or response.reason_phrase
    if isinstance(document, dict):
        for key in _MESSAGE_KEYS:
            found = _message_in(document.get(key))
            if found:
                return found[:_SNIPPET]
    return _snippet(response)


def _message_in(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _message_in(value.get("message") or value.get("msg"))
    if isinstance(value, list) and value:  # FastAPI validation errors: [{"msg": ...}, ...]
        return _message_in(value[0])
    return None


def _snippet(response: httpx.Response) -> str:
    return " ".join(response.text.split())[:_SNIPPET]  # .text decodes with errors="replace"
