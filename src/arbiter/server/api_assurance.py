"""REST: the red-team self-test of the safety detectors, and the live red-team of an agent.

``POST /v1/assurance/redteam/selftest`` runs a corpus through the deterministic safety
detectors (the same function as ``arbiter redteam selftest``) and answers the report:
recall per attack category and the benign false-positive rate with their Wilson
intervals, whether the targets hold, every miss with redacted previews. The corpus is
the shipped one, the held-out one, or cases sent in the body; a path on the server is
never read. Behind the API key like every route.

``POST /v1/assurance/redteam/runs`` red-teams a live agent behind a REST API (the same
function as ``arbiter redteam run``): the body holds the agent's ``[agent]`` table as
JSON, k and the caps; the answer is the report (pass^k per category, the misses with
their trajectories). Each breach is recorded in the caller's assurance inbox (owned by
the calling key). Header values are refused: an ``env:`` header would send the
server's environment to the agent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.redteam import LiveRedTeamReport
from arbiter.contract.safety import RedTeamCase, SelfTestReport
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_store
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.responses import ApiJSONResponse
from arbiter.store import Store

__all__ = [
    "MAX_REQUEST_CALLS",
    "MAX_REQUEST_CASES",
    "RedTeamRunRequest",
    "SelfTestRequest",
    "router",
]

MAX_REQUEST_CASES = 2_000
"""Most cases one request may send."""
MAX_REQUEST_CALLS = 1_000
"""Most agent calls one live red-team request may make."""

router = APIRouter(prefix="/v1", tags=["assurance"], default_response_class=ApiJSONResponse)

Who = Annotated[Principal, Depends(principal)]
StoreDep = Annotated[Store, Depends(app_store)]


class SelfTestRequest(BaseModel):
    """Which corpus to run: a packaged one, or cases of one's own (not both)."""

    model_config = ConfigDict(extra="forbid")

    corpus: Literal["shipped", "heldout"] | None = None
    """A packaged corpus: ``shipped`` (the default) or ``heldout``."""
    cases: list[RedTeamCase] | None = Field(
        default=None, min_length=1, max_length=MAX_REQUEST_CASES
    )
    """Cases of one's own, in the corpus file's shape (one object per case)."""


@router.post(
    "/assurance/redteam/selftest",
    responses=error_responses(400, 401, 413, 422),
)
def redteam_selftest(
    who: Who,
    body: Annotated[SelfTestRequest | None, Body()] = None,
) -> SelfTestReport:
    """Run a red-team corpus through the safety detectors: recall per category, benign
    false positives, the misses (previews redacted). ``passed`` says whether the targets
    hold (recall at least 0.90 per category, false-positive rate at most 0.05)."""
    from arbiter.errors import InputError
    from arbiter.safety.selftest import packaged_report, selftest

    request = body or SelfTestRequest()
    if request.cases is not None and request.corpus is not None:
        raise ApiError(400, "give a packaged corpus or cases, not both", field="body.corpus")
    if request.cases is None:
        return packaged_report(request.corpus or "shipped")
    try:
        return selftest(request.cases)
    except InputError as exc:
        raise ApiError(400, str(exc), field="body.cases") from None


class RedTeamRunRequest(BaseModel):
    """A live red-team of an agent behind a REST API, and its caps."""

    model_config = ConfigDict(extra="forbid")

    agent: dict[str, Any]
    """The agent file's ``[agent]`` table as JSON (base URL, steps, result mapping; see
    docs/examples/agent-rest.toml), without ``headers``."""
    k: int = Field(default=3, ge=1, le=10)
    """Runs per case."""
    per_category: int = Field(default=4, ge=1, le=50)
    """Cases per attack category."""
    max_calls: int = Field(default=200, ge=1, le=MAX_REQUEST_CALLS)
    """Stop after this many agent calls."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Stop once the runs reported this many tokens."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Stop once the runs reported this much cost."""


@router.post(
    "/assurance/redteam/runs",
    responses=error_responses(400, 401, 413, 422),
)
async def redteam_run(body: RedTeamRunRequest, store: StoreDep, who: Who) -> LiveRedTeamReport:
    """Red-team a live REST agent: adversarial cases from the shipped corpus, k runs
    each, capped; pass^k per category with Wilson intervals and every miss. ``passed``
    is true when every planned run was made and every guard held. Each breach becomes
    a ``redteam_failure`` event in the calling key's assurance inbox."""
    from pydantic import ValidationError

    from arbiter.service.redteam_live import run_live_redteam
    from arbiter.trajectories.agent_http_config import AgentHttpConfig
    from arbiter.trajectories.executors_http import HttpStepsExecutor
    from arbiter.validation import describe_validation_error

    if body.agent.get("headers"):
        raise ApiError(
            400,
            "headers are not accepted here: an env: value would be read from the server",
            field="body.agent.headers",
        )
    try:
        config = AgentHttpConfig.model_validate(body.agent)
    except ValidationError as exc:
        why = describe_validation_error(exc, AgentHttpConfig)
        raise ApiError(400, f"agent: {why}", field="body.agent") from None
    executor = HttpStepsExecutor(config, environ={})
    return await run_live_redteam(
        executor,
        k=body.k,
        per_category=body.per_category,
        max_calls=body.max_calls,
        max_tokens=body.max_tokens,
        max_cost_usd=body.max_cost_usd,
        store=store,
        owner=who.owner,
    )
