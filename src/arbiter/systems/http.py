"""The ``http`` system under test: one JSON-over-HTTP call per example.

The input (or a body template rendered from it) is sent as JSON; the JSON answer is
mapped into a ``Prediction`` by a ``ResponseMapping``. Calls go through the one outbound
HTTP client (:class:`arbiter.http.client.HttpClient`, on its aiohttp wire): its table
turns every failure and error status into a ``SystemUnderTestError`` subclass, answers
are read within ``ARBITER_MAX_RESPONSE_BYTES`` by its one JSON reader, and secrets in
the URL (a password, ``?api_key=``) never reach a message, a report or the store.
Synapse-L4's ``/ingest`` is
``HttpSystem(url, mapping=ResponseMapping(label="status", confidence="anomaly_score"))``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import httpx

from arbiter.contract import Prediction
from arbiter.errors import InputError, InvalidSystemResponse, MissingField
from arbiter.http.client import DEFAULT_MAX_RESPONSE_BYTES, NO_BODY, HttpClient
from arbiter.http.redact import redact_url
from arbiter.http.wire_aiohttp import AiohttpWire
from arbiter.params import check_number
from arbiter.systems.base import ResponseMapping, check_headers, lookup_path
from arbiter.systems.registry import SystemKind, SystemOptions, require

__all__ = ["KIND", "HttpSystem", "render_template"]

_PLACEHOLDER = re.compile(r"\{\{\s*(input(?:\.[^{}\s]*)?)\s*\}\}")
_QUERY_METHODS = frozenset({"GET", "DELETE"})


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

    Enter it with ``async with`` to share one client (a keep-alive connection pool
    with no cap of its own: the runner's concurrency is the bound) across calls;
    called outside such a block, each call opens and closes its own, so nothing leaks
    and no pool outlives the event loop it was made on. The proxy named by
    ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` is used; redirects are not followed.

    Args:
        url: Address of the endpoint (http or https); a ``user:password@`` part is
            sent as basic auth.
        method: HTTP method; GET and DELETE send the input as query parameters.
        body_template: JSON-like template rendered by ``render_template``; None
            sends the example input itself.
        mapping: Where label, confidence and id live in the answer.
        headers: Extra request headers (e.g. an Authorization header).
        timeout: Seconds allowed for the whole call: connecting, sending the
            request and reading the answer.
        max_response_bytes: Larger answers are invalid responses (never read whole).

    Raises:
        InputError: The URL, a header or the timeout is invalid, or credentials are
            given both in the URL and in an Authorization header.
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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise InputError(f"invalid system URL {redact_url(str(url))!r}: {exc}") from None
        if target.scheme not in {"http", "https"} or not target.host:
            raise InputError(f"the system URL must be http(s)://host/...; got {redact_url(url)!r}")
        check_number(timeout, "timeout", "HttpSystem", minimum=0, open_min=True)
        check_number(
            max_response_bytes, "max_response_bytes", "HttpSystem", minimum=1, integer=True
        )
        given = dict(headers or {})
        check_headers(given, url_has_credentials=bool(target.username), owner="http system")
        self.url = url
        self.method = method.upper()
        self.body_template = body_template
        self.mapping = mapping if mapping is not None else ResponseMapping()
        has_accept = any(name.lower() == "accept" for name in given)
        self.headers = given if has_accept else {"Accept": "application/json", **given}
        self.timeout = float(timeout)
        self.max_response_bytes = max_response_bytes
        self._header_names = sorted(given)
        self._client: HttpClient | None = None
        self._shown_url = redact_url(url)
        self._where = f"{self.method} {self._shown_url}"
        self.call_timeout = self.timeout  # the client's limit bounds every call
        self.always_suspends = True

    async def __aenter__(self) -> HttpSystem:
        """Open the shared client used by every call until exit."""
        if self._client is None:
            self._client = self._new_client()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the shared client and its connections."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """Send one example input and map the JSON answer into a ``Prediction``.

        Raises:
            InputError: The body template names a field the input lacks, or a
                GET/DELETE input is not a JSON object.
            SystemUnreachable: The connection failed or broke off.
            SystemTimeout: No complete answer within ``timeout``.
            SystemHTTPError: The service answered with status >= 400.
            InvalidSystemResponse: The answer is not JSON of the expected shape.
            MissingField: A mapped field is absent from the answer.
        """
        body, params = self._request_parts(input)
        shared = self._client
        client = shared if shared is not None else self._new_client()
        try:
            answer = await client.request(
                self.method,
                self.url,
                where=self._where,
                json=body,
                params=params,
                timeout=self.timeout,
            )
        finally:
            if client is not shared:
                await client.aclose()
        try:
            return self.mapping.to_prediction(answer.document)
        except (MissingField, InvalidSystemResponse) as exc:
            raise type(exc)(f"{self._where}: {exc}") from None

    def validate_input(self, input: dict[str, Any]) -> None:
        """Check that ``input`` can be sent at all (its body renders), without sending it.

        Raises:
            InputError: The body template names a field the input lacks, or a GET/DELETE
                input is not a JSON object.
        """
        self._request_parts(input)

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for reports; header values and URL passwords left out.

        ``headers`` names the headers given, as given: the ones a resumed run needs again.
        """
        return {
            "kind": "http",
            "url": self._shown_url,
            "method": self.method,
            "mapping": self.mapping.model_dump(mode="json"),
            "headers": self._header_names,
            "timeout": self.timeout,
            "body_template": self.body_template,
        }

    def _new_client(self) -> HttpClient:
        # No retry of its own (the runner retries) and no cap (the runner bounds calls);
        # the aiohttp wire, for its throughput at high concurrency (see its module).
        return HttpClient(
            side="system",
            headers=self.headers,
            max_response_bytes=self.max_response_bytes,
            wire=AiohttpWire,
        )

    def _request_parts(self, input: dict[str, Any]) -> tuple[Any, list[tuple[str, str]] | None]:
        """The JSON body (``NO_BODY`` for GET and DELETE) and the query parameters."""
        body = input if self.body_template is None else render_template(self.body_template, input)
        if self.method not in _QUERY_METHODS:
            return body, None
        if not isinstance(body, dict):
            raise InputError(
                f"{self.method} sends the input as query parameters, which needs a JSON "
                f"object; got {type(body).__name__}"
            )
        return NO_BODY, _query_pairs(body)


