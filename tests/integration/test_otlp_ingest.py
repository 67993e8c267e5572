"""Done means (issue 11): an instrumented app pointed at ``arbiter serve`` is all it takes.

The OpenTelemetry SDK's own OTLP/HTTP exporters (``OTLPSpanExporter``, ``OTLPLogExporter``)
send to Arbiter's app served by uvicorn on a free port. An OpenAI client instrumented by
``opentelemetry-instrumentation-openai-v2`` runs a two-turn tool-calling agent against a
local OpenAI-compatible stub: its spans reach ``/v1/traces`` and the log events that hold
the tool call reach ``/v1/logs``, in separate requests. The scored run is read back
through the REST API, with the tool call paired in from the log events.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

openai = pytest.importorskip("openai", reason="needs the openai client (dev extras)")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")
pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http", reason="needs opentelemetry-exporter-otlp-proto-http"
)
pytest.importorskip("opentelemetry.proto", reason="needs opentelemetry-proto (arbiter[otlp])")

from opentelemetry.exporter.otlp.proto.http import Compression  # noqa: E402
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import (  # noqa: E402
    BatchLogRecordProcessor,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402

from arbiter.config import Settings  # noqa: E402
from arbiter.server.app import create_app  # noqa: E402
from arbiter.store import Store  # noqa: E402
from tests.helpers.openai_stub import (  # noqa: E402
    FINAL_ANSWER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_NAME,
    WEATHER_TOOL,
    OpenAIStub,
    serve_openai_stub,
)
from tests.integration.serving import serve_asgi  # noqa: E402

QUESTION = "What is the weather in Paris?"
AGENT = "weather_agent"
INVOKE_AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT}


def get_weather(city: str) -> str:
    """The app's own tool, run between the two model calls."""
    return json.dumps({"city": city, "temp_c": 18, "sky": "sunny"})


@dataclass
class Arbiter:
    """Arbiter's app served over HTTP, and a client of its REST API."""

    url: str
    api: httpx.Client


@dataclass
class Exporters:
    """The app's telemetry: the SDK providers, exporting to Arbiter over OTLP/HTTP."""

    tracer_provider: Any
    logger_provider: Any


@pytest.fixture
def arbiter(tmp_path: Path) -> Iterator[Arbiter]:
    store = Store(f"sqlite:///{tmp_path / 'arbiter.db'}")
    app = create_app(Settings(db_url=store.url, home=tmp_path / "home"), store=store)
    with serve_asgi(app) as url, httpx.Client(base_url=url, timeout=10) as api:
        yield Arbiter(url, api)
    store.close()


HELD_MS = 600_000
"""The batch processors' delay: long enough that only ``force_flush`` exports."""


def _exporters(arbiter: Arbiter, *, compression: Compression, simple: bool) -> Iterator[Exporters]:
    resource = Resource.create({"service.name": "weather-app"})
    spans = OTLPSpanExporter(endpoint=f"{arbiter.url}/v1/traces", compression=compression)
    logs = OTLPLogExporter(endpoint=f"{arbiter.url}/v1/logs", compression=compression)
    tracer_provider = sdk_trace.TracerProvider(resource=resource)
    logger_provider = LoggerProvider(resource=resource)
    if simple:  # every span and log record exported the moment it ends
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    else:
        tracer_provider.add_span_processor(BatchSpanProcessor(spans, schedule_delay_millis=HELD_MS))
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(logs, schedule_delay_millis=HELD_MS)
        )
    yield Exporters(tracer_provider, logger_provider)
    tracer_provider.shutdown()
    logger_provider.shutdown()


@pytest.fixture(params=[Compression.NoCompression, Compression.Gzip], ids=["plain", "gzip"])
def exporters(arbiter: Arbiter, request: pytest.FixtureRequest) -> Iterator[Exporters]:
    """Batch processors that export on ``force_flush`` only."""
    yield from _exporters(arbiter, compression=request.param, simple=False)


@pytest.fixture
def simple_exporters(arbiter: Arbiter) -> Iterator[Exporters]:
    """Simple processors: one request per span and per log record, as each ends."""
    yield from _exporters(arbiter, compression=Compression.NoCompression, simple=True)


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStub]:
    with serve_openai_stub() as served:
        yield served


Instrument = Callable[[Exporters], None]


