"""Unit tests of the http system: body templates, requests sent and error mapping."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemHTTPError,
    SystemTimeout,
    SystemUnreachable,
)
from arbiter.systems.base import ResponseMapping
from arbiter.systems.http import HttpSystem, parse_retry_after, render_template

URL = "http://svc.test/ingest"
INPUT: dict[str, Any] = {"id": 7, "meta": {"source": "s-1", "tags": ["a", "b"]}, "text": "hi"}


def system_answering(
    handler: Callable[[httpx.Request], httpx.Response], **options: Any
) -> HttpSystem:
    return HttpSystem(URL, transport=httpx.MockTransport(handler), **options)


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"label": "ok", "confidence": 0.5})


# --- render_template ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{input.id}}", 7),
        ("{{input.meta}}", {"source": "s-1", "tags": ["a", "b"]}),
        ("{{ input.meta.tags.1 }}", "b"),
        ("{{input}}", INPUT),
    ],
)
def test_exact_placeholder_keeps_the_value_type(template: str, expected: Any) -> None:
    assert render_template(template, INPUT) == expected


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("id-{{input.id}}", "id-7"),
        ("{{input.meta.source}}/{{input.text}}", "s-1/hi"),
        ("tags={{input.meta.tags}}", 'tags=["a","b"]'),
        ("no placeholder", "no placeholder"),
    ],
)
def test_placeholders_inside_text_are_interpolated(template: str, expected: str) -> None:
    assert render_template(template, INPUT) == expected


def test_nested_dicts_and_lists_are_rendered_and_scalars_kept() -> None:
    template = {"items": [{"n": "{{input.id}}"}, ["{{input.meta.source}}", 3, None]], "x": True}
    assert render_template(template, INPUT) == {"items": [{"n": 7}, ["s-1", 3, None]], "x": True}


def test_render_does_not_mutate_the_template() -> None:
    template = {"n": "{{input.id}}"}
    render_template(template, INPUT)
    assert template == {"n": "{{input.id}}"}


@pytest.mark.parametrize(
    ("template", "placeholder"),
    [
        ("{{input.missing}}", "{{input.missing}}"),
        ("x-{{ input.meta.nope }}", "{{ input.meta.nope }}"),
        (["{{input.id.x}}"], "{{input.id.x}}"),
    ],
)
def test_missing_field_raises_input_error_naming_the_placeholder(
    template: Any, placeholder: str
) -> None:
    with pytest.raises(InputError) as caught:
        render_template(template, INPUT)
    assert placeholder in str(caught.value)
    assert "\n" not in str(caught.value)


# --- requests sent -----------------------------------------------------------------


async def test_without_template_the_input_is_the_json_body() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok(request)

    await system_answering(handler)(INPUT)
    assert seen[0].method == "POST"
    assert json.loads(seen[0].content) == INPUT


async def test_template_renders_the_json_body() -> None:
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return ok(request)

    system = system_answering(handler, body_template={"payload": {"n": "{{input.id}}"}})
    await system(INPUT)
    assert seen == [{"payload": {"n": 7}}]


async def test_configured_headers_are_sent() -> None:
    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return ok(request)

    system = system_answering(handler, headers={"Authorization": "Bearer s3cret", "X-Run": "r1"})
    await system(INPUT)
    assert seen[0]["authorization"] == "Bearer s3cret"
    assert seen[0]["x-run"] == "r1"


@pytest.mark.parametrize("method", ["GET", "delete"])
async def test_get_and_delete_send_query_params_and_no_body(method: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok(request)

    query = {"q": "x y", "n": 3, "flag": True, "ids": [1, 2]}
    await system_answering(handler, method=method)(query)
    request = seen[0]
    assert request.method == method.upper()
    assert request.content == b""
    assert request.url.params.get("q") == "x y"
    assert request.url.params.get("n") == "3"
    assert request.url.params.get("flag") == "true"
    assert request.url.params.get_list("ids") == ["1", "2"]


async def test_get_with_a_non_object_body_is_an_input_error() -> None:
    system = system_answering(ok, method="GET", body_template="{{input.meta.tags}}")
    with pytest.raises(InputError, match="query parameters"):
        await system(INPUT)


class ClosingCountTransport(httpx.MockTransport):
    def __init__(self) -> None:
        super().__init__(ok)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_async_with_shares_one_client_closed_on_exit() -> None:
    transport = ClosingCountTransport()
    async with HttpSystem(URL, transport=transport) as system:
        await system(INPUT)
        await system(INPUT)
        assert transport.closed == 0
    assert transport.closed == 1


async def test_calls_outside_async_with_use_a_short_lived_client_each() -> None:
    transport = ClosingCountTransport()
    system = HttpSystem(URL, transport=transport)
    first = await system(INPUT)
    second = await system(INPUT)
    assert (first.label, second.label, transport.closed) == ("ok", "ok", 2)


def test_describe_lists_header_names_but_not_values() -> None:
    system = HttpSystem(
        "http://user:pw@svc.test/ingest",
        headers={"Authorization": "Bearer s3cret"},
        mapping=ResponseMapping(label="status", confidence="anomaly_score"),
        timeout=2,
    )
    described = system.describe()
    text = json.dumps(described)
    assert "s3cret" not in text
    assert "pw" not in text
    assert "authorization" in described["headers"]
    assert described["kind"] == "http"
    assert described["mapping"]["label"] == "status"
    assert described["timeout"] == 2.0


@pytest.mark.parametrize(
    ("url", "timeout"),
    [("not a url", 1.0), ("ftp://svc.test/x", 1.0), (URL, 0), (URL, -1.0), (URL, float("nan"))],
)
def test_invalid_url_or_timeout_is_an_input_error(url: str, timeout: float) -> None:
    with pytest.raises(InputError):
        HttpSystem(url, timeout=timeout)


# --- error mapping -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"detail": "judge_rejected: score contradicts status"}, "judge_rejected: score"),
        ({"message": "quota exhausted"}, "quota exhausted"),
        ({"error": "bad token"}, "bad token"),
        ({"error": {"code": 7, "message": "model overloaded"}}, "model overloaded"),
        ({"detail": [{"loc": ["body", "x"], "msg": "field required"}]}, "field required"),
    ],
)
async def test_service_message_is_extracted_from_a_json_error_body(
    body: dict[str, Any], message: str
) -> None:
    system = system_answering(lambda request: httpx.Response(422, json=body))
    with pytest.raises(SystemHTTPError) as caught:
        await system(INPUT)
    assert message in str(caught.value)
    assert URL in str(caught.value)
    assert caught.value.status_code == 422
    assert not caught.value.retryable


async def test_text_error_body_is_quoted_up_to_200_characters() -> None:
    body = "upstream exploded " + "x" * 500
    system = system_answering(lambda request: httpx.Response(502, text=body))
    with pytest.raises(SystemHTTPError) as caught:
        await system(INPUT)
    assert "upstream exploded" in str(caught.value)
    assert "x" * 201 not in str(caught.value)
    assert caught.value.retryable


async def test_retry_after_in_seconds_is_parsed() -> None:
    system = system_answering(
        lambda request: httpx.Response(429, headers={"Retry-After": "2"}, json={"detail": "slow"})
    )
    with pytest.raises(SystemHTTPError) as caught:
        await system(INPUT)
    assert caught.value.retry_after == 2.0
    assert caught.value.retryable


async def test_retry_after_as_http_date_becomes_seconds_from_now() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    system = system_answering(lambda request: httpx.Response(503, headers={"Retry-After": when}))
    with pytest.raises(SystemHTTPError) as caught:
        await system(INPUT)
    assert caught.value.retry_after is not None
    assert 100 <= caught.value.retry_after <= 120


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("5", 5.0),
        ("-3", 0.0),
        ("inf", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("Wed, 01 Jan 2025 00:01:00 GMT", 60.0),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_never_negative(header: str | None, expected: float | None) -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert parse_retry_after(header, now=now) == expected


async def test_non_json_body_is_an_invalid_response() -> None:
    system = system_answering(lambda request: httpx.Response(200, text="<html>oops</html>"))
    with pytest.raises(InvalidSystemResponse, match="not JSON") as caught:
        await system(INPUT)
    assert "<html>oops" in str(caught.value)


async def test_missing_mapped_field_is_missing_field_naming_the_url() -> None:
    system = system_answering(lambda request: httpx.Response(200, json={"other": 1}))
    with pytest.raises(MissingField, match="'label'") as caught:
        await system(INPUT)
    assert URL in str(caught.value)


def raising(error: Exception) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    return handler


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (httpx.ConnectError("connection refused"), SystemUnreachable),
        (httpx.ReadError("connection reset"), SystemUnreachable),
        (httpx.RemoteProtocolError("server hung up"), SystemUnreachable),
        (httpx.ConnectTimeout("too slow"), SystemTimeout),
        (httpx.ReadTimeout("too slow"), SystemTimeout),
        (httpx.DecodingError("bad gzip"), InvalidSystemResponse),
    ],
)
async def test_httpx_errors_are_converted(error: Exception, expected: type[Exception]) -> None:
    with pytest.raises(expected) as caught:
        await system_answering(raising(error))(INPUT)
    assert URL in str(caught.value)
    assert not isinstance(caught.value, httpx.HTTPError)


async def test_synapse_mapping_turns_status_and_score_into_label_and_confidence() -> None:
    answer = {"status": "degraded", "anomaly_score": 0.62, "source_id": "s-9"}
    system = system_answering(
        lambda request: httpx.Response(200, json=answer),
        mapping=ResponseMapping(label="status", confidence="anomaly_score", id="source_id"),
    )
    prediction = await system(INPUT)
    assert (prediction.label, prediction.confidence, prediction.id) == ("degraded", 0.62, "s-9")
    assert prediction.raw_output == answer
