"""REST: trust per agent, the assurance inbox, human review, votes, backtests, the gate.

Thin routes over :mod:`arbiter.service.trust`, :mod:`arbiter.service.inbox`,
:mod:`arbiter.service.votes`, :mod:`arbiter.service.backtest` and
:mod:`arbiter.service.grounding_gate` (the same functions ``arbiter gate-review`` uses).
Every route is behind the API key; a key sees and acts on its own agents' records (an
admin key, or an open server, on everyone's), and another owner's record is "not
found".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from arbiter.config import Settings
from arbiter.contract import StoredTrajectory, ToolCall
from arbiter.contract.gate import GateDecision, GateMode, GateScope, ParkedStatus
from arbiter.contract.trust import JudgeRuling, TrustEvent, TrustStatus, Vote
from arbiter.errors import InputError
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_settings, app_store
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.pagination import keyset_before, keyset_next
from arbiter.server.responses import ApiJSONResponse
from arbiter.service.backtest import BacktestReport, parse_thresholds, run_backtest
from arbiter.service.grounding_gate import (
    check_answer,
    list_parked_answers,
    resolve_parked_answer,
    scope_judge,
)
from arbiter.service.inbox import ack_event, inbox, unacked_count
from arbiter.service.trust import (
    HistoryItem,
    agent_trust,
    is_frozen,
    trust_history,
    trust_policy,
)
from arbiter.service.trust_judging import (
    AgentJudges,
    IngestJudges,
    agent_judges,
    set_agent_judges,
)
from arbiter.service.trust_queue import AmbiguousTail, ambiguous_tail, recent_rulings
from arbiter.service.trust_thresholds import (
    ThresholdsView,
    ingest_defaults,
    set_thresholds,
    thresholds_view,
)
from arbiter.service.votes import VoteAlignment, cast_vote, vote_alignment
from arbiter.store import Store
from arbiter.store.trust_repository import append_event
from arbiter.trust import parse_policy, policy_from_mapping

__all__ = ["app_ingest_judges", "default_thresholds_of", "judge_after_answer", "router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", default_response_class=ApiJSONResponse)

StoreDep = Annotated[Store, Depends(app_store)]
SettingsDep = Annotated[Settings, Depends(app_settings)]
Who = Annotated[Principal, Depends(principal)]
AgentName = Annotated[str, Path(min_length=1, max_length=1000, description="The agent's name.")]
OwnerQuery = Annotated[
    str | None,
    Query(max_length=40, description="Admin only: the owner (API key id) whose agent to read."),
]


def _owner(who: Principal, owner: str | None) -> str | None:
    if owner is not None and not who.admin:
        raise ApiError(403, "only an admin key may read another owner's agent", field="query.owner")
    return owner if owner is not None else who.owner


@router.get("/agents/{name}/trust", tags=["trust"], responses=error_responses(401, 403, 404))
def agent_trust_status(
    name: AgentName, store: StoreDep, who: Who, settings: SettingsDep, owner: OwnerQuery = None
) -> TrustStatus:
    """The agent's trust: state, conduct with its interval, integrity, and whether a
    platform may let it act unattended (``autonomous``)."""
    found = agent_trust(store, name, owner=_owner(who, owner), policy=trust_policy(settings))
    if found is None:
        raise ApiError(404, f"no agent named {name[:200]!r} has a run this key may see")
    return found


@router.get("/agents/{name}/trust/history", tags=["trust"], responses=error_responses(401, 403))
def agent_trust_history(
    name: AgentName, store: StoreDep, who: Who, owner: OwnerQuery = None
) -> list[HistoryItem]:
    """The agent's trust history in time order: trips, freezes, parked answers and their
    reviews, acknowledgements."""
    return trust_history(store, name, owner=_owner(who, owner))


def app_ingest_judges(request: Request) -> IngestJudges | None:
    """The app's judges of ingested runs (``app.state.ingest_judges`` when given), built
    on first use from its settings; None when no judge panel is configured."""
    state = request.app.state
    if not hasattr(state, "ingest_judges"):
        state.ingest_judges = IngestJudges.build(app_settings(request))
    judges = state.ingest_judges
    return judges if isinstance(judges, IngestJudges) else None


def judge_after_answer(
    request: Request,
    store: Store,
    records: Sequence[StoredTrajectory],
    *,
    owner: str | None,
    input: Mapping[str, Any] | None = None,
) -> None:
    """Hand the ingest's stored runs to the judges in the background: the ingest answers
    without waiting for them, and no failure of theirs reaches it."""
    try:
        judges = app_ingest_judges(request)
        if judges is not None and records:
            judges.submit(store, records, owner=owner, input=input)
    except Exception as exc:  # fail open: ingest never sees the judges
        log.warning("judges on ingest not started: %s", exc)


class JudgesBody(BaseModel):
    """An agent's judge setting."""

    model_config = ConfigDict(extra="forbid")

    judges: Literal["inherit", "on", "off"] = "inherit"
    """``inherit`` the deployment's default, or ``on`` / ``off`` for this agent."""
    sample_rate: float | None = Field(default=None, allow_inf_nan=False)
    """Share of its clean runs judged too (clamped to [0, 1]); null: the default."""


