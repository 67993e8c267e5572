"""Done means (issue 9): traces written by real third-party instrumentations import.

An OpenAI client talks to a local OpenAI-compatible stub (tests/helpers/openai_stub.py)
that first asks for ``get_weather {"city": "Paris"}`` and, once the app sends the tool's
result, answers in text. The client is instrumented by code nobody here wrote
(``opentelemetry-instrumentation-openai-v2``, ``openinference-instrumentation-openai``),
whose spans (and log events) are exported over OTLP/HTTP protobuf to a receiver in the test
(tests/helpers/otlp_receiver.py). The bytes it received go through Arbiter's importers.

What each instrumentation really emits (pinned in /work/shared/tools/otel-instrumentation-pins.txt):

- openai-v2 2.3b0: one ``chat <model>`` CLIENT span per call with ``gen_ai.operation.name``,
  ``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.response.finish_reasons``, ``gen_ai.response.id``, ``gen_ai.usage.input_tokens`` /
  ``.output_tokens``; no message or tool-call attribute on the span. Messages are log
  records parented to the span: ``gen_ai.user.message`` / ``gen_ai.assistant.message`` /
  ``gen_ai.tool.message`` per request message and ``gen_ai.choice`` per answer, whose body
  holds ``message.tool_calls[].function.{name, arguments}``. Content and arguments are
  recorded only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (read when
  ``instrument()`` runs); ``OTEL_SEMCONV_STABILITY_OPT_IN`` is not read by this version.
- openinference-openai 0.1.66: one ``ChatCompletion`` span per call, kind ``LLM``, with
  ``llm.model_name`` (the response's model), ``llm.input_messages.N.message.*`` (tool
  results as ``role=tool`` with ``message.tool_call_id``),
  ``llm.output_messages.0.message.tool_calls.0.tool_call.{id, function.name,
  function.arguments}``, ``llm.token_count.prompt / completion / total``, ``llm.tools``,
  ``input.value`` / ``output.value`` (the request and response JSON); no TOOL spans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client (dev extras)")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")
pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http", reason="needs opentelemetry-exporter-otlp-proto-http"
)
pytest.importorskip("opentelemetry.proto", reason="needs opentelemetry-proto (arbiter[otlp])")

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

from arbiter.contract import Trajectory  # noqa: E402
from arbiter.trajectories.openinference import (  # noqa: E402
    looks_like_openinference,
    trajectories_from_openinference,
)
from arbiter.trajectories.otlp import (  # noqa: E402
    PROTOBUF_FORMAT,
    import_otlp,
    trajectories_from_spans,
)
from arbiter.trajectories.spans import LogRecord, Span, decode_otlp_protobuf  # noqa: E402
from tests.helpers.openai_stub import (  # noqa: E402
    FINAL_ANSWER,
    FINAL_USAGE,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_CALL_USAGE,
    TOOL_NAME,
    WEATHER_TOOL,
    OpenAIStub,
    serve_openai_stub,
)
from tests.helpers.otlp_receiver import OtlpReceiver, serve_otlp_receiver  # noqa: E402

QUESTION = "What is the weather in Paris?"
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def get_weather(city: str) -> str:
    """The app's own tool, run between the two model calls."""
    return json.dumps({"city": city, "temp_c": 18, "sky": "sunny"})


TOOL_RESULT = get_weather(**TOOL_ARGUMENTS)


@dataclass
class Telemetry:
    """The providers the instrumentations write to, exporting to the receiver."""

    tracer_provider: Any
    logger_provider: Any
    receiver: OtlpReceiver

    def flush(self) -> None:
        assert self.tracer_provider.force_flush()
        assert self.logger_provider.force_flush()


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStub]:
    with serve_openai_stub() as served:
        yield served


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    with serve_otlp_receiver() as receiver:
        resource = Resource.create({"service.name": "weather-app"})
        tracer_provider = sdk_trace.TracerProvider(resource=resource)
        tracer_provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.traces_endpoint))
        )
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=receiver.logs_endpoint))
        )
        yield Telemetry(tracer_provider, logger_provider, receiver)
        tracer_provider.shutdown()
        logger_provider.shutdown()


