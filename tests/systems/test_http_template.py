"""Unit tests of the http system's pure parts: body templates, Retry-After parsing,
service messages, validation and description. What it sends and how it reads answers
and failures is pinned against real servers in tests/integration/test_http_system.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.http.errors import service_message
from arbiter.http.retry_after import parse_retry_after
from arbiter.systems.base import ResponseMapping
from arbiter.systems.factory import build_system
from arbiter.systems.http import HttpSystem, render_template

URL = "http://svc.test/ingest"
INPUT: dict[str, Any] = {"id": 7, "meta": {"source": "s-1", "tags": ["a", "b"]}, "text": "hi"}


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


# --- construction and description ----------------------------------------------------


async def test_get_with_a_non_object_body_is_an_input_error() -> None:
    system = HttpSystem(URL, method="GET", body_template="{{input.meta.tags}}")
    with pytest.raises(InputError, match="query parameters"):
        await system(INPUT)


def test_describe_lists_header_names_but_not_values() -> None:
    system = HttpSystem(
        "http://user:pw@svc.test/ingest?api_key=k3y&n=1",
        headers={"X-Api-Key": "s3cret"},
        mapping=ResponseMapping(label="status", confidence="anomaly_score"),
        timeout=2,
    )
    described = system.describe()
    text = json.dumps(described)
    assert "s3cret" not in text
    assert "pw" not in text
    assert "k3y" not in text
    assert described["url"] == "http://user:[redacted]@svc.test/ingest?api_key=[redacted]&n=1"
    assert described["headers"] == ["X-Api-Key"]
    assert described["kind"] == "http"
    assert described["mapping"]["label"] == "status"
    assert described["timeout"] == 2.0


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer s3cret", "X-Run": "r1"}])
def test_description_rebuilds_the_system_given_the_same_headers(headers: dict[str, str]) -> None:
    system = HttpSystem(URL, method="get", body_template={"q": "{{input.text}}"}, headers=headers)
    rebuilt = build_system(system.describe(), headers=headers)
    assert isinstance(rebuilt, HttpSystem)
    assert rebuilt.describe() == system.describe()


@pytest.mark.parametrize(
    ("url", "timeout"),
    [
        ("not a url", 1.0),
        ("ftp://svc.test/x", 1.0),
        ("http:///x", 1.0),
        ("http://[::1/x", 1.0),
        (URL, 0),
        (URL, -1.0),
        (URL, float("nan")),
        (URL, True),
    ],
)
def test_invalid_url_or_timeout_is_an_input_error(url: str, timeout: float) -> None:
    with pytest.raises(InputError):
        HttpSystem(url, timeout=timeout)


# --- error answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"detail": "judge_rejected: score contradicts status"},
            "judge_rejected: score contradicts status",
        ),
        ({"message": "quota exhausted"}, "quota exhausted"),
        ({"error": "bad token"}, "bad token"),
        ({"error": {"code": 7, "message": "model overloaded"}}, "model overloaded"),
        ({"detail": [{"loc": ["body", "x"], "msg": "field required"}]}, "field required"),
        ({"unexpected": "shape"}, '{"unexpected": "shape"}'),
    ],
)
def test_service_message_is_extracted_from_a_json_error_body(
    body: dict[str, Any], message: str
) -> None:
    assert service_message(json.dumps(body), "Unprocessable Entity") == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("upstream   exploded\n" + "x" * 500, "upstream exploded " + "x" * 182),
        ("", "Bad Gateway"),
    ],
)
def test_text_error_body_is_quoted_on_one_line_up_to_200_characters(
    text: str, message: str
) -> None:
    assert service_message(text, "Bad Gateway") == message


# --- Retry-After ---------------------------------------------------------------------


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
