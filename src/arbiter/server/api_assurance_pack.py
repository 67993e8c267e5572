"""REST: the signed assurance pack of what the key may see.

``POST /v1/assurance/pack`` builds the pack ``arbiter assurance pack`` writes (the same
function), over the records of the request's key (an admin key: every owner's), signed
with the server's configured key, and answers the zip archive itself. Verify it offline
with ``arbiter verify`` or ``verify_standalone.py`` and the server's public key.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from arbiter.config import Settings
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_settings, app_store
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.responses import ApiJSONResponse
from arbiter.store import Store

__all__ = ["PackRequest", "router"]

router = APIRouter(prefix="/v1", tags=["assurance"], default_response_class=ApiJSONResponse)

Who = Annotated[Principal, Depends(principal)]
StoreDep = Annotated[Store, Depends(app_store)]
SettingsDep = Annotated[Settings, Depends(app_settings)]


class PackRequest(BaseModel):
    """What the pack covers."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(default=None, min_length=1, max_length=1000)
    """Only this agent's trust, pass rate and incidents; null: every agent."""


@router.post(
    "/assurance/pack",
    responses={
        200: {"content": {"application/zip": {}}, "description": "The signed archive."},
        **error_responses(400, 401, 404),
    },
    response_class=Response,
)
async def assurance_pack(
    store: StoreDep,
    who: Who,
    settings: SettingsDep,
    body: Annotated[PackRequest | None, Body()] = None,
) -> Response:
    """The deployment's posture as one signed zip: agents' trust and integrity,
    evaluations with intervals, judges' calibration, incidents, the red-team self-test,
    the grounding gate's benchmark and the control map (EU AI Act, NIST AI RMF)."""
    from arbiter.errors import InputError
    from arbiter.service.assurance_pack import build_assurance_pack
    from arbiter.service.attestation import configured_signer
    from arbiter.service.trust import trust_policy

    key = configured_signer(settings)
    if key is None:
        raise ApiError(
            400, "the server signs the pack, and no signing key is configured (ARBITER_SIGNING_KEY)"
        )
    request = body or PackRequest()
    try:
        built = await build_assurance_pack(
            store, key, viewer=who.viewer, agent=request.agent, policy=trust_policy(settings)
        )
    except InputError as exc:  # an agent this key may not see is not found, never forbidden
        raise ApiError(404, str(exc), field="body.agent") from None
    return Response(
        content=built.data,
        media_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="assurance-{built.record_id}.zip"',
            "X-Arbiter-Pack-Id": built.record_id,
        },
    )