@pytest.fixture
def openai_v2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Instrument]:
    """Instrument the OpenAI client with content capture (read when ``instrument()`` runs)."""
    module = pytest.importorskip(
        "opentelemetry.instrumentation.openai_v2",
        reason="needs opentelemetry-instrumentation-openai-v2 (dev extras)",
    )
    instrumentor = module.OpenAIInstrumentor()

    def instrument(exporters: Exporters) -> None:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        instrumentor.instrument(
            tracer_provider=exporters.tracer_provider,
            logger_provider=exporters.logger_provider,
        )

    try:
        yield instrument
    finally:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()  # it patches the openai module for the whole process


def run_weather_agent(stub: OpenAIStub, exporters: Exporters) -> None:
    """Two model calls around the app's own tool call, inside one agent span."""
    stub.requests.clear()
    client = openai.OpenAI(base_url=stub.base_url, api_key="dummy-key", max_retries=0)
    tracer = exporters.tracer_provider.get_tracer("weather-app")
    with tracer.start_as_current_span(f"invoke_agent {AGENT}", attributes=INVOKE_AGENT):
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        first = client.chat.completions.create(
            model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
        )
        asked = first.choices[0].message
        messages.append(asked.model_dump(exclude_none=True))
        for call in asked.tool_calls or []:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        client.chat.completions.create(model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL])
    client.close()


def stored_runs(arbiter: Arbiter) -> list[dict[str, Any]]:
    """Every run of the agent, read back through the REST API, newest first."""
    roster = arbiter.api.get("/v1/agents").json()
    assert [entry["name"] for entry in roster["items"]] == [AGENT]
    ledger = arbiter.api.get(f"/v1/agents/{AGENT}/runs").json()
    return [arbiter.api.get(f"/v1/trajectories/{row['id']}").json() for row in ledger["items"]]


def assert_scored_weather_run(run: dict[str, Any]) -> None:
    trajectory = run["trajectory"]
    kinds = [step["kind"] for step in trajectory["steps"]]
    assert kinds == ["llm_call", "tool_call", "llm_call"]
    call = trajectory["steps"][1]
    assert (call["name"], call["call_id"]) == (TOOL_NAME, TOOL_CALL_ID)
    assert call["arguments"] == TOOL_ARGUMENTS
    assert call["result"] == json.loads(get_weather(**TOOL_ARGUMENTS))
    assert [step["model"] for step in trajectory["steps"] if step["kind"] == "llm_call"] == [
        RESPONSE_MODEL,
        RESPONSE_MODEL,
    ]
    assert trajectory["final_answer"] == FINAL_ANSWER
    assert run["source_format"] == "otlp_protobuf"
    assert run["passed"] is True
    assert run["band"] == "healthy"
    verdicts = {score["name"]: score["passed"] for score in run["scores"]}
    assert verdicts["tool_success_rate"] is True
    assert verdicts["answer_present"] is True


def test_an_instrumented_app_exporting_to_arbiter_gets_its_run_scored(
    arbiter: Arbiter, exporters: Exporters, stub: OpenAIStub, openai_v2: Instrument
) -> None:
    openai_v2(exporters)
    run_weather_agent(stub, exporters)
    assert exporters.tracer_provider.force_flush()  # spans first: the run has no tool call yet
    [before] = stored_runs(arbiter)
    assert [s["kind"] for s in before["trajectory"]["steps"]] == ["llm_call", "llm_call"]
    assert exporters.logger_provider.force_flush()  # the log events bring the tool call in
    [run] = stored_runs(arbiter)
    assert run["id"] == before["id"]
    assert_scored_weather_run(run)


def test_log_events_exported_before_the_spans_are_paired_too(
    arbiter: Arbiter, exporters: Exporters, stub: OpenAIStub, openai_v2: Instrument
) -> None:
    openai_v2(exporters)
    run_weather_agent(stub, exporters)
    assert exporters.logger_provider.force_flush()
    assert arbiter.api.get("/v1/agents").json()["total"] == 0  # waiting for the spans
    assert exporters.tracer_provider.force_flush()
    [run] = stored_runs(arbiter)
    assert_scored_weather_run(run)


def test_an_app_exporting_each_span_as_it_ends_gets_one_whole_run(
    arbiter: Arbiter, simple_exporters: Exporters, stub: OpenAIStub, openai_v2: Instrument
) -> None:
    """The model calls' spans and events arrive before their agent span: runs rooted at
    them are stored meanwhile, and replaced by the agent's run when its span ends."""
    openai_v2(simple_exporters)
    run_weather_agent(stub, simple_exporters)
    [run] = stored_runs(arbiter)
    assert_scored_weather_run(run)
    assert arbiter.api.get("/v1/trajectories").json()["total"] == 1