def run_weather_agent(
    stub: OpenAIStub, telemetry: Telemetry, *, agent_span: str, attributes: dict[str, Any]
) -> None:
    """Two model calls around the app's own tool call, inside one agent span."""
    stub.requests.clear()
    client = openai.OpenAI(base_url=stub.base_url, api_key="dummy-key", max_retries=0)
    tracer = telemetry.tracer_provider.get_tracer("weather-app")
    with tracer.start_as_current_span(agent_span, attributes=attributes):
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        first = client.chat.completions.create(
            model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
        )
        asked = first.choices[0].message
        messages.append(asked.model_dump(exclude_none=True))
        for call in asked.tool_calls or []:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        final = client.chat.completions.create(
            model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
        )
    client.close()
    telemetry.flush()
    # The app really ran the loop: the second request carried the tool's result.
    assert [len(r["messages"]) for r in stub.requests] == [1, 3]
    assert final.choices[0].message.content == FINAL_ANSWER


def received_spans(receiver: OtlpReceiver) -> list[Span]:
    spans: list[Span] = []
    for index, export in enumerate(receiver.received("traces")):
        assert export.content_type == "application/x-protobuf"
        spans += decode_otlp_protobuf(export.body, where=f"traces export {index}")[0]
    return spans


def assert_weather_run(trajectory: Trajectory) -> None:
    """The tool call, its arguments, the model and the tokens the stub reported."""
    [call] = trajectory.tool_calls
    assert call.name == TOOL_NAME
    assert call.arguments == TOOL_ARGUMENTS
    assert call.call_id == TOOL_CALL_ID
    calls = trajectory.llm_calls
    assert [c.model for c in calls] == [RESPONSE_MODEL, RESPONSE_MODEL]
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [
        (TOOL_CALL_USAGE.prompt_tokens, TOOL_CALL_USAGE.completion_tokens),
        (FINAL_USAGE.prompt_tokens, FINAL_USAGE.completion_tokens),
    ]
    totals = trajectory.totals()
    assert totals.input_tokens == TOOL_CALL_USAGE.prompt_tokens + FINAL_USAGE.prompt_tokens
    assert totals.output_tokens == TOOL_CALL_USAGE.completion_tokens + FINAL_USAGE.completion_tokens


# --- openinference-instrumentation-openai -> the OpenInference importer -----------------


Instrument = Callable[[bool], None]


@pytest.fixture
def openinference_openai(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Instrument]:
    """Instrument, hiding the output messages or not (``TraceConfig`` reads the setting)."""
    module = pytest.importorskip(
        "openinference.instrumentation.openai",
        reason="needs openinference-instrumentation-openai (dev extras)",
    )
    instrumentor = module.OpenAIInstrumentor()

    def instrument(hide_outputs: bool) -> None:
        for name in ("OPENINFERENCE_HIDE_OUTPUT_MESSAGES", "OPENINFERENCE_HIDE_OUTPUTS"):
            monkeypatch.setenv(name, "true" if hide_outputs else "false")
        instrumentor.instrument(tracer_provider=telemetry.tracer_provider)

    try:
        yield instrument
    finally:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()  # it patches the openai module for the whole process


AGENT_SPAN = {"openinference.span.kind": "AGENT", "agent.name": "weather_agent"}


def test_openinference_openai_traces_import_with_the_tool_call_and_its_arguments(
    stub: OpenAIStub, telemetry: Telemetry, openinference_openai: Instrument
) -> None:
    openinference_openai(False)
    run_weather_agent(stub, telemetry, agent_span="weather_agent", attributes=AGENT_SPAN)
    spans = received_spans(telemetry.receiver)
    assert looks_like_openinference(spans)
    # The instrumentation itself writes LLM spans only: the tool call is in their messages.
    kinds = sorted(str(s.attributes.get("openinference.span.kind")) for s in spans)
    assert kinds == ["AGENT", "LLM", "LLM"]

    [trajectory] = trajectories_from_openinference(spans)
    assert_weather_run(trajectory)
    assert trajectory.agent.name == "weather_agent"
    assert trajectory.tool_calls[0].result == json.loads(TOOL_RESULT)
    assert trajectory.final_answer == FINAL_ANSWER
    assert trajectory.status == "completed"
    first, second = trajectory.llm_calls
    assert [(m.role, m.content) for m in first.input_messages] == [("user", QUESTION)]
    assert [m.role for m in second.input_messages] == ["user", "assistant", "tool"]


