"""One JSON error shape for every failure of the REST API, with stable codes.

Every error answer is ``{"error": {"code": str, "message": str, "field": str | null}}``:
``code`` is one of :data:`ERROR_CODES` (stable: clients branch on it), ``message`` one
line for a person, ``field`` the request field at fault when there is one
(``body.output``, ``query.cursor``). Routes raise :class:`ApiError`; FastAPI's own
exceptions, Arbiter's :class:`~arbiter.errors.ArbiterError` tree and anything
unexpected are turned into the same shape by the handlers :func:`install_error_handlers`
adds. Each route lists the errors it can answer with :func:`error_responses`, so the
OpenAPI document describes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Send

from arbiter.errors import ArbiterError, InputError, StoreError, StoreUnavailable
from arbiter.server.responses import ApiJSONResponse

__all__ = [
    "ERROR_CODES",
    "ApiError",
    "ErrorBody",
    "ErrorDetail",
    "error_json",
    "error_responses",
    "install_error_handlers",
    "send_error",
    "wants_html",
]

log = logging.getLogger("arbiter.server")

ErrorCode = Literal[
    "bad_request",
    "invalid_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "payload_too_large",
    "unsupported_media_type",
    "store_unavailable",
    "internal",
]

ERROR_CODES: dict[int, ErrorCode] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal",
    503: "store_unavailable",
}
"""The stable code of each status the API answers with."""

_DESCRIPTIONS: dict[int, str] = {
    400: "The request cannot be used as sent (a body that is not UTF-8 JSON, a bad "
    "cursor or filter, a label without the ruling it is about).",
    401: "No API key, or one the server does not know (keys are configured).",
    403: "The key may not do this.",
    404: "No such record, or one the key may not see.",
    405: "The method is not allowed on this path.",
    413: "The request body is larger than the server accepts.",
    415: "The request body's content type is not one this route reads.",
    422: "A field is missing or invalid.",
    503: "The store cannot be reached.",
}


class ErrorDetail(BaseModel):
    """What went wrong, in one line, with a code a client can branch on."""

    code: ErrorCode
    """A stable code: one per status (see ``ERROR_CODES``)."""
    message: str
    """One line for a person."""
    field: str | None = Field(default=None)
    """The request field at fault, dotted (``body.output``, ``query.cursor``), or null."""


class ErrorBody(BaseModel):
    """Every error answer of the API."""

    error: ErrorDetail
    """The error."""


class ApiError(Exception):
    """An error a route answers with: a status, its code, one line and the field at fault.

    Args:
        status: The HTTP status (a key of ``ERROR_CODES``).
        message: One line for a person.
        field: The request field at fault, dotted, if there is one.
    """

    def __init__(self, status: int, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def error_json(status: int, message: str, field: str | None = None) -> dict[str, Any]:
    """The error body of ``status`` as JSON-able data."""
    code = ERROR_CODES.get(status, "internal" if status >= 500 else "bad_request")
    return {"error": {"code": code, "message": message, "field": field}}


async def send_error(send: Send, status: int, message: str, *, close: bool = False) -> None:
    """Answer an ASGI request with the error body of ``status``, from a middleware that
    refuses it before any route runs (``close``: ask the client to close the connection,
    when the request's body is left unread)."""
    body = json.dumps(error_json(status, message), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _answer(
    status: int, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return ApiJSONResponse(error_json(status, message, field), status_code=status, headers=headers)


def error_responses(*statuses: int, validated: bool = True) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route answering with these error statuses.

    422 is listed too unless ``validated`` is False (a route without parameters or
    body, which nothing can make invalid), so the document shows this shape instead of
    FastAPI's default validation error.
    """
    wanted = sorted({*statuses, 422} if validated else set(statuses))
    return {s: {"model": ErrorBody, "description": _DESCRIPTIONS[s]} for s in wanted}


def _field(location: Sequence[int | str]) -> str | None:
    return ".".join(str(part) for part in location) or None


def _validation_message(error: dict[str, Any]) -> str:
    where = _field(error.get("loc", ()))
    text = str(error.get("msg", "invalid value"))
    if error.get("type") == "missing":
        return f"field '{where}' is required"
    return f"field '{where}': {text}" if where else text


async def _on_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _answer(422, _validation_message(first) + more, _field(first.get("loc", ())))


def wants_html(request: Request) -> bool:
    """Whether the client asks for a page (a browser's ``Accept`` names ``text/html``)."""
    return "text/html" in request.headers.get("accept", "").lower()


def _not_found_page(request: Request) -> Response:
    from arbiter.server.deps import templates
    from arbiter.server.pages_common import render

    return render(
        request,
        templates(request),
        "missing.html",
        {
            "nav": None,
            "what": "page",
            "title": "Page not found",
            "message": "There is no page at this address. The runs are on the first page; "
            "the REST API is under /v1 (its documentation at /v1/docs).",
        },
        status_code=404,
    )


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404 and wants_html(request):  # an unknown path, asked by a browser
        return _not_found_page(request)
    detail = exc.detail if isinstance(exc.detail, str) else None
    try:
        default = HTTPStatus(exc.status_code).phrase
    except ValueError:
        default = "error"
    headers = dict(exc.headers) if exc.headers else None
    return _answer(exc.status_code, detail or default, headers=headers)


async def _on_api(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return _answer(exc.status, exc.message, exc.field, headers)


def _for_clients(request: Request, message: str) -> str:
    """``message`` without the store's URL: where the server keeps its data is its own."""
    store = getattr(request.app.state, "store", None)
    if store is None:
        return message
    where = store.describe()
    return message.replace(f" in {where}", "").replace(where, "the store")


async def _on_arbiter(request: Request, exc: Exception) -> JSONResponse:
    # The tree's messages are written for a person and never hold SQL or secrets.
    message = _for_clients(request, str(exc))
    if isinstance(exc, StoreUnavailable):
        log.error("store unavailable: %s", exc)
        return _answer(503, message)
    if isinstance(exc, StoreError):
        return _answer(404, message)
    if isinstance(exc, InputError):
        return _answer(400, message)
    log.error("%s: %s", type(exc).__name__, exc)
    return _answer(500, f"{type(exc).__name__}: {message}")


async def _on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error serving a request", exc_info=exc)
    return _answer(500, "the server failed on this request; its log has the details")


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` in the one JSON shape."""
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(ApiError, _on_api)
    app.add_exception_handler(ArbiterError, _on_arbiter)
    app.add_exception_handler(Exception, _on_unexpected)
