"""The fleet pages: every agent's trust posture at once, two agents side by side, and the
deployment's default band thresholds.

- ``/fleet``: the posture matrix (agents, worst state first, by trust-critical dimension;
  each cell's band in a word beside its colour, with a sparkline over the evidence window),
  the integrity seal and the conduct of each agent, and the fleet's pass rate and run
  cost per day;
- ``/fleet/compare?a=&b=``: two agents' state, conduct and dimensions side by side, the
  change of each dimension from A to B;
- ``/thresholds``: the band lines in force per metric drawn as healthy / review / danger
  beside the shipped ones, the preset, and the history of changes (read-only: the lines
  are set with ``arbiter trust thresholds set`` or ``PUT /v1/trust/thresholds``).

Data comes from :mod:`arbiter.service.fleet` and :mod:`arbiter.service.trust_thresholds`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from arbiter.config import Settings
from arbiter.server.charts import DeltaRow
from arbiter.server.deps import app_settings, app_store, templates
from arbiter.server.pages_agents import Who, key_needed
from arbiter.server.pages_common import render
from arbiter.service.fleet import FleetPosture, FleetRow, fleet_posture, fleet_timeline
from arbiter.service.trust import trust_policy
from arbiter.service.trust_thresholds import thresholds_history, thresholds_view
from arbiter.store import Store

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
StoreDep = Annotated[Store, Depends(app_store)]
TemplatesDep = Annotated[Jinja2Templates, Depends(templates)]
SettingsDep = Annotated[Settings, Depends(app_settings)]
AgentQuery = Annotated[str | None, Query(max_length=1000)]


@router.get("/fleet")
def fleet_page(
    request: Request, store: StoreDep, tpl: TemplatesDep, who: Who, settings: SettingsDep
) -> Response:
    """The posture matrix and the fleet over time."""
    if who is None:
        return key_needed(request, tpl, nav="fleet")
    policy = trust_policy(settings)
    posture = fleet_posture(store, viewer=who.viewer, policy=policy)
    states = [r.status.state for r in posture.rows]
    kpis = {
        "agents": len(posture.rows),
        "trusted": states.count("trusted") + states.count("proven"),
        "attention": states.count("at_risk") + states.count("watch"),
        "frozen": sum(1 for r in posture.rows if r.status.frozen),
        "provisional": states.count("provisional"),
    }
    return render(
        request,
        tpl,
        "fleet.html",
        {
            "nav": "fleet",
            "posture": posture,
            "daily": fleet_timeline(store, viewer=who.viewer),
            "kpis": kpis,
            "policy": policy,
        },
    )


def _pick(posture: FleetPosture, name: str | None) -> FleetRow | None:
    """The row of the agent named ``name`` (the first owner's, by name order)."""
    if not name:
        return None
    return next((r for r in posture.rows if r.status.agent == name), None)


@router.get("/fleet/compare")
def fleet_compare_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    settings: SettingsDep,
    a: AgentQuery = None,
    b: AgentQuery = None,
) -> Response:
    """Two agents side by side: state, integrity, conduct and each dimension."""
    if who is None:
        return key_needed(request, tpl, nav="fleet")
    posture = fleet_posture(store, viewer=who.viewer, policy=trust_policy(settings))
    left, right = _pick(posture, a), _pick(posture, b)
    missing = [side for side, row, given in (("A", left, a), ("B", right, b)) if given and not row]
    context: dict[str, object] = {
        "nav": "fleet",
        "names": sorted({r.status.agent for r in posture.rows}),
        "a_name": a or "",
        "b_name": b or "",
        "missing": missing,
        "a": left,
        "b": right,
        "dimensions": posture.dimensions,
    }
    if left is not None and right is not None:
        context["deltas"] = [
            DeltaRow(label=ca.name, delta=cb.rate - ca.rate, low=None, high=None)
            for ca, cb in zip(left.dimensions, right.dimensions, strict=True)
            if ca.rate is not None and cb.rate is not None
        ]
    return render(request, tpl, "fleet_compare.html", context, status_code=404 if missing else 200)


@router.get("/thresholds")
def thresholds_page(request: Request, store: StoreDep, tpl: TemplatesDep, who: Who) -> Response:
    """The default band thresholds in force, drawn per metric, and their history."""
    if who is None:
        return key_needed(request, tpl, nav="fleet")
    return render(
        request,
        tpl,
        "thresholds.html",
        {
            "nav": "fleet",
            "view": thresholds_view(store),
            "history": thresholds_history(store),
            "admin": who.admin,
        },
    )