# --- one bad trace of a request: an OTLP partial success, the others stored ------------

GOOD_TRACE = "0af7651916cd43dd8448eb211c80319c"
BAD_TRACE = "1bf7651916cd43dd8448eb211c80319d"


def _overflowing_costs(trace: str) -> list[dict[str, Any]]:
    """An agent whose two model calls cost 1e308 each: their sum is past any float."""
    from tests.helpers.otlp_json import span

    chat = {"gen_ai__operation__name": "chat", "gen_ai__usage__cost": 1e308}
    return [
        span(trace, 1, "invoke_agent spender", end=100, gen_ai__operation__name="invoke_agent"),
        span(trace, 2, "chat m", 1, start=1, end=40, **chat),
        span(trace, 3, "chat m", 1, start=60, end=99, **chat),
    ]


def _two_traces(bad: list[dict[str, Any]]) -> dict[str, Any]:
    from tests.helpers.otlp_json import agent_spans, traces

    return traces(*agent_spans(GOOD_TRACE, agent="good"), *bad)


def _agents(arbiter: Arbiter) -> list[str]:
    return [entry["name"] for entry in arbiter.api.get("/v1/agents").json()["items"]]


@pytest.mark.parametrize(
    ("bad", "rejected", "needle"),
    [
        (_overflowing_costs(BAD_TRACE), 3, "cost_usd"),
        (
            # A span whose id is not 8 bytes: the decoder leaves it out, and its trace.
            [
                *_overflowing_costs(BAD_TRACE)[:2],
                {**_overflowing_costs(BAD_TRACE)[2], "spanId": "abc"},
            ],
            3,  # the malformed span, and the two others of its trace
            "spanId",
        ),
    ],
    ids=["costs-overflow", "malformed-span"],
)
def test_a_bad_trace_in_a_json_export_is_a_partial_success(
    arbiter: Arbiter, bad: list[dict[str, Any]], rejected: int, needle: str
) -> None:
    answer = arbiter.api.post("/v1/traces", json=_two_traces(bad))
    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == str(rejected)
    assert needle in partial["errorMessage"]
    assert BAD_TRACE in partial["errorMessage"] or needle == "spanId"
    assert _agents(arbiter) == ["good"]  # the good trace of the same request is stored


def test_a_bad_trace_in_a_protobuf_export_is_a_partial_success(arbiter: Arbiter) -> None:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    document = _two_traces(_overflowing_costs(BAD_TRACE))
    for block in document["resourceSpans"]:
        for scope in block["scopeSpans"]:
            for each in scope["spans"]:  # protobuf's JSON form writes ids as base64
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in each:
                        each[key] = base64.b64encode(bytes.fromhex(each[key])).decode()
    request = ParseDict(document, ExportTraceServiceRequest())
    answer = arbiter.api.post(
        "/v1/traces",
        content=request.SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/x-protobuf"
    partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_spans == 3
    assert "cost_usd" in partial.error_message
    assert _agents(arbiter) == ["good"]


def test_a_fully_accepted_export_answers_an_empty_response(arbiter: Arbiter) -> None:
    from tests.helpers.otlp_json import agent_spans, traces

    answer = arbiter.api.post("/v1/traces", json=traces(*agent_spans(GOOD_TRACE)))
    assert (answer.status_code, answer.json()) == (200, {})


def test_later_spans_of_a_rejected_trace_are_rejected_too(arbiter: Arbiter) -> None:
    from tests.helpers.otlp_json import span, traces

    first = arbiter.api.post("/v1/traces", json=traces(*_overflowing_costs(BAD_TRACE)))
    assert first.json()["partialSuccess"]["rejectedSpans"] == "3"
    late = span(BAD_TRACE, 9, "chat m", 1, start=2, end=3, gen_ai__operation__name="chat")
    again = arbiter.api.post("/v1/traces", json=traces(late))
    partial = again.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "rejected before" in partial["errorMessage"]
    assert arbiter.api.get("/v1/trajectories").json()["total"] == 0


def test_a_body_that_is_no_export_request_is_still_a_400(arbiter: Arbiter) -> None:
    answer = arbiter.api.post("/v1/traces", json={"resourceSpans": "no"})
    assert answer.status_code == 400
    assert "resourceSpans" in answer.json()["error"]["message"]
