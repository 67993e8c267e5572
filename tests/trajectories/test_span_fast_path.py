"""The OTLP/JSON reader's fast path reads a span exactly as the checked reader does.

Spans in the shape exporters write take a path that builds no error text per field; any
other span goes to the checked reader. Whatever the fast path accepts, the checked reader
must accept too and read the same way, or a trace would mean two things.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.trajectories.spans import _JsonDecoder, _plain_span

DATA = Path(__file__).parent / "data"

PLAIN: dict[str, Any] = {
    "traceId": "5b8efff798038103d269b633813fc60c",
    "spanId": "eee19b7ec3c1b174",
    "parentSpanId": "eee19b7ec3c1b173",
    "name": "chat gpt-4o",
    "kind": 3,
    "startTimeUnixNano": "1544712660000000000",
    "endTimeUnixNano": "1544712661000000000",
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
    ],
    "status": {"code": 2, "message": "boom"},
}


def _both(raw: Any) -> tuple[Any, Any]:
    decoder = _JsonDecoder()
    fast = _plain_span(raw, {"service.name": "svc"}, "scope")
    checked = decoder._checked_span(raw, "span", "request", {"service.name": "svc"}, "scope")
    return fast, checked


def test_a_plain_span_reads_the_same_on_both_paths() -> None:
    fast, checked = _both(PLAIN)
    assert fast is not None
    assert fast == checked


def _spans_of(path: Path) -> list[Any]:
    found: list[Any] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        document = json.loads(line)
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                found.extend(scope.get("spans", []))
    return found


@pytest.mark.parametrize(
    "name", ["otlp_openai_v2_content.jsonl", "otlp_openai_v2_no_content.jsonl"]
)
def test_spans_written_by_a_real_instrumentation_take_the_fast_path_unchanged(name: str) -> None:
    spans = _spans_of(DATA / name)
    assert spans
    for raw in spans:
        fast, checked = _both(raw)
        assert fast is not None, raw.get("name")
        assert fast == checked


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("traceId", "5B8EFFF798038103D269B633813FC60C"),  # upper case: the checked reader
        ("traceId", "0" * 32),  # all zeros: refused there, with its path
        ("spanId", "eee19b7e"),
        ("parentSpanId", "0" * 16),
        ("startTimeUnixNano", 1544712660000000000),  # a number, not a string
        ("endTimeUnixNano", "1544712650000000000"),  # before the start
        ("kind", True),
        ("kind", "SPAN_KIND_CLIENT"),
        ("kind", 9),
        ("status", {"code": 7}),
        ("status", {"message": 3}),
        ("name", 5),
        ("events", [{"name": "e"}]),
        ("attributes", "nope"),
    ],
)
def test_anything_unusual_goes_to_the_checked_reader(field: str, value: Any) -> None:
    raw = {**PLAIN, field: value}
    assert _plain_span(raw, {}, None) is None
