"""OTLP traces and logs decode into one span model, from JSON and protobuf alike."""

from __future__ import annotations

import base64
import json
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.errors import InputError
from arbiter.trajectories import spans as spans_module
from arbiter.trajectories.spans import (
    Span,
    decode_otlp_json,
    decode_otlp_protobuf,
    group_by_trace,
    read_otlp_json_lines,
    span_tree,
)

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT, CHILD = "eee19b7ec3c1b174", "eee19b7ec3c1b173"
START = 1_700_000_000_123_456_789


def _span(span_id: str = ROOT, **fields: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": span_id, "name": "chat gpt-4o", **fields}


def _request(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"scopeSpans": [{"scope": {"name": "my.lib"}, "spans": list(spans)}]}
    if resource is not None:
        block["resource"] = resource
    return {"resourceSpans": [block]}


def _one(span: dict[str, Any]) -> Span:
    [decoded], logs = decode_otlp_json(_request(span), where="body")
    assert logs == []
    return decoded


def test_every_any_value_decodes_to_plain_python() -> None:
    attributes = [
        {"key": "s", "value": {"stringValue": "text"}},
        {"key": "i", "value": {"intValue": "-42"}},
        {"key": "i_number", "value": {"intValue": 7}},
        {"key": "d", "value": {"doubleValue": 0.5}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x01\xff").decode()}},
        {
            "key": "a",
            "value": {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": "1"}]}},
        },
        {
            "key": "kv",
            "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}},
        },
        {"key": "empty", "value": {}},
    ]
    span = _one(_span(attributes=attributes))
    assert span.attributes == {
        "s": "text",
        "i": -42,
        "i_number": 7,
        "d": 0.5,
        "b": True,
        "bytes": "01ff",
        "a": ["x", 1],
        "kv": {"k": False},
        "empty": None,
    }


def test_span_fields_are_decoded_with_short_enum_names_and_times() -> None:
    span = _one(
        _span(
            CHILD,
            parentSpanId=ROOT,
            kind=3,
            startTimeUnixNano=str(START),
            endTimeUnixNano=str(START + 2_000_000),
            status={"code": 2, "message": "boom"},
            events=[
                {
                    "name": "exception",
                    "timeUnixNano": str(START + 1),
                    "attributes": [{"key": "exception.type", "value": {"stringValue": "E"}}],
                }
            ],
        )
    )
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, CHILD, ROOT)
    assert (span.kind, span.status_code, span.error, span.scope) == (
        "CLIENT",
        "ERROR",
        "boom",
        "my.lib",
    )
    assert span.started_at == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert span.ended_at is not None
    assert (span.ended_at - span.started_at).total_seconds() == 0.002
    assert span.events[0].name == "exception"
    assert span.events[0].attributes == {"exception.type": "E"}
    assert span.events[0].time_ns == START + 1


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "SPAN_KIND_SERVER"}, ("SERVER", "UNSET")),
        ({"status": {"code": "STATUS_CODE_OK"}}, ("UNSPECIFIED", "OK")),
        ({"kind": 1, "status": {}}, ("INTERNAL", "UNSET")),
    ],
)
def test_enums_read_as_integers_or_proto_names(
    fields: dict[str, Any], expected: tuple[str, str]
) -> None:
    span = _one(_span(**fields))
    assert (span.kind, span.status_code) == expected


def test_an_error_status_without_message_falls_back_to_error_type() -> None:
    attributes = [{"key": "error.type", "value": {"stringValue": "TimeoutError"}}]
    assert _one(_span(status={"code": 2}, attributes=attributes)).error == "TimeoutError"
    assert _one(_span(status={"code": 1, "message": "ignored"})).error is None


@pytest.mark.parametrize("parent", ["", None, "0000000000000000"])
def test_an_empty_or_zero_parent_id_means_a_root(parent: str | None) -> None:
    assert _one(_span(parentSpanId=parent)).parent_span_id is None


def test_base64_ids_of_a_generic_protobuf_json_converter_are_accepted() -> None:
    b64 = {
        "traceId": base64.b64encode(bytes.fromhex(TRACE)).decode(),
        "spanId": base64.b64encode(bytes.fromhex(ROOT)).decode(),
    }
    span = _one({"name": "x", **b64})
    assert (span.trace_id, span.span_id) == (TRACE, ROOT)


def test_uppercase_hex_ids_are_held_in_lower_case() -> None:
    assert _one(_span(ROOT.upper(), traceId=TRACE.upper())).trace_id == TRACE


def test_resource_attributes_are_carried_by_every_span_of_the_block() -> None:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "travel"}}]}
    decoded, _ = decode_otlp_json(_request(_span(ROOT), _span(CHILD), resource=resource), where="b")
    assert [s.resource for s in decoded] == [{"service.name": "travel"}] * 2


def test_log_records_carry_their_event_name_body_and_span_link() -> None:
    request = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": str(START),
                                "eventName": "gen_ai.user.message",
                                "traceId": TRACE,
                                "spanId": ROOT,
                                "body": {
                                    "kvlistValue": {
                                        "values": [
                                            {"key": "content", "value": {"stringValue": "hi"}}
                                        ]
                                    }
                                },
                            },
                            {
                                "observedTimeUnixNano": str(START + 5),
                                "attributes": [
                                    {"key": "event.name", "value": {"stringValue": "gen_ai.choice"}}
                                ],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    spans, (first, second) = decode_otlp_json(request, where="b")
    assert spans == []
    assert (first.event_name, first.body, first.trace_id, first.span_id) == (
        "gen_ai.user.message",
        {"content": "hi"},
        TRACE,
        ROOT,
    )
    assert (second.event_name, second.time_ns, second.trace_id, second.body) == (
        "gen_ai.choice",
        START + 5,
        None,
        None,
    )


def test_file_exporter_lines_decode_in_order_and_blank_lines_are_skipped() -> None:
    lines = [
        json.dumps(_request(_span(ROOT))),
        "",
        json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"eventName": "e"}]}]}]}),
        json.dumps(_request(_span(CHILD, parentSpanId=ROOT))),
        "   ",
    ]
    decoded, logs = read_otlp_json_lines("\n".join(lines), source="traces.jsonl")
    assert [s.span_id for s in decoded] == [ROOT, CHILD]
    assert [r.event_name for r in logs] == ["e"]


def test_a_pretty_printed_request_is_read_as_one_document() -> None:
    text = json.dumps(_request(_span(ROOT), _span(CHILD)), indent=2)
    decoded, _ = read_otlp_json_lines(text, source="trace.json")
    assert [s.span_id for s in decoded] == [ROOT, CHILD]


_BAD_LINES: list[tuple[str, str]] = [
    ("{not json", "t.jsonl:2:2: invalid JSON"),
    ('{"resourceSpans": [], "x": 1', "t.jsonl:2:"),
    ("[1, 2]", "t.jsonl:2: expected an OTLP export request"),
    ('{"spans": []}', "t.jsonl:2: expected an OTLP export request"),
    ('{"resourceSpans": {}}', "t.jsonl:2: resourceSpans: must be an array"),
    (json.dumps(_request({"spanId": ROOT})), "spans[0].traceId: missing"),
    (json.dumps(_request({"traceId": TRACE})), "spans[0].spanId: missing"),
    (json.dumps(_request(_span("abc"))), "spans[0].spanId: 'abc' is not 16 hex digits"),
    (json.dumps(_request(_span("zzzzzzzzzzzzzzzz"))), "is not hex"),
    (json.dumps(_request(_span(traceId="0" * 32))), "an all-zero id is invalid"),
    (
        json.dumps(_request(_span(startTimeUnixNano="20", endTimeUnixNano="10"))),
        f"(span {ROOT}): endTimeUnixNano 10 is before startTimeUnixNano 20",
    ),
    (json.dumps(_request(_span(startTimeUnixNano="-5"))), "startTimeUnixNano: must be nanoseconds"),
    (json.dumps(_request(_span(kind=9))), f"(span {ROOT}).kind: '9' is not one of"),
    (json.dumps(_request(_span(name=3))), ".name: must be a string"),
    (
        json.dumps(_request(_span(attributes={"a": 1}))),
        ".attributes: must be an array of key/value",
    ),
    (
        json.dumps(_request(_span(attributes=[{"value": {}}]))),
        "must be an object with a string 'key'",
    ),
    (
        json.dumps(_request(_span(attributes=[{"key": "k", "value": {"intValue": "x1"}}]))),
        "intValue: must be an integer",
    ),
    (
        json.dumps(_request(_span(attributes=[{"key": "k", "value": {"intValue": str(2**63)}}]))),
        "outside the range of an int64",
    ),
    (
        json.dumps(_request(_span(attributes=[{"key": "k", "value": {"stringValue": 1}}]))),
        "stringValue: must be a string",
    ),
    (
        json.dumps(_request(_span(attributes=[{"key": "k", "value": {"bytesValue": "!!"}}]))),
        "bytesValue: must be base64",
    ),
    (
        json.dumps(_request(_span(attributes=[{"key": "k", "value": "v"}]))),
        "must be an AnyValue object",
    ),
    (json.dumps(_request(_span(status="ok"))), ".status: must be an object"),
    (
        json.dumps(_request(_span(events=[{"name": "e", "timeUnixNano": "soon"}]))),
        "events[0].timeUnixNano",
    ),
]


@pytest.mark.parametrize(("line", "expected"), _BAD_LINES)
def test_a_bad_line_is_an_input_error_naming_file_line_and_why(line: str, expected: str) -> None:
    text = json.dumps(_request(_span(CHILD))) + "\n" + line + "\n"
    with pytest.raises(InputError) as caught:
        read_otlp_json_lines(text, source="t.jsonl")
    message = str(caught.value)
    assert message.startswith("t.jsonl:2"), message
    assert expected in message
    assert "\n" not in message


def test_more_spans_than_the_cap_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spans_module, "MAX_SPANS", 2)
    text = "\n".join(json.dumps(_request(_span(ROOT))) for _ in range(3))
    with pytest.raises(InputError, match=r"^f:3: more than 2 spans"):
        read_otlp_json_lines(text, source="f")


def _protobuf_request() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import (
        AnyValue,
        ArrayValue,
        KeyValue,
        KeyValueList,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

    def kv(key: str, value: AnyValue) -> KeyValue:
        return KeyValue(key=key, value=value)

    attributes = [
        kv("s", AnyValue(string_value="text")),
        kv("i", AnyValue(int_value=-3)),
        kv("d", AnyValue(double_value=1.25)),
        kv("b", AnyValue(bool_value=True)),
        kv("bytes", AnyValue(bytes_value=b"\x00\x10")),
        kv("a", AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="x")]))),
        kv("kv", AnyValue(kvlist_value=KeyValueList(values=[kv("k", AnyValue(int_value=1))]))),
    ]
    root = PbSpan(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(ROOT),
        name="invoke_agent travel",
        kind=PbSpan.SPAN_KIND_INTERNAL,
        start_time_unix_nano=START,
        end_time_unix_nano=START + 10,
        attributes=attributes,
        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
        events=[
            PbSpan.Event(
                name="e", time_unix_nano=START + 1, attributes=[kv("x", AnyValue(bool_value=False))]
            )
        ],
    )
    child = PbSpan(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(CHILD),
        parent_span_id=bytes.fromhex(ROOT),
        name="chat",
        kind=PbSpan.SPAN_KIND_CLIENT,
    )
    resource = {"attributes": [kv("service.name", AnyValue(string_value="svc"))]}
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource,  # type: ignore[arg-type]
                scope_spans=[ScopeSpans(scope={"name": "lib"}, spans=[root, child])],  # type: ignore[arg-type]
            )
        ]
    )


def test_protobuf_decodes_to_the_same_spans_as_its_json_form() -> None:
    from google.protobuf import json_format

    request = _protobuf_request()
    from_protobuf, _ = decode_otlp_protobuf(request.SerializeToString(), where="body")
    # MessageToDict writes ids as base64, int64 as strings and enums as names.
    from_json, _ = decode_otlp_json(json_format.MessageToDict(request), where="body")
    assert from_protobuf == from_json
    root, child = from_protobuf
    assert root.attributes["bytes"] == "0010"
    assert root.attributes["kv"] == {"k": 1}
    assert (root.status_code, root.error, child.kind, child.parent_span_id) == (
        "ERROR",
        "boom",
        "CLIENT",
        ROOT,
    )
    assert (root.scope, root.resource) == ("lib", {"service.name": "svc"})


