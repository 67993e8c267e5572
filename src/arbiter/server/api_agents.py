"""REST: agents (the roster, one agent, its runs ledger), trajectories, and OTLP ingest.

Thin routes: :mod:`arbiter.service.trajectories` imports and scores a submitted run,
:mod:`arbiter.service.trace_ingest` pairs an exporter's spans and log records,
:mod:`arbiter.service.agent_roster` computes the figures. ``POST /v1/traces`` and
``POST /v1/logs`` read the bodies the OpenTelemetry OTLP/HTTP exporters send (protobuf
or JSON, gzip or not) and answer as an OTLP receiver does (an export response in the
request's encoding: empty, or a partial success naming the spans one bad trace cost),
so ``OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8080`` is all an instrumented app needs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from arbiter.contract import FlowRun, RunKind, StoredTrajectory, Trajectory
from arbiter.server.api_trust import default_thresholds_of, judge_after_answer
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_store
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.pagination import Page, PageParams, page_params
from arbiter.server.responses import ApiJSONResponse
from arbiter.service.agent_roster import (
    AgentDetail,
    AgentSummary,
    LedgerRow,
    agent_detail,
    agent_ledger,
    agent_roster,
    ledger_row,
)
from arbiter.service.trace_ingest import TraceIngest, is_otlp_media_type
from arbiter.service.trajectories import (
    AgentRunScoring,
    agent_run_scoring,
    import_record,
    named_run,
    run_of,
    score_and_store,
    submit_formats,
)
from arbiter.store import Store
from arbiter.store.trajectory_repository import get_trajectory, list_trajectories
from arbiter.trajectories.formats import TrajectoryFormatRegistry
from arbiter.trajectories.otlp import export_response

__all__ = ["TrajectoriesOut", "TrajectorySubmission", "router"]

router = APIRouter(prefix="/v1", default_response_class=ApiJSONResponse)

StoreDep = Annotated[Store, Depends(app_store)]
Who = Annotated[Principal, Depends(principal)]
Paging = Annotated[PageParams, Depends(page_params)]
AgentName = Annotated[str, Path(min_length=1, max_length=1000, description="The agent's name.")]
KindFilter = Annotated[
    RunKind | None, Query(description="Only runs of this kind: trajectory or flow.")
]
BandFilter = Annotated[
    Literal["healthy", "review", "danger", "none"] | None,
    Query(description="Only runs in this band (none: not evaluated)."),
]


def _listed_formats(schema: dict[str, Any]) -> None:
    """The formats a submission may name, listed in the OpenAPI schema when it is made
    (from the formats registered then: built-ins and installed plugins)."""
    names = list(submit_formats())
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "string":
            option["enum"] = names


class TrajectorySubmission(BaseModel):
    """One agent run to score and store: a trajectory, a flow run, or an importer's record."""

    model_config = ConfigDict(extra="forbid")

    trajectory: Trajectory | None = None
    """The run, in Arbiter's own ``Trajectory`` shape."""
    flow: FlowRun | None = None
    """A flow run, in Arbiter's own ``FlowRun`` shape."""
    record: JsonValue = None
    """A record of an importer's format: an OpenAI conversation (``{"messages": [...]}``),
    a τ-bench result (or a list of them), τ²-bench results, an OTLP or OpenInference
    export request (``{"resourceSpans": [...]}``), a platform record (with ``mapping``)."""
    format: str | None = Field(default=None, max_length=100, json_schema_extra=_listed_formats)
    """The record's format (``trajectory``, ``flow`` or a registered trajectory format's
    name); default: told from the record."""
    mapping: str | None = Field(default=None, max_length=100)
    """The shipped mapping of the ``mapping`` format (``uderia_turn``)."""
    agent: str | None = Field(default=None, min_length=1, max_length=1000)
    """The agent's name to give the runs (a record that names none, such as an OpenAI
    conversation, lands on ``unnamed`` otherwise); it replaces the name a record gives."""
    agent_version: str | None = Field(default=None, min_length=1, max_length=1000)
    """The agent's version to give the runs."""
    assertions: dict[str, JsonValue] = Field(default_factory=dict)
    """The case's assertions to score against (``require_tools_subset``,
    ``max_cost_usd``, ...), over the default thresholds."""
    input: dict[str, JsonValue] | None = None
    """The query the agent was asked (``{"query": ...}``), for the scorers that read it."""

    @model_validator(mode="after")
    def _one_run(self) -> TrajectorySubmission:
        given = [self.trajectory is not None, self.flow is not None, self.record is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of 'trajectory', 'flow' and 'record'")
        return self


class TrajectoriesOut(BaseModel):
    """The runs a submission stored (a record may hold several)."""

    items: list[StoredTrajectory]
    """Each stored run with its verdict and score set."""


def app_scoring(request: Request) -> AgentRunScoring:
    """The app's scoring of agent runs, built on first use."""
    scoring = getattr(request.app.state, "agent_scoring", None)
    if scoring is None:
        scoring = request.app.state.agent_scoring = agent_run_scoring()
        scoring.defaults = default_thresholds_of(app_store(request))
    assert isinstance(scoring, AgentRunScoring)
    return scoring


def app_formats(request: Request) -> TrajectoryFormatRegistry:
    """The app's trajectory formats (built-ins and installed plugins), found on first use."""
    formats = getattr(request.app.state, "trajectory_formats", None)
    if formats is None:
        formats = request.app.state.trajectory_formats = TrajectoryFormatRegistry.default()
    assert isinstance(formats, TrajectoryFormatRegistry)
    return formats


Formats = Annotated[TrajectoryFormatRegistry, Depends(app_formats)]


def app_ingest(
    request: Request,
    store: StoreDep,
    scoring: Annotated[AgentRunScoring, Depends(app_scoring)],
    formats: Formats,
) -> TraceIngest:
    """The app's OTLP ingest, made on first use (its buffer of recent traces is in the
    store, shared by every server process over it)."""
    ingest = getattr(request.app.state, "trace_ingest", None)
    if ingest is None:
        ingest = TraceIngest(store, scoring, formats=formats)
        request.app.state.trace_ingest = ingest
    assert isinstance(ingest, TraceIngest)
    return ingest


@router.get("/agents", tags=["agents"], responses=error_responses(400, 401))
def agents(store: StoreDep, who: Who, page: Paging) -> Page[AgentSummary]:
    """The roster: one entry per agent and per flow, the worst health first."""
    roster = agent_roster(store, viewer=who.viewer)
    items = roster[page.offset : page.offset + page.limit]
    return Page[AgentSummary](items=items, total=len(roster), next=page.next_cursor(len(roster)))


@router.get("/agents/{name}", tags=["agents"], responses=error_responses(401, 404))
def agent(name: AgentName, store: StoreDep, who: Who, kind: KindFilter = None) -> AgentDetail:
    """One agent: pass rate, health, volume, trend, and a figure per scorer (dimension)."""
    found = agent_detail(store, name, kind=kind, viewer=who.viewer)
    if found is None:
        raise ApiError(404, f"no agent named {name[:200]!r} has a run this key may see")
    return found


@router.get("/agents/{name}/runs", tags=["agents"], responses=error_responses(400, 401))
def agent_runs(
    name: AgentName,
    store: StoreDep,
    who: Who,
    page: Paging,
    kind: KindFilter = None,
    band: BandFilter = None,
) -> Page[LedgerRow]:
    """An agent's runs ledger, newest first: each run's verdict and a chip per verdict."""
    rows, total = agent_ledger(
        store,
        name,
        kind=kind,
        band=band,
        viewer=who.viewer,
        offset=page.offset,
        limit=page.limit,
    )
    return Page[LedgerRow](items=rows, total=total, next=page.next_cursor(total))


@router.post(
    "/trajectories",
    status_code=201,
    tags=["agents"],
    responses=error_responses(400, 401, 413),
)
async def submit_trajectory(
    request: Request,
    body: TrajectorySubmission,
    store: StoreDep,
    who: Who,
    scoring: Annotated[AgentRunScoring, Depends(app_scoring)],
    formats: Formats,
) -> TrajectoriesOut:
    """Score one agent run with the deterministic trajectory scorers and store it."""
    if body.format is not None and body.format not in submit_formats(formats):
        listed = ", ".join(submit_formats(formats))
        raise ApiError(
            422, f"unknown format {body.format[:100]!r}; expected one of {listed}", field="format"
        )
    subject = body.trajectory or body.flow
    if subject is not None:
        runs = [run_of(subject)]
    else:
        runs = import_record(
            body.record, format=body.format, mapping=body.mapping, registry=formats
        )
    if not runs:
        raise ApiError(400, "the record holds no agent run", field="body.record")
    runs = [named_run(run, body.agent, body.agent_version) for run in runs]
    stored = await score_and_store(
        store,
        runs,
        scoring=scoring,
        owner=who.owner,
        assertions=body.assertions,
        input=body.input,
    )
    judge_after_answer(request, store, stored, owner=who.owner, input=body.input)
    return TrajectoriesOut(items=stored)


@router.get("/trajectories", tags=["agents"], responses=error_responses(400, 401))
def trajectories(
    store: StoreDep,
    who: Who,
    page: Paging,
    agent: Annotated[str | None, Query(max_length=1000, description="Only this agent.")] = None,
    kind: KindFilter = None,
    band: BandFilter = None,
) -> Page[LedgerRow]:
    """Every stored run the key may see, newest first, as ledger rows."""
    records, total = list_trajectories(
        store,
        agent=agent,
        kind=kind,
        band=band,
        viewer=who.viewer,
        offset=page.offset,
        limit=page.limit,
    )
    return Page[LedgerRow](
        items=[ledger_row(r) for r in records], total=total, next=page.next_cursor(total)
    )


@router.get("/trajectories/{run_id}", tags=["agents"], responses=error_responses(401, 404))
def trajectory(
    run_id: Annotated[str, Path(min_length=1, max_length=40, description="The run's id.")],
    store: StoreDep,
    who: Who,
) -> StoredTrajectory:
    """One stored run: the run itself, its verdict, and every scorer's verdict."""
    found = get_trajectory(store, run_id, viewer=who.viewer)
    if found is None:
        raise ApiError(404, f"no agent run {run_id!r} this key may see")
    return found


_OTLP_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}
_OTLP_ANSWER: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Accepted: an export response in the request's encoding, empty "
        "when every span was taken, else its partial_success (rejectedSpans or "
        "rejectedLogRecords, and an errorMessage naming why).",
        "content": {
            "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": {"type": "object"}},
        },
    },
    **error_responses(400, 401, 413, 415, validated=False),
}


