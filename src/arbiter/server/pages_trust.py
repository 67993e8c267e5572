"""The Inbox page: the assurance inbox's events and the fleet's trust posture.

``GET /inbox`` lists the key's trust events newest first (breaker trips, parked answers,
webhook failures) with whether each is acknowledged, and every agent's trust state with
its integrity and conduct, from :mod:`arbiter.service.inbox` and
:mod:`arbiter.service.trust`. A provisional agent shows no conduct figure it has not
earned. Everything an agent or a model wrote is inert text.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from arbiter.config import Settings
from arbiter.server.deps import app_settings, app_store, templates
from arbiter.server.pages_agents import Who, key_needed
from arbiter.server.pages_common import render
from arbiter.service.inbox import inbox, unacked_count
from arbiter.service.trust import trust_policy, trust_statuses
from arbiter.store import Store

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
StoreDep = Annotated[Store, Depends(app_store)]
TemplatesDep = Annotated[Jinja2Templates, Depends(templates)]
SettingsDep = Annotated[Settings, Depends(app_settings)]

_SHOWN_EVENTS = 100


@router.get("/inbox")
def inbox_page(
    request: Request, store: StoreDep, tpl: TemplatesDep, who: Who, settings: SettingsDep
) -> Response:
    """The assurance inbox and the trust posture of every agent the key may see."""
    if who is None:
        return key_needed(request, tpl, nav="inbox")
    events = inbox(store, viewer=who.viewer, limit=_SHOWN_EVENTS)
    statuses = trust_statuses(store, viewer=who.viewer, policy=trust_policy(settings))
    return render(
        request,
        tpl,
        "inbox.html",
        {
            "nav": "inbox",
            "events": events,
            "unacked": unacked_count(store, viewer=who.viewer),
            "statuses": statuses,
        },
    )
