"""OTLP/JSON export requests built by hand: spans of a GenAI agent and its log events."""

from __future__ import annotations

from typing import Any

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def value(raw: Any) -> dict[str, Any]:
    """An OTLP ``AnyValue`` of a plain Python value."""
    if isinstance(raw, bool):
        return {"boolValue": raw}
    if isinstance(raw, int):
        return {"intValue": str(raw)}
    if isinstance(raw, float):
        return {"doubleValue": raw}
    if isinstance(raw, list):
        return {"arrayValue": {"values": [value(v) for v in raw]}}
    if isinstance(raw, dict):
        return {"kvlistValue": {"values": attributes(raw)}}
    return {"stringValue": raw}


def attributes(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP key-value attributes."""
    return [{"key": k, "value": value(v)} for k, v in raw.items()]


def span(
    trace: str,
    number: int,
    name: str,
    parent: int | None = None,
    *,
    start: int = 0,
    end: int = 10,
    error: str | None = None,
    **attrs: Any,
) -> dict[str, Any]:
    """One span; ``gen_ai__operation__name=...`` keyword names become dotted attributes."""
    document: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{number:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + start * MS),
        "endTimeUnixNano": str(T0 + end * MS),
        "attributes": attributes({k.replace("__", "."): v for k, v in attrs.items()}),
    }
    if parent is not None:
        document["parentSpanId"] = f"{parent:016x}"
    if error is not None:
        document["status"] = {"code": 2, "message": error}
    return document


def traces(*spans: dict[str, Any], service: str = "support-app") -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP/JSON."""
    resource = {"attributes": attributes({"service.name": service})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": list(spans)}]}]}


def log(trace: str, span_number: int, event: str, body: dict[str, Any]) -> dict[str, Any]:
    """One GenAI log event (openai-v2 style) parented to a span."""
    return {
        "timeUnixNano": str(T0),
        "traceId": trace,
        "spanId": f"{span_number:016x}",
        "eventName": event,
        "body": value(body),
    }


def logs(*records: dict[str, Any]) -> dict[str, Any]:
    """An ``ExportLogsServiceRequest`` in OTLP/JSON."""
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}


def agent_spans(trace: str, *, agent: str = "support", error: str | None = None) -> list[Any]:
    """An agent span around two model calls (openai-v2 style: no messages on the spans)."""
    chat = {"gen_ai__operation__name": "chat", "gen_ai__request__model": "gpt-4o-mini"}
    return [
        span(
            trace,
            1,
            f"invoke_agent {agent}",
            end=100,
            error=error,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name=agent,
        ),
        span(trace, 2, "chat gpt-4o-mini", 1, start=1, end=40, **chat),
        span(trace, 3, "chat gpt-4o-mini", 1, start=60, end=99, **chat),
    ]


def tool_call_logs(trace: str, *, tool: str = "get_order") -> list[dict[str, Any]]:
    """The log events of the agent's model calls: a tool asked for, its result, the answer."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": tool, "arguments": '{"order_id": "77"}'},
    }
    return [
        log(trace, 2, "gen_ai.user.message", {"content": "Where is order 77?"}),
        log(
            trace,
            2,
            "gen_ai.choice",
            {"index": 0, "message": {"role": "assistant", "tool_calls": [call]}},
        ),
        log(trace, 3, "gen_ai.tool.message", {"id": "call_1", "content": '{"status": "shipped"}'}),
        log(
            trace,
            3,
            "gen_ai.choice",
            {"index": 0, "message": {"role": "assistant", "content": "Order 77 has shipped."}},
        ),
    ]
