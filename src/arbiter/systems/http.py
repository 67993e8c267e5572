"""The ``http`` system under test: one JSON-over-HTTP call per example.

The input (or a body template rendered from it) is sent as JSON; the JSON answer is
mapped into a ``Prediction`` by a ``ResponseMapping``. The client is aiohttp: about a
third of httpx's CPU cost per request, which bounds throughput at high concurrency.
Failures go through the one outbound HTTP layer (:mod:`arbiter.http`): its table turns
every aiohttp error and error status into a ``SystemUnderTestError`` subclass, answers
are read within ``ARBITER_MAX_RESPONSE_BYTES``, and secrets in the URL (a password,
``?api_key=``) never reach a message, a report or the store.
Synapse-L4's ``/ingest`` is
``HttpSystem(url, mapping=ResponseMapping(label="status", confidence="anomaly_score"))``.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Mapping
from typing import Any

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from arbiter.contract import Prediction
from arbiter.errors import InputError, InvalidSystemResponse, MissingField
from arbiter.http.bodies import read_aiohttp_body
from arbiter.http.client import DEFAULT_MAX_RESPONSE_BYTES
from arbiter.http.errors import map_exceptions, not_json, service_message, status_error
from arbiter.http.redact import redact_url
from arbiter.http.retry_after import parse_retry_after
from arbiter.params import check_number
from arbiter.systems.base import ResponseMapping, check_headers, lookup_path

__all__ = ["HttpSystem", "render_template"]

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

    Enter it with ``async with`` to share one session (a keep-alive connection pool
    with no cap of its own: the runner's concurrency is the bound) across calls;
    called outside such a block, each call opens and closes its own session, so
    nothing leaks and no session outlives the event loop it was made on. The proxy
    named by ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` when the system is made
    is used; redirects are not followed.

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
            target = URL(url)
        except (TypeError, ValueError) as exc:
            raise InputError(f"invalid system URL {redact_url(str(url))!r}: {exc}") from None
        if target.scheme not in {"http", "https"} or not target.host:
            raise InputError(f"the system URL must be http(s)://host/...; got {redact_url(url)!r}")
        check_number(timeout, "timeout", "HttpSystem", minimum=0, open_min=True)
        check_number(
            max_response_bytes, "max_response_bytes", "HttpSystem", minimum=1, integer=True
        )
        check_headers(
            dict(headers or {}), url_has_credentials=target.user is not None, owner="http system"
        )
        self.url = url
        self.method = method.upper()
        self.body_template = body_template
        self.mapping = mapping if mapping is not None else ResponseMapping()
        self.headers: CIMultiDict[str] = CIMultiDict({"Accept": "application/json"})
        self.headers.update(dict(headers or {}))
        self.timeout = float(timeout)
        self._header_names = sorted(dict(headers or {}))
        self._target = target
        self._proxy = _proxy_from_environment(target)
        self._session: aiohttp.ClientSession | None = None
        self._shown_url = redact_url(url)
        self.max_response_bytes = max_response_bytes
        self.call_timeout = self.timeout  # aiohttp's total timeout bounds every call
        self.always_suspends = True

    async def __aenter__(self) -> HttpSystem:
        """Open the shared session used by every call until exit."""
        if self._session is None:
            self._session = self._new_session()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the shared session and its connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

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
        options = self._request_options(input)
        where = f"{self.method} {self._shown_url}"
        shared = self._session
        session = shared if shared is not None else self._new_session()
        try:
            with map_exceptions("system", where, timeout=self.timeout):
                async with session.request(self.method, self._target, **options) as response:
                    body = await read_aiohttp_body(response, self.max_response_bytes, where=where)
        finally:
            if session is not shared:
                await session.close()
        status = response.status
        if status >= 400:
            text = _decode(body, response.charset)
            raise status_error(
                "system",
                where,
                status,
                service_message(text, response.reason or ""),
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        try:
            document = json.loads(body)
        except ValueError:
            raise not_json("system", where, status, _decode(body, response.charset)) from None
        try:
            return self.mapping.to_prediction(document)
        except (MissingField, InvalidSystemResponse) as exc:
            raise type(exc)(f"{where}: {exc}") from None

    def validate_input(self, input: dict[str, Any]) -> None:
        """Check that ``input`` can be sent at all (its body renders), without sending it.

        Raises:
            InputError: The body template names a field the input lacks, or a GET/DELETE
                input is not a JSON object.
        """
        self._request_options(input)

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

    def _new_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # the runner bounds concurrency
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )

    def _request_options(self, input: dict[str, Any]) -> dict[str, Any]:
        body = input if self.body_template is None else render_template(self.body_template, input)
        options: dict[str, Any] = {"allow_redirects": False, "proxy": self._proxy}
        if self.method not in _QUERY_METHODS:
            return {**options, "json": body}
        if not isinstance(body, dict):
            raise InputError(
                f"{self.method} sends the input as query parameters, which needs a JSON "
                f"object; got {type(body).__name__}"
            )
        return {**options, "params": _query_pairs(body)}


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


def _proxy_from_environment(target: URL) -> str | None:
    # Read once per system rather than letting aiohttp (trust_env) reread the
    # environment and ~/.netrc on every request.
    if target.host is None or urllib.request.proxy_bypass(target.host):
        return None
    return urllib.request.getproxies().get(target.scheme)


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")
