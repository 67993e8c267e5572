"""The API's own description: ``/v1/openapi.json``, ``/v1/docs`` (Swagger UI), the favicon.

Both need a key once keys are configured, like every ``/v1`` route but health. The docs
page loads Swagger UI from the package (``static/swagger/``, a vendored copy of
swagger-ui-dist), never from another site, so it works offline; it is started by a
script file, not an inline one, so the page keeps the pages' strict
Content-Security-Policy.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from arbiter import __version__
from arbiter.server.auth import Principal, auth_gate, principal
from arbiter.server.deps import app_store, templates
from arbiter.server.errors import ApiError
from arbiter.server.pages_common import render
from arbiter.server.responses import ApiJSONResponse
from arbiter.store import Store

__all__ = ["DOCS_CSP", "router"]

router = APIRouter(include_in_schema=False)

_STATIC = Path(__file__).parent / "static"

DOCS_CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self' data:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
"""The docs page's Content-Security-Policy: the pages' own, plus fonts from the package."""

_DOCS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Arbiter {version} · REST API</title>
  <link rel="icon" href="/static/favicon.svg?v={version}" type="image/svg+xml">
  <link rel="stylesheet" href="/static/swagger/swagger-ui.css?v={version}">
  <script src="/static/swagger/swagger-ui-bundle.js?v={version}"></script>
  <script src="/static/swagger/init.js?v={version}"></script>
</head>
<body>
  <div id="swagger-ui" data-openapi="/v1/openapi.json"></div>
</body>
</html>
"""


async def _page_principal(request: Request, store: Store) -> Principal | None:
    """The request's principal, or None when it may not see the API (no or a bad key)."""
    given = request.headers.get("authorization", "")
    scheme, _, credentials = given.partition(" ")
    bearer = None
    if scheme.lower() == "bearer" and credentials:
        bearer = HTTPAuthorizationCredentials(scheme="Bearer", credentials=credentials.strip())
    try:
        found: Any = principal(store, bearer, request.headers.get("x-api-key"), auth_gate(request))
        if inspect.isawaitable(found):
            found = await found
        return cast("Principal", found)
    except ApiError:
        return None


@router.get("/v1/openapi.json")
def openapi_document(
    request: Request, who: Annotated[Principal, Depends(principal)]
) -> ApiJSONResponse:
    """The OpenAPI document of the REST API."""
    return ApiJSONResponse(request.app.openapi())


@router.get("/v1/docs", response_class=HTMLResponse)
async def docs_page(request: Request, store: Annotated[Store, Depends(app_store)]) -> Response:
    """Swagger UI over ``/v1/openapi.json``, from the package's own copy."""
    if await _page_principal(request, store) is None:
        return render(
            request,
            templates(request),
            "missing.html",
            {
                "nav": "api",
                "what": "access",
                "title": "An API key is needed",
                "message": "This server has API keys: its API documentation, like its API, "
                "answers requests that carry one (Authorization: Bearer <key> or X-API-Key), "
                "e.g. through a proxy that adds it.",
            },
            status_code=401,
        )
    headers = {
        "Content-Security-Policy": DOCS_CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }
    return HTMLResponse(_DOCS_PAGE.format(version=__version__), headers=headers)


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    """The icon browsers ask for at the root (the pages link the same SVG)."""
    return FileResponse(
        _STATIC / "favicon.svg",
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )
