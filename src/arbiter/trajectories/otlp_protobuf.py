"""Decoding of OTLP protobuf export requests (the optional extra ``arbiter[otlp]``)."""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable
from typing import Any, Literal

from arbiter.errors import InputError
from arbiter.trajectories.span_model import (
    MAX_SPANS,
    SPAN_KINDS,
    STATUS_CODES,
    LogRecord,
    Rejected,
    Span,
    SpanEvent,
    bytes_id,
    check_span_times,
    fail,
)

__all__ = ["decode_protobuf_request", "encode_export_response"]


def decode_protobuf_request(
    body: bytes,
    *,
    where: str,
    kind: Literal["traces", "logs"],
    rejected: list[Rejected] | None = None,
) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of one serialised export request (see ``spans``).

    Args:
        body: The serialised request.
        where: Where it came from, for messages.
        kind: Which request it is.
        rejected: When given, a malformed span or log record is left out and noted
            here instead of failing the request.

    Raises:
        InputError: Not such a request, a malformed span, or the extra is not installed.
    """
    request = _parse_protobuf(body, where, kind)
    spans: list[Span] = []
    logs: list[LogRecord] = []
    if kind == "traces":
        for index, block in enumerate(request.resource_spans):
            resource = _pb_attributes(block.resource.attributes)
            for s_index, scope_block in enumerate(block.scope_spans):
                scope = scope_block.scope.name or None
                at = f"resourceSpans[{index}].scopeSpans[{s_index}]"
                for span_index, raw in enumerate(scope_block.spans):
                    if len(spans) >= MAX_SPANS:
                        fail(where, f"more than {MAX_SPANS:,} spans")
                    at_span = f"{at}.spans[{span_index}]"
                    try:
                        spans.append(_pb_span(raw, at_span, where, resource, scope))
                    except InputError as exc:
                        _reject(exc, raw, rejected)
    else:
        for index, block in enumerate(request.resource_logs):
            for s_index, scope_block in enumerate(block.scope_logs):
                at = f"resourceLogs[{index}].scopeLogs[{s_index}]"
                for r_index, raw in enumerate(scope_block.log_records):
                    if len(logs) >= MAX_SPANS:
                        fail(where, f"more than {MAX_SPANS:,} log records")
                    try:
                        logs.append(_pb_log(raw, f"{at}.logRecords[{r_index}]", where))
                    except InputError as exc:
                        _reject(exc, raw, rejected)
    return spans, logs


def _reject(exc: InputError, raw: Any, rejected: list[Rejected] | None) -> None:
    if rejected is None:
        raise exc
    trace = bytes(raw.trace_id)
    rejected.append(Rejected(trace.hex() if len(trace) == 16 and any(trace) else None, str(exc)))


def encode_export_response(
    kind: Literal["traces", "logs"], *, rejected: int = 0, message: str = ""
) -> bytes:
    """A serialised ``ExportTraceServiceResponse`` (or logs'), with its ``partial_success``
    when items were rejected: zero bytes when all were taken."""
    if not rejected and not message:
        return b""
    module = importlib.import_module(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
        if kind == "traces"
        else "opentelemetry.proto.collector.logs.v1.logs_service_pb2"
    )
    if kind == "traces":
        answer = module.ExportTraceServiceResponse()
        answer.partial_success.rejected_spans = rejected
    else:
        answer = module.ExportLogsServiceResponse()
        answer.partial_success.rejected_log_records = rejected
    answer.partial_success.error_message = message
    return bytes(answer.SerializeToString())


def _parse_protobuf(body: bytes, where: str, kind: str) -> Any:
    try:
        decode_error = importlib.import_module("google.protobuf.message").DecodeError
        module = importlib.import_module(
            "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
            if kind == "traces"
            else "opentelemetry.proto.collector.logs.v1.logs_service_pb2"
        )
    except ImportError:
        raise InputError(
            f"{where}: reading OTLP protobuf needs the otlp extra: pip install 'arbiter[otlp]'"
        ) from None
    message = (
        module.ExportTraceServiceRequest if kind == "traces" else module.ExportLogsServiceRequest
    )
    try:
        return message.FromString(body)
    except (decode_error, RecursionError, ValueError) as exc:
        name = message.DESCRIPTOR.name
        fail(where, f"not a protobuf {name} ({' '.join(str(exc).split())[:120]})")


def _pb_span(raw: Any, at: str, where: str, resource: dict[str, Any], scope: str | None) -> Span:
    trace_id = bytes_id(raw.trace_id, 16, f"{at}.traceId", where, required=True)
    span_id = bytes_id(raw.span_id, 8, f"{at}.spanId", where, required=True)
    assert trace_id is not None
    assert span_id is not None
    at = f"{at} (span {span_id})"
    start, end = raw.start_time_unix_nano or None, raw.end_time_unix_nano or None
    check_span_times(start, end, at, where)
    kind, code = raw.kind, raw.status.code
    if not (0 <= kind < len(SPAN_KINDS) and 0 <= code < len(STATUS_CODES)):
        fail(where, f"{at}: unknown span kind {kind} or status code {code}")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=bytes_id(raw.parent_span_id, 8, f"{at}.parentSpanId", where, required=False),
        name=raw.name,
        kind=SPAN_KINDS[kind],
        start_ns=start,
        end_ns=end,
        attributes=_pb_attributes(raw.attributes),
        events=tuple(
            SpanEvent(
                name=event.name,
                time_ns=event.time_unix_nano or None,
                attributes=_pb_attributes(event.attributes),
            )
            for event in raw.events
        ),
        status_code=STATUS_CODES[code],
        status_message=raw.status.message,
        resource=resource,
        scope=scope,
    )


def _pb_log(raw: Any, at: str, where: str) -> LogRecord:
    attributes = _pb_attributes(raw.attributes)
    event_name = raw.event_name or attributes.get("event.name")
    return LogRecord(
        trace_id=bytes_id(raw.trace_id, 16, f"{at}.traceId", where, required=False),
        span_id=bytes_id(raw.span_id, 8, f"{at}.spanId", where, required=False),
        time_ns=raw.time_unix_nano or raw.observed_time_unix_nano or None,
        event_name=event_name if isinstance(event_name, str) and event_name else None,
        attributes=attributes,
        body=_pb_any_value(raw.body) if raw.HasField("body") else None,
    )


def _pb_attributes(pairs: Iterable[Any]) -> dict[str, Any]:
    return {pair.key: _pb_any_value(pair.value) for pair in pairs}


def _pb_any_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which is None or which == "string_value_strindex":
        return None
    if which == "array_value":
        return [_pb_any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return bytes(value.bytes_value).hex()
    if which == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else None
    return getattr(value, which)