@router.get("/agents/{name}/judges", tags=["trust"], responses=error_responses(401, 403))
def agent_judges_setting(
    name: AgentName, store: StoreDep, who: Who, settings: SettingsDep, owner: OwnerQuery = None
) -> AgentJudges:
    """Whether the judge panels run on the agent's ingested runs, and at what sample rate."""
    return agent_judges(store, name, owner=_owner(who, owner), settings=settings)


@router.put("/agents/{name}/judges", tags=["trust"], responses=error_responses(400, 401, 403))
def put_agent_judges(
    name: AgentName,
    body: JudgesBody,
    store: StoreDep,
    who: Who,
    settings: SettingsDep,
    owner: OwnerQuery = None,
) -> AgentJudges:
    """Set the agent's judges (inherit, on, off) and sample rate; recorded with who."""
    return set_agent_judges(
        store,
        name,
        owner=_owner(who, owner),
        judges=body.judges,
        sample_rate=body.sample_rate,
        by=who.key_id or "server",
        settings=settings,
    )


def default_thresholds_of(store: Store) -> Callable[[], Mapping[str, Any]]:
    """What the ingest scores each run against under its own assertions: the deployment's
    default band thresholds, read for each run (a change applies to the next one); a
    store that cannot answer leaves the shipped defaults (a log line)."""

    def read() -> Mapping[str, Any]:
        try:
            return ingest_defaults(store)
        except Exception as exc:  # the shipped defaults stand: ingest goes on
            log.warning("default band thresholds not read: %s", exc)
            return {}

    return read


@router.get("/trust/thresholds", tags=["trust"], responses=error_responses(401))
def get_thresholds(store: StoreDep, who: Who) -> ThresholdsView:
    """The default band thresholds every ingested run is scored against (a case's own
    assertions override them metric by metric)."""
    return thresholds_view(store)


class ThresholdsBody(BaseModel):
    """New default band thresholds: a preset, and lines of your own over it."""

    model_config = ConfigDict(extra="forbid")

    preset: Literal["strict", "balanced", "lenient"] = "balanced"
    """The preset underneath (``balanced``: the shipped defaults)."""
    thresholds: dict[str, JsonValue] = Field(default_factory=dict, max_length=200)
    """``{metric: {healthy, danger}}``, a bare number (the danger line) or ``"off"``."""


@router.put("/trust/thresholds", tags=["trust"], responses=error_responses(400, 401, 403))
def put_thresholds(body: ThresholdsBody, store: StoreDep, who: Who) -> ThresholdsView:
    """Set the default band thresholds (an admin key): in force from the next ingested
    run; runs stored before keep their bands."""
    if not who.admin:
        raise ApiError(403, "only an admin key may set the deployment's thresholds")
    return set_thresholds(
        store,
        preset=body.preset,
        thresholds=body.thresholds,
        by=who.key_id or "server",
        where="body.thresholds",
    )


class InboxPage(BaseModel):
    """A page of the inbox, newest first."""

    items: list[TrustEvent]
    """The events."""
    unacked: int
    """Events nobody acknowledged (of this key's agents)."""
    next: str | None = None
    """The cursor of the next page, or null on the last one."""


