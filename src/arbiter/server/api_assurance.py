"""REST: the red-team self-test of the safety detectors.

``POST /v1/assurance/redteam/selftest`` runs a corpus through the deterministic safety
detectors (the same function as ``arbiter redteam selftest``) and answers the report:
recall per attack category and the benign false-positive rate with their Wilson
intervals, whether the targets hold, every miss with redacted previews. The corpus is
the shipped one, the held-out one, or cases sent in the body; a path on the server is
never read. Behind the API key like every route.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.safety import RedTeamCase, SelfTestReport
from arbiter.server.auth import Principal, principal
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.responses import ApiJSONResponse

__all__ = ["MAX_REQUEST_CASES", "SelfTestRequest", "router"]

MAX_REQUEST_CASES = 2_000
"""Most cases one request may send."""

router = APIRouter(prefix="/v1", tags=["assurance"], default_response_class=ApiJSONResponse)

Who = Annotated[Principal, Depends(principal)]


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