def test_protobuf_logs_decode_with_their_event_names() -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as PbLog
    from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs

    record = PbLog(
        time_unix_nano=START,
        event_name="gen_ai.choice",
        span_id=bytes.fromhex(ROOT),
        trace_id=bytes.fromhex(TRACE),
        body=AnyValue(string_value="hi"),
    )
    body = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=[record])])]
    ).SerializeToString()
    spans, [log] = decode_otlp_protobuf(body, where="body", kind="logs")
    assert spans == []
    assert (log.event_name, log.body, log.span_id, log.time_ns) == (
        "gen_ai.choice",
        "hi",
        ROOT,
        START,
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\xff\xff\xff", "body: not a protobuf ExportTraceServiceRequest"),
        (b"\n\x05\x12\x03\n\x01\x00", "body: not a protobuf ExportTraceServiceRequest"),
    ],
)
def test_bytes_that_are_not_a_request_are_an_input_error(body: bytes, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        decode_otlp_protobuf(body, where="body")


def test_a_protobuf_span_with_a_short_id_is_named() -> None:
    request = _protobuf_request()
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02"
    with pytest.raises(
        InputError, match=r"body: resourceSpans\[0\].scopeSpans\[0\].spans\[1\].spanId: 2 bytes"
    ):
        decode_otlp_protobuf(request.SerializeToString(), where="body")


def test_protobuf_without_the_otlp_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None
    )
    with pytest.raises(InputError, match=r"pip install 'arbiter\[otlp\]'"):
        decode_otlp_protobuf(b"", where="body")


def _bare(span_id: str, parent: str | None, start: int | None, trace: str = TRACE) -> Span:
    return Span(trace, span_id, parent, span_id, "INTERNAL", start, None, {})


def test_span_tree_orders_children_by_start_and_makes_orphans_roots() -> None:
    root = _bare("a" * 16, None, 10)
    late, early = _bare("b" * 16, "a" * 16, 30), _bare("c" * 16, "a" * 16, 20)
    orphan = _bare("d" * 16, "f" * 16, 5)
    tree = span_tree([root, late, early, orphan])
    assert [s.span_id for s in tree.roots] == ["d" * 16, "a" * 16]
    assert tree.children_of(root) == [early, late]
    assert tree.children_of(late) == []


def test_span_tree_breaks_a_parent_cycle_so_every_span_appears_once() -> None:
    a, b, c = (
        _bare("a" * 16, "b" * 16, 1),
        _bare("b" * 16, "a" * 16, 2),
        _bare("c" * 16, "c" * 16, 3),
    )
    tree = span_tree([a, b, c])
    listed = [*tree.roots, *(s for kids in tree.children.values() for s in kids)]
    assert sorted(s.span_id for s in listed) == ["a" * 16, "b" * 16, "c" * 16]
    assert [s.span_id for s in tree.roots] == ["a" * 16, "c" * 16]


def test_group_by_trace_keeps_first_seen_order() -> None:
    other = "1" * 32
    first, second, third = (
        _bare("a" * 16, None, 1),
        _bare("b" * 16, None, 1, other),
        _bare("c" * 16, None, 1),
    )
    assert group_by_trace([first, second, third]) == {TRACE: [first, third], other: [second]}


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "resourceSpans",
        "scopeSpans",
        "spans",
        "traceId",
        "spanId",
        "attributes",
        "key",
        "value",
        "stringValue",
        "intValue",
        "arrayValue",
        "values",
        "kvlistValue",
        "status",
        "code",
        "kind",
        "events",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "resourceLogs",
        "scopeLogs",
        "logRecords",
        "body",
    ]
)
_otlpish = st.recursive(
    st.none() | st.integers() | st.text(max_size=34) | st.sampled_from([TRACE, ROOT, "", "1", "2"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(document=_json | _otlpish)
def test_arbitrary_json_never_raises_anything_but_input_error(document: Any) -> None:
    try:
        decoded, _ = decode_otlp_json(document, where="body")
    except InputError as exc:
        message = str(exc)
        decoded = []
    else:
        message = ""
    assert "\n" not in message
    assert all(len(s.span_id) == 16 and len(s.trace_id) == 32 for s in decoded)