def _query_pairs(body: dict[Any, Any]) -> list[tuple[str, str]]:
    """A list of scalars becomes one parameter per item; other nested values, compact JSON."""
    pairs: list[tuple[str, str]] = []
    for key, value in body.items():
        items = value if isinstance(value, list) and all(map(_is_scalar, value)) else [value]
        pairs.extend((str(key), _query_text(item)) for item in items)
    return pairs


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None)))


def _query_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _describe(options: SystemOptions) -> dict[str, Any]:
    mapping = ResponseMapping(
        label=options.label_path or "label",
        confidence=options.confidence_path or "confidence",
        id=options.id_path,
    )
    return {
        "kind": "http",
        "url": options.target,
        "method": options.method.upper(),
        "body_template": options.body_template,
        "mapping": mapping.model_dump(mode="json"),
        "headers": sorted(options.header_names),
        "timeout": options.timeout,
    }


def _build(description: Mapping[str, Any], headers: Mapping[str, str]) -> HttpSystem:
    require(description, "http", "url")
    return HttpSystem(
        str(description["url"]),
        method=str(description.get("method", "POST")),
        body_template=description.get("body_template"),
        mapping=ResponseMapping.model_validate(description.get("mapping") or {}),
        headers=headers,
        timeout=float(description.get("timeout", 10.0)),
    )


KIND = SystemKind(
    name="http",
    summary="a JSON-over-HTTP endpoint",
    target="the service URL",
    describe=_describe,
    build=_build,
    reads=frozenset(
        {"method", "body_template", "label_path", "confidence_path", "id_path", "header_names"}
    ),
)
"""The ``http`` kind: ``--target`` is the endpoint's URL."""
