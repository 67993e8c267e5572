"""What every page shares: the template filters, the charts, and one way to render.

:func:`render` answers a page with a Content-Security-Policy that allows only the
app's own style sheet and script: even a text that slipped past escaping could not
run a script, load an image from elsewhere or post a form away. Every page's header
shows how many inbox events its key has not acknowledged (``header_unacked``: one
count query). Templates get
``inert`` (untrusted text made inert for a terminal and clipped; autoescape then makes
it HTML), ``pct``, ``signed_pct``, ``num``, the chart functions of
:mod:`arbiter.server.charts` and the bounded cuts of a report's label figures
(``confusion_map``, ``label_rows``) of :mod:`arbiter.server.runs_view`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from arbiter import __version__, escape
from arbiter.server import charts, runs_view, trust_charts

if TYPE_CHECKING:
    from fastapi import Request
    from fastapi.templating import Jinja2Templates
    from starlette.responses import Response

__all__ = ["CSP", "page_url", "render"]

CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The pages' Content-Security-Policy: the app's own sheet and script, nothing inline."""

_READY = "_arbiter_pages_ready"


def _inert(value: object, limit: int | None = 2_000) -> str:
    """Untrusted text with its controls shown as escapes, clipped to ``limit``."""
    if value is None:
        return ""
    return escape.terminal(value, limit=limit)


def _num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def _prepare(templates: Jinja2Templates) -> None:
    env = templates.env
    if env.globals.get(_READY):
        return
    env.filters.update(
        inert=_inert, pct=charts.pct, signed_pct=charts.signed_pct, num=_num, page_url=page_url
    )
    env.globals.update(
        version=__version__,
        static_url=lambda name: f"/static/{name}?v={__version__}",
        whisker=charts.whisker,
        interval_bars=charts.interval_bars,
        delta_bars=charts.delta_bars,
        heat_map=charts.heat_map,
        confusion_map=runs_view.confusion_map,
        label_rows=runs_view.label_rows,
        sparkline=charts.sparkline,
        band_strip=charts.band_strip,
        IntervalRow=charts.IntervalRow,
        DeltaRow=charts.DeltaRow,
        ring=trust_charts.ring,
        timeline=trust_charts.timeline,
        band_scale=trust_charts.band_scale,
    )
    env.globals[_READY] = True


def _header_unacked(request: Request) -> int | None:
    """How many inbox events the page's key has not acknowledged, for the header; None
    when the request has no valid key or the store cannot say (the page still renders)."""
    from arbiter.errors import StoreError
    from arbiter.service.inbox import unacked_count

    who = getattr(request.state, "page_principal", None)
    if who is None:
        return None
    try:
        return unacked_count(request.app.state.store, viewer=who.viewer)
    except StoreError:
        return None


def page_url(path: str, params: Mapping[str, object | None] | None = None) -> str:
    """``path`` with the query ``params`` that are set (None and "" are left out)."""
    kept = {k: str(v) for k, v in (params or {}).items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept)}" if kept else path


def render(
    request: Request,
    templates: Jinja2Templates,
    name: str,
    context: Mapping[str, Any],
    *,
    status_code: int = 200,
) -> Response:
    """Render the page template ``name`` with ``context``, under the pages' CSP."""
    _prepare(templates)
    values = dict(context)
    values.setdefault("header_unacked", _header_unacked(request))
    response = templates.TemplateResponse(request, name, values, status_code=status_code)
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response