@router.get("/assurance/inbox", tags=["assurance"], responses=error_responses(400, 401))
def assurance_inbox(
    store: StoreDep,
    who: Who,
    agent: Annotated[str | None, Query(max_length=1000, description="Only this agent.")] = None,
    kind: Annotated[str | None, Query(max_length=40, description="Only this kind.")] = None,
    unacked: Annotated[bool, Query(description="Only events not acknowledged.")] = False,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many.")] = 50,
    cursor: Annotated[str | None, Query(max_length=100, description="From a page's next.")] = None,
) -> InboxPage:
    """Trust events of the key's agents (trips, parked answers, red-team breaches, flags...)."""
    before = keyset_before(cursor)
    items = inbox(
        store,
        viewer=who.viewer,
        agent=agent,
        kind=kind,
        unacked=unacked,
        before=before,
        limit=limit,
    )
    return InboxPage(
        items=items,
        unacked=unacked_count(store, viewer=who.viewer),
        next=keyset_next(items, limit),
    )


class NoteBody(BaseModel):
    """An optional note."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=10_000)
    """Why, in your words."""


EventId = Annotated[int, Path(ge=1, le=2**53, description="The event's number.")]


@router.post(
    "/assurance/inbox/{event_id}/ack", tags=["assurance"], responses=error_responses(400, 401, 404)
)
def assurance_ack(
    event_id: EventId, store: StoreDep, who: Who, body: NoteBody | None = None
) -> TrustEvent:
    """Acknowledge an event (once)."""
    return ack_event(
        store,
        event_id,
        by=who.key_id or "server",
        note=(body or NoteBody()).note,
        viewer=who.viewer,
    )


class ReviewItem(BaseModel):
    """A parked answer awaiting (or past) review; its text only on request."""

    decision_id: str
    created_at: datetime
    status: ParkedStatus
    owner: str | None = None
    question: str | None = None
    """What was asked (with ``include_content`` only)."""
    answer: str | None = None
    """The withheld original (with ``include_content`` only)."""
    reviewer: str | None = None
    resolution: str | None = None
    note: str | None = None


def _review_item(item: Any, content: bool) -> ReviewItem:
    review = item.review
    return ReviewItem(
        decision_id=item.decision.id,
        created_at=item.decision.created_at,
        status=item.status,
        owner=item.decision.owner,
        question=item.parked.question if content else None,
        answer=item.parked.answer if content else None,
        reviewer=review.reviewer if review else None,
        resolution=review.resolution if review else None,
        note=review.note if review else None,
    )


@router.get("/assurance/reviews", tags=["assurance"], responses=error_responses(401))
def assurance_reviews(
    store: StoreDep,
    who: Who,
    settings: SettingsDep,
    status: Annotated[
        Literal["pending", "released", "discarded", "all"], Query(description="Which to list.")
    ] = "pending",
    include_content: Annotated[bool, Query(description="Include the parked text.")] = False,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many.")] = 100,
) -> list[ReviewItem]:
    """Answers the gate parked for a person, newest first; a settled one expires from the
    queue after ``ARBITER_TRUST_REVIEW_TTL_DAYS``, a pending one never."""
    items = list_parked_answers(
        store,
        owner=who.owner,
        everyone=who.admin,
        status=None if status == "all" else status,
        limit=limit,
        settled_ttl_days=settings.trust_review_ttl_days,
    )
    return [_review_item(item, include_content) for item in items]


class ReviewBody(BaseModel):
    """A reviewer's decision."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=10_000)
    """Why."""
    release_original: bool = False
    """Approve only: answer with the withheld original, for the platform to deliver
    (append-only: what was delivered before is not rewritten)."""


DecisionId = Annotated[str, Path(min_length=1, max_length=64, description="The gate decision.")]