def test_openinference_openai_hiding_output_messages_loses_the_tool_call(
    stub: OpenAIStub, telemetry: Telemetry, openinference_openai: Instrument
) -> None:
    """With OPENINFERENCE_HIDE_OUTPUT_MESSAGES the spans carry no tool call to import."""
    openinference_openai(True)
    run_weather_agent(stub, telemetry, agent_span="weather_agent", attributes=AGENT_SPAN)
    [trajectory] = trajectories_from_openinference(received_spans(telemetry.receiver))
    assert trajectory.tool_calls == []
    assert [c.model for c in trajectory.llm_calls] == [RESPONSE_MODEL, RESPONSE_MODEL]


# --- opentelemetry-instrumentation-openai-v2 -> the OTLP importer -----------------------


@pytest.fixture
def openai_v2(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> Iterator[Instrument]:
    """Instrument with content capture on or off (the setting is read by ``instrument()``)."""
    module = pytest.importorskip(
        "opentelemetry.instrumentation.openai_v2",
        reason="needs opentelemetry-instrumentation-openai-v2 (dev extras)",
    )
    instrumentor = module.OpenAIInstrumentor()

    def instrument(capture_content: bool) -> None:
        monkeypatch.setenv(CAPTURE_CONTENT, "true" if capture_content else "false")
        instrumentor.instrument(
            tracer_provider=telemetry.tracer_provider,
            logger_provider=telemetry.logger_provider,
        )

    try:
        yield instrument
    finally:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()


INVOKE_AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}


def received_logs(receiver: OtlpReceiver) -> list[LogRecord]:
    logs: list[LogRecord] = []
    for index, export in enumerate(receiver.received("logs")):
        logs += decode_otlp_protobuf(export.body, where=f"logs export {index}", kind="logs")[1]
    return logs


def test_openai_v2_traces_and_log_events_import_with_the_tool_call_and_its_arguments(
    stub: OpenAIStub, telemetry: Telemetry, openai_v2: Instrument
) -> None:
    openai_v2(True)
    run_weather_agent(
        stub, telemetry, agent_span="invoke_agent weather_agent", attributes=INVOKE_AGENT
    )
    spans, logs = received_spans(telemetry.receiver), received_logs(telemetry.receiver)
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2
    # The instrumentation writes the messages as log events parented to the chat spans.
    assert {r.span_id for r in logs} == {s.span_id for s in chats}
    events = [r.event_name for r in logs]
    assert events.count("gen_ai.choice") == 2
    assert "gen_ai.tool.message" in events

    [trajectory] = trajectories_from_spans(spans, logs, source_format=PROTOBUF_FORMAT)
    assert_weather_run(trajectory)
    assert trajectory.agent.name == "weather_agent"
    assert trajectory.tool_calls[0].result == json.loads(TOOL_RESULT)
    assert trajectory.final_answer == FINAL_ANSWER


def test_openai_v2_trace_body_alone_has_model_and_tokens_but_no_tool_call(
    stub: OpenAIStub, telemetry: Telemetry, openai_v2: Instrument
) -> None:
    """What the /v1/traces body carries by itself: the tool call lives in the log events."""
    openai_v2(True)
    run_weather_agent(
        stub, telemetry, agent_span="invoke_agent weather_agent", attributes=INVOKE_AGENT
    )
    [export] = telemetry.receiver.received("traces")
    [trajectory] = import_otlp(export.body, export.content_type)
    assert trajectory.tool_calls == []
    assert [c.model for c in trajectory.llm_calls] == [RESPONSE_MODEL, RESPONSE_MODEL]
    assert trajectory.totals().input_tokens == (
        TOOL_CALL_USAGE.prompt_tokens + FINAL_USAGE.prompt_tokens
    )