async def _export(request: Request, ingest: TraceIngest, who: Principal, kind: str) -> Response:
    content_type = request.headers.get("content-type")
    if not is_otlp_media_type(content_type):
        raise ApiError(
            415,
            f"unsupported content type {(content_type or '')[:80]!r}; "
            "expected application/x-protobuf or application/json",
        )
    assert content_type is not None
    report = await ingest.export(
        await request.body(),
        content_type,
        content_encoding=request.headers.get("content-encoding"),
        kind="logs" if kind == "logs" else "traces",
        owner=who.owner,
    )
    judge_after_answer(request, ingest.store, report.stored, owner=who.owner)
    # An export response in the request's encoding: empty when everything was taken, else
    # its partial_success (rejected spans or log records, and why).
    body, media = export_response(
        "logs" if kind == "logs" else "traces",
        content_type,
        rejected=report.rejected,
        message=report.error_message,
    )
    return Response(content=body, media_type=media)


@router.post(
    "/traces",
    tags=["otlp"],
    response_class=Response,
    responses=_OTLP_ANSWER,
    openapi_extra=_OTLP_BODY,
)
async def export_traces(
    request: Request, who: Who, ingest: Annotated[TraceIngest, Depends(app_ingest)]
) -> Response:
    """OTLP/HTTP traces: import each trace's agent runs, score them online, store them."""
    return await _export(request, ingest, who, "traces")


@router.post(
    "/logs",
    tags=["otlp"],
    response_class=Response,
    responses=_OTLP_ANSWER,
    openapi_extra=_OTLP_BODY,
)
async def export_logs(
    request: Request, who: Who, ingest: Annotated[TraceIngest, Depends(app_ingest)]
) -> Response:
    """OTLP/HTTP logs: GenAI log events (chat messages, tool calls) join their trace's runs."""
    return await _export(request, ingest, who, "logs")
