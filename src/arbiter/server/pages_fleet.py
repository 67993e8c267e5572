"""The fleet pages: every agent's trust posture at once, two agents side by side, and the
deployment's default band thresholds.

- ``/fleet``: the posture matrix (agents, worst state first, by trust-critical dimension;
  each cell's band in a word beside its colour, with a sparkline over the evidence window),
  the integrity seal and the conduct of each agent, and the fleet's pass rate and run
  cost per day;
- ``/fleet/compare?a=&b=``: two agents' state, conduct and dimensions side by side, the
  change of each dimension from A to B;
- ``/thresholds``: the band lines in force per metric drawn as healthy / review / danger
  beside the shipped ones, the preset, and the history of changes; ``POST /thresholds``
  sets them from the page's form (an admin key, from this server's own pages; the same
  function as ``arbiter trust thresholds set`` and ``PUT /v1/trust/thresholds``).

Data comes from :mod:`arbiter.service.fleet` and :mod:`arbiter.service.trust_thresholds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import RedirectResponse, Response

from arbiter.config import Settings
from arbiter.errors import InputError
from arbiter.server.auth import Principal
from arbiter.server.charts import DeltaRow
from arbiter.server.deps import app_settings, app_store, templates
from arbiter.server.pages_agents import Who, integrity_checker, key_needed
from arbiter.server.pages_annotations import same_site
from arbiter.server.pages_common import render
from arbiter.service.fleet import FleetPosture, FleetRow, fleet_posture, fleet_timeline
from arbiter.service.trust import trust_policy
from arbiter.service.trust_thresholds import (
    set_thresholds,
    shipped_lines,
    thresholds_history,
    thresholds_view,
)
from arbiter.store import Store
from arbiter.trust.thresholds import PRESETS

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
    posture = fleet_posture(
        store, viewer=who.viewer, policy=policy, checker=integrity_checker(store, settings)
    )
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
    posture = fleet_posture(
        store,
        viewer=who.viewer,
        policy=trust_policy(settings),
        checker=integrity_checker(store, settings),
    )
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


def _thresholds_page(
    request: Request,
    store: Store,
    tpl: Jinja2Templates,
    who: Principal,
    *,
    error: str | None = None,
    saved: bool = False,
    status_code: int = 200,
) -> Response:
    history = thresholds_history(store)
    return render(
        request,
        tpl,
        "thresholds.html",
        {
            "nav": "fleet",
            "view": thresholds_view(store),
            "history": history,
            "own": _own_lines(history[0].thresholds if history else {}),
            "presets": PRESETS,
            "admin": who.admin,
            "error": error,
            "saved": saved,
        },
        status_code=status_code,
    )


def _own_lines(stored: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The deployment's own lines as the form shows them: text per field, by metric."""
    shown: dict[str, dict[str, str]] = {}
    for key, line in stored.items():
        if line == "off":
            shown[key] = {"off": "on"}
        elif isinstance(line, int | float):
            shown[key] = {"danger": f"{line:.15g}"}
        elif isinstance(line, Mapping):
            shown[key] = {
                part: f"{value:.15g}"
                for part, value in line.items()
                if part in ("healthy", "danger") and isinstance(value, int | float)
            }
    return shown


@router.get("/thresholds")
def thresholds_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    saved: Annotated[bool, Query()] = False,
) -> Response:
    """The default band thresholds in force, drawn per metric, and their history; for an
    admin key, the form that sets them."""
    if who is None:
        return key_needed(request, tpl, nav="fleet")
    return _thresholds_page(request, store, tpl, who, saved=saved)


def _form_number(text: str, field: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{field}: expected a number, got {text[:40]!r}") from None


def _form_lines(form: Mapping[str, Any]) -> dict[str, Any]:
    """The form's own lines as a thresholds table (a metric left blank is not in it)."""
    table: dict[str, Any] = {}
    for key in shipped_lines():
        if form.get(f"off.{key}"):
            table[key] = "off"
            continue
        line = {
            part: value
            for part in ("healthy", "danger")
            if (value := _form_number(str(form.get(f"{part}.{key}", ""))[:100], f"{part}.{key}"))
            is not None
        }
        if line:
            table[key] = line
    return table


@router.post("/thresholds")
async def set_thresholds_page(
    request: Request, store: StoreDep, tpl: TemplatesDep, who: Who
) -> Response:
    """Set the default band thresholds from the page's form (an admin key, from this
    server's own pages); back to the page (303), or the page with the error (400)."""
    if who is None:
        return key_needed(request, tpl, nav="fleet")
    if not who.admin:
        return _thresholds_page(
            request,
            store,
            tpl,
            who,
            error="Only an admin key may set the deployment's thresholds.",
            status_code=403,
        )
    if not same_site(request):
        return _thresholds_page(
            request,
            store,
            tpl,
            who,
            error="Thresholds can only be set from Arbiter's own pages.",
            status_code=403,
        )
    form = await request.form()
    preset = str(form.get("preset", "balanced"))[:40]
    try:
        table = _form_lines(form)
        set_thresholds(store, preset=preset, thresholds=table, by=who.key_id or "server")
    except InputError as exc:
        return _thresholds_page(request, store, tpl, who, error=str(exc), status_code=400)
    return RedirectResponse("/thresholds?saved=true#lines", status_code=303)
