"""REST: health, the jury's critics, ``POST /v1/arbitrate``, verdicts, ``POST /v1/replay``.

Thin routes: the request models validate, :mod:`arbiter.service.arbitrate` and
:mod:`arbiter.service.browse` do the work.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator

from arbiter import __version__
from arbiter.contract import Case, ModelCalls, Verdict
from arbiter.jury.audit import VerdictChange
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec
from arbiter.jury.jury import Jury
from arbiter.server.auth import AuthGate, Principal, auth_gate, principal
from arbiter.server.deps import app_store
from arbiter.server.errors import error_responses
from arbiter.server.limits import check_depth
from arbiter.server.pagination import Page, PageParams, page_params
from arbiter.server.responses import ApiJSONResponse
from arbiter.service.arbitrate import arbitrate, replay_visible_run
from arbiter.service.browse import StoredVerdict, find_verdict, list_verdicts
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys

__all__ = ["ArbitrateRequest", "ReplayRequest", "VerdictOut", "router"]

router = APIRouter(prefix="/v1", default_response_class=ApiJSONResponse)

MAX_TEXT = 200_000
"""The longest task, context or output accepted (characters)."""


class HealthOut(BaseModel):
    """The server is up and its store answers."""

    status: Literal["ok"] = "ok"
    """Always ``ok`` (a failing store answers 503)."""
    version: str
    """Arbiter's version."""
    auth: Literal["open", "keys", "locked"]
    """``open``: no API key configured (loopback only); ``keys``: every request needs one;
    ``locked``: the server requires keys and none is left, so it refuses every request but
    this one until a key is created."""


class ArbitrateRequest(BaseModel):
    """One output to judge, with the task it answers and the source it must stay faithful to."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(max_length=MAX_TEXT)
    """What the LLM was asked to do."""
    context: str = Field(max_length=MAX_TEXT)
    """The source the output must stay faithful to."""
    output: str = Field(max_length=MAX_TEXT)
    """The LLM output under judgement."""
    id: str | None = Field(default=None, min_length=1, max_length=200)
    """A case id of yours, kept with the verdict (default: one is made)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations kept with the case."""

    @field_validator("id")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain a NUL character (U+0000)")
        return value

    @field_validator("metadata")
    @classmethod
    def _shallow(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_depth(value)


class VerdictOut(BaseModel):
    """A stored verdict: its id, the jury run, the judged case, the verdict."""

    id: int
    """The verdict's id (``GET /v1/verdicts/{id}``)."""
    run_id: str
    """The jury run it belongs to (``POST /v1/replay``)."""
    case: Case
    """The judged case."""
    verdict: Verdict
    """The decision, confidence, flip margin, findings, and every critic's outcome."""
    created_at: datetime
    """When it was stored."""
    model: ModelCalls
    """The critics' model calls, summed: calls, cache hits, tokens, latency, cost."""

    @classmethod
    def of(cls, stored: StoredVerdict) -> VerdictOut:
        """The answer for a stored verdict."""
        return cls(
            id=stored.id,
            run_id=stored.run_id,
            case=stored.case,
            verdict=stored.verdict,
            created_at=stored.created_at,
            model=stored.verdict.model_calls(),
        )


class ReplayRequest(BaseModel):
    """Which jury run to re-synthesize."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(default=None, min_length=1, max_length=40)
    """The jury run (a unique prefix is enough); default: the latest (admin or open server)."""


class ReplayOut(BaseModel):
    """The stored critiques re-synthesized with the current code."""

    run_id: str
    """The jury run replayed."""
    n_judgments: int
    """Judgments replayed."""
    changed: list[VerdictChange]
    """Every verdict the current code decides differently (empty: all reproduced)."""


def app_jury(request: Request) -> Jury:
    """The server's jury: the offline critics (the default roster), made once per app."""
    jury = getattr(request.app.state, "jury", None)
    if jury is None:
        jury = request.app.state.jury = Jury(DEFAULT_ROSTER)
    assert isinstance(jury, Jury)
    return jury


StoreDep = Annotated[Store, Depends(app_store)]
Who = Annotated[Principal, Depends(principal)]


@router.get("/health", tags=["server"], responses=error_responses(503, validated=False))
def health(store: StoreDep, gate: Annotated[AuthGate, Depends(auth_gate)]) -> HealthOut:
    """Whether the server is up and its store answers, and its auth mode; needs no key."""
    return HealthOut(version=__version__, auth=gate.mode(count_api_keys(store)))


@router.get("/critics", tags=["jury"], responses=error_responses(401, validated=False))
def critics(who: Who, jury: Annotated[Jury, Depends(app_jury)]) -> list[CriticSpec]:
    """The critics ``POST /v1/arbitrate`` asks, in roster order."""
    return list(jury.critics)


@router.post(
    "/arbitrate",
    status_code=201,
    tags=["jury"],
    response_model=VerdictOut,
    responses=error_responses(400, 401, 413),
)
async def arbitrate_output(
    body: ArbitrateRequest,
    store: StoreDep,
    who: Who,
    jury: Annotated[Jury, Depends(app_jury)],
) -> ApiJSONResponse:
    """Judge one output with the jury; the verdict is stored and returned with its id."""
    case = Case(
        id=body.id or f"api-{secrets.token_hex(6)}",
        task=body.task,
        context=body.context,
        output=body.output,
        metadata=body.metadata,
    )
    stored = VerdictOut.of(await arbitrate(store, jury, case, owner=who.owner))
    # The hot path: dumped once by the model it is, not validated again against the
    # response model and walked by FastAPI's encoder (the schema is response_model's).
    return ApiJSONResponse(stored.model_dump(mode="json"), status_code=201)


@router.get("/verdicts", tags=["jury"], responses=error_responses(400, 401))
def verdicts(
    store: StoreDep, who: Who, page: Annotated[PageParams, Depends(page_params)]
) -> Page[VerdictOut]:
    """The stored verdicts the key may see, newest first."""
    listing = list_verdicts(store, viewer=who.viewer, offset=page.offset, limit=page.limit)
    return Page[VerdictOut](
        items=[VerdictOut.of(v) for v in listing.items],
        total=listing.total,
        next=page.next_cursor(listing.total),
    )


@router.get("/verdicts/{verdict_id}", tags=["jury"], responses=error_responses(401, 404))
def verdict(
    verdict_id: Annotated[int, Path(ge=1, le=2**63 - 1, description="The verdict's id.")],
    store: StoreDep,
    who: Who,
) -> VerdictOut:
    """One stored verdict with its case and every critic's outcome."""
    return VerdictOut.of(find_verdict(store, verdict_id, viewer=who.viewer))


@router.post("/replay", tags=["jury"], responses=error_responses(400, 401, 404, 413))
def replay(body: ReplayRequest, store: StoreDep, who: Who) -> ReplayOut:
    """Re-synthesize a stored jury run's critiques with the current code (no critic is asked)."""
    info, judgments, changes = replay_visible_run(store, body.run_id, viewer=who.viewer)
    return ReplayOut(run_id=info.id, n_judgments=len(judgments), changed=changes)