@router.post(
    "/assurance/reviews/{decision_id}/{verdict}",
    tags=["assurance"],
    responses=error_responses(400, 401, 404),
)
def assurance_review(
    decision_id: DecisionId,
    verdict: Annotated[Literal["approve", "reject"], Path(description="approve or reject")],
    store: StoreDep,
    who: Who,
    body: ReviewBody | None = None,
) -> ReviewItem:
    """Approve (release) or reject (keep withheld) a parked answer, once."""
    given = body or ReviewBody()
    item = resolve_parked_answer(
        store,
        decision_id,
        "release" if verdict == "approve" else "discard",
        reviewer=who.key_id or "server",
        owner=who.owner,
        everyone=who.admin,
        note=given.note,
    )
    return _review_item(item, verdict == "approve" and given.release_original)


class VoteBody(BaseModel):
    """A person's vote on a stored run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, max_length=40)
    """The stored run (``tr-...``)."""
    vote: Literal["up", "down"]
    """``up`` or ``down``."""
    reason: str = Field(default="", max_length=2000)
    """Why."""


@router.post("/votes", status_code=201, tags=["trust"], responses=error_responses(400, 401, 404))
def post_vote(body: VoteBody, store: StoreDep, who: Who) -> Vote:
    """Record a vote: calibration evidence; it never changes a measurement."""
    return cast_vote(
        store, body.run_id, body.vote, owner=who.owner, viewer=who.viewer, reason=body.reason
    )


@router.get("/agents/{name}/votes", tags=["trust"], responses=error_responses(401, 403))
def agent_votes(
    name: AgentName, store: StoreDep, who: Who, owner: OwnerQuery = None
) -> VoteAlignment:
    """How often people agree with the agent's verdicts (each voter's latest vote on a
    run), with a 95% Wilson interval. Votes never change a verdict or a figure."""
    viewer = who.viewer if owner is None else _owner(who, owner)
    return vote_alignment(store, name, viewer=viewer)


class RulingsPage(BaseModel):
    """A page of judge rulings, newest first."""

    items: list[JudgeRuling]
    next: str | None = None
    """The cursor of the next page, or null on the last one."""


@router.get("/assurance/rulings", tags=["assurance"], responses=error_responses(400, 401))
def assurance_rulings(
    store: StoreDep,
    who: Who,
    agent: Annotated[str | None, Query(max_length=1000, description="Only this agent.")] = None,
    judge: Annotated[str | None, Query(max_length=100, description="Only this judge.")] = None,
    verdict: Annotated[
        Literal["pass", "fail", "unknown"] | None, Query(description="Only this verdict.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many.")] = 50,
    cursor: Annotated[str | None, Query(max_length=100, description="From a page's next.")] = None,
) -> RulingsPage:
    """The judges' recent rulings on the key's ingested runs: a queue to label."""
    before = keyset_before(cursor)
    items = recent_rulings(
        store,
        viewer=who.viewer,
        agent=agent,
        judge=judge,
        verdict=verdict,
        before=before,
        limit=limit,
    )
    return RulingsPage(items=items, next=keyset_next(items, limit))


@router.get("/assurance/tail", tags=["assurance"], responses=error_responses(400, 401))
def assurance_tail(
    store: StoreDep,
    who: Who,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many of each.")] = 50,
) -> AmbiguousTail:
    """The ambiguous tail: escalated runs and online results no judge could decide."""
    return ambiguous_tail(store, viewer=who.viewer, limit=limit)


class BacktestBody(BaseModel):
    """A proposal to replay over stored history."""

    model_config = ConfigDict(extra="forbid")

    policy: str | dict[str, JsonValue] = Field(default_factory=dict)
    """The proposed trust policy: TOML text, or its sections as an object."""
    thresholds: dict[str, JsonValue] = Field(default_factory=dict)
    """Proposed band thresholds ``{metric: {healthy, danger}}``."""
    gate_mode: GateMode | None = None
    """A gate mode to replay the stored decisions in."""
    agent: str | None = Field(default=None, max_length=1000)
    """Only this agent's runs."""
    since: datetime | None = None
    """Only runs stored since."""
    max_runs: int = Field(default=100_000, ge=1, le=100_000)
    """At most this many of the newest runs."""