def test_openai_v2_without_content_capture_records_the_tool_name_but_no_arguments(
    stub: OpenAIStub, telemetry: Telemetry, openai_v2: Instrument
) -> None:
    """The instrumentation's default: tool calls keep their name and id, never arguments."""
    openai_v2(False)
    run_weather_agent(
        stub, telemetry, agent_span="invoke_agent weather_agent", attributes=INVOKE_AGENT
    )
    spans, logs = received_spans(telemetry.receiver), received_logs(telemetry.receiver)
    bodies = json.dumps([r.body for r in logs])
    assert "Paris" not in bodies  # neither the question nor the arguments were recorded
    [trajectory] = trajectories_from_spans(spans, logs, source_format=PROTOBUF_FORMAT)
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id) == (TOOL_NAME, TOOL_CALL_ID)
    assert call.arguments is None, call.arguments
    assert trajectory.final_answer is None


# --- files written by the real tools, through the loader (format told, runs numbered) ---


def test_an_openinference_protobuf_file_is_read_as_openinference_through_the_loader(
    stub: OpenAIStub, telemetry: Telemetry, openinference_openai: Instrument, tmp_path: Any
) -> None:
    """A ``.pb`` file is told by its suffix; its OpenInference traces keep their tool call."""
    from arbiter.trajectories.loader import load_runs

    openinference_openai(False)
    run_weather_agent(stub, telemetry, agent_span="weather_agent", attributes=AGENT_SPAN)
    [export] = telemetry.receiver.received("traces")
    file = tmp_path / "phoenix.pb"
    file.write_bytes(export.body)
    [run] = load_runs([file])
    assert run.trajectory is not None
    assert_weather_run(run.trajectory)
    assert run.trajectory.final_answer == FINAL_ANSWER


def _sdk_conversation(stub: OpenAIStub, tool_result: str) -> dict[str, Any]:
    """The conversation an app keeps with the real SDK: its own messages, and each
    answer's message as the SDK dumps it (``refusal``, ``annotations``, ``audio``,
    ``function_call`` and the tool calls' ``type`` included)."""
    stub.requests.clear()
    client = openai.OpenAI(base_url=stub.base_url, api_key="dummy-key", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(
        model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
    )
    asked = first.choices[0].message
    messages.append(asked.model_dump(mode="json"))
    for call in asked.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_result})
    final = client.chat.completions.create(
        model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
    )
    messages.append(final.choices[0].message.model_dump(mode="json"))
    client.close()
    usage = final.usage.model_dump(mode="json") if final.usage is not None else None
    return {"id": first.id, "model": first.model, "usage": usage, "messages": messages}


def test_a_conversation_dumped_by_the_openai_sdk_imports_with_its_extra_fields(
    stub: OpenAIStub, tmp_path: Any
) -> None:
    from arbiter.trajectories.loader import detect_format, load_runs

    record = _sdk_conversation(stub, TOOL_RESULT)
    assert "refusal" in record["messages"][1]  # what the SDK writes beside the message
    file = tmp_path / "chats.jsonl"
    file.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert detect_format(file) == "openai_messages"
    [run] = load_runs([file])
    assert run.trajectory is not None
    assert run.warnings == []
    [call] = run.trajectory.tool_calls
    assert (call.name, call.call_id, call.arguments) == (TOOL_NAME, TOOL_CALL_ID, TOOL_ARGUMENTS)
    assert (call.result, call.error) == (TOOL_RESULT, None)
    assert run.trajectory.final_answer == FINAL_ANSWER
    assert run.trajectory.status == "completed"
    assert run.trajectory.metadata["usage"] == record["usage"]  # kept, not refused


def test_an_error_the_app_returned_as_the_tool_result_fails_the_call(
    stub: OpenAIStub, tmp_path: Any
) -> None:
    from arbiter.trajectories.loader import load_runs

    record = _sdk_conversation(stub, json.dumps({"error": "timeout"}))
    file = tmp_path / "chats.jsonl"
    file.write_text(json.dumps(record) + "\n", encoding="utf-8")
    [run] = load_runs([file])
    assert run.trajectory is not None
    [call] = run.trajectory.tool_calls
    assert call.error == "timeout"
    assert not call.succeeded