@router.post("/trust/backtest", tags=["trust"], responses=error_responses(400, 401))
def post_backtest(
    body: BacktestBody, store: StoreDep, who: Who, settings: SettingsDep
) -> BacktestReport:
    """What the proposal would have changed: bands, states, trips, gate outcomes.
    Read-only; whatever a judge would decide is reported as going to a judge."""
    if isinstance(body.policy, str):
        proposed = parse_policy(body.policy, where="body.policy")
    else:
        proposed = policy_from_mapping(body.policy, where=lambda loc: "body.policy")
    since = body.since
    if since is not None and since.tzinfo is None:
        raise InputError("body.since: give a time zone (e.g. 2026-06-01T00:00:00Z)")
    return run_backtest(
        store,
        proposed,
        current=trust_policy(settings),
        thresholds=parse_thresholds(body.thresholds, where="body.thresholds"),
        gate_mode=body.gate_mode,
        viewer=who.viewer,
        agent=body.agent,
        since=since,
        max_runs=body.max_runs,
    )


class GateBody(BaseModel):
    """An answer a platform asks about before it delivers it."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=1000)
    """The agent that wrote it (its posture sets the mode: a frozen agent is reviewed)."""
    question: str = Field(default="", max_length=100_000)
    answer: str = Field(max_length=1_000_000)
    tool_calls: list[ToolCall] = Field(default_factory=list, max_length=1000)
    scope: GateScope
    mode: GateMode = "observe"
    """The mode when the agent is not frozen."""
    budget_s: float = Field(default=5.0, gt=0, le=60)
    """Seconds the gate may take; past it the answer is delivered as written."""


class GateAnswer(BaseModel):
    """What to deliver, and the decision behind it."""

    action: str
    delivered: str
    mode: GateMode
    frozen: bool
    decision: GateDecision | None = None
    errors: list[str] = Field(default_factory=list)


def _gate_judge(request: Request) -> Any:
    """The scope judge of the server's gate: the app's own when one was given
    (``app.state.gate_judge``), else a panel of ``ARBITER_TRUST_GATE_JUDGES``."""
    judge = getattr(request.app.state, "gate_judge", None)
    if judge is None:
        configured = app_settings(request).trust_gate_judges
        members = [m.strip() for m in configured.split(",") if m.strip()]
        judge = request.app.state.gate_judge = scope_judge(members or ["mock"])
    return judge


@router.post("/gate", tags=["trust"], responses=error_responses(400, 401))
async def post_gate(body: GateBody, store: StoreDep, who: Who, request: Request) -> GateAnswer:
    """The grounding gate on the request path: pass, annotate or withhold (a frozen
    agent's withheld answers are parked for a person). Fails open on any error."""
    frozen = False
    mode: GateMode = body.mode
    try:
        frozen = await asyncio.to_thread(is_frozen, store, body.agent, owner=who.owner) is not None
        if frozen:
            mode = "review"
        judge = _gate_judge(request) if mode in ("enforce", "review") else None
        decision = await asyncio.wait_for(
            check_answer(
                store,
                body.answer,
                question=body.question,
                tool_calls=body.tool_calls,
                scope=body.scope,
                mode=mode,
                judge=judge,
                timeout=body.budget_s,
                owner=who.owner,
                agent=body.agent,
            ),
            timeout=body.budget_s + 1.0,
        )
    except Exception as exc:  # fail open: the answer goes out as written
        log.warning("gate failed open: %s", exc)
        return GateAnswer(
            action="deliver",
            delivered=body.answer,
            mode=mode,
            frozen=frozen,
            errors=[f"gate: {type(exc).__name__}"],
        )
    if decision.action in ("withhold", "park_for_review"):
        kind: Literal["gate_park", "gate_withhold"] = (
            "gate_park" if decision.action == "park_for_review" else "gate_withhold"
        )
        try:
            await asyncio.to_thread(
                append_event,
                store,
                kind=kind,
                severity="warning",
                agent=body.agent,
                owner=who.owner,
                message=f"gate {decision.action} an answer of {body.agent[:200]}",
                record_kind="gate_decision",
                record_id=decision.id,
                details={"mode": mode, "judge": decision.judge},
            )
        except Exception as exc:
            log.warning("could not record the gate's event: %s", exc)
    return GateAnswer(
        action=decision.action,
        delivered=decision.delivered,
        mode=mode,
        frozen=frozen,
        decision=decision,
        errors=list(decision.errors),
    )
