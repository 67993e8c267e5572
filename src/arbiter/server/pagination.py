"""Paging of list endpoints: ``{items, total, next}`` with an opaque cursor.

A list endpoint takes ``limit`` and ``cursor`` (the ``next`` of the previous page) and
answers a :class:`Page`. The cursor is opaque to clients: today it carries the
position of the next item; clients only ever send back what they were given.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Generic, Protocol, TypeVar

from fastapi import Query
from pydantic import BaseModel

from arbiter.server.errors import ApiError

__all__ = [
    "MAX_LIMIT",
    "Page",
    "PageParams",
    "decode_cursor",
    "encode_cursor",
    "keyset_before",
    "keyset_next",
    "page_params",
]

T = TypeVar("T")

MAX_LIMIT = 500
"""The most items one page holds."""
_MAX_OFFSET = 2**53
"""No cursor this server makes points further (and a database integer holds it)."""


class Page(BaseModel, Generic[T]):
    """One page of a list."""

    items: list[T]
    """The items of this page, in the list's order."""
    total: int
    """How many items the whole list holds (under the same filters)."""
    next: str | None
    """The cursor of the next page (pass it as ``cursor``), or null on the last one."""


def encode_cursor(offset: int) -> str:
    """The cursor of the page starting at ``offset``."""
    raw = json.dumps({"o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The position a cursor names.

    Raises:
        ApiError: 400, naming ``query.cursor``, for a cursor this server did not make.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        offset = json.loads(raw)["o"]
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        offset = None
    if type(offset) is not int or not 0 <= offset <= _MAX_OFFSET:
        raise ApiError(400, "the cursor is not one this server gave out", field="query.cursor")
    return offset


@dataclass(frozen=True)
class PageParams:
    """Where a page starts and how long it is."""

    offset: int
    """The position of its first item."""
    limit: int
    """The most items it holds."""

    def next_cursor(self, total: int) -> str | None:
        """The cursor of the page after this one, or None when this one is the last."""
        after = self.offset + self.limit
        return encode_cursor(after) if after < total else None


def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page.")] = 50,
    cursor: Annotated[
        str | None,
        Query(max_length=200, description="The `next` of the previous page."),
    ] = None,
) -> PageParams:
    """The paging of a list request (a FastAPI dependency)."""
    return PageParams(offset=0 if cursor is None else decode_cursor(cursor), limit=limit)


class _Keyed(Protocol):
    @property
    def id(self) -> int: ...


def keyset_before(cursor: str | None) -> int | None:
    """Where a newest-first keyset page starts: below the id its cursor names (None: the
    first page).

    Raises:
        ApiError: 400, naming ``query.cursor``, for a cursor this server did not make.
    """
    return None if cursor is None else decode_cursor(cursor)


def keyset_next(items: Sequence[_Keyed], limit: int) -> str | None:
    """The cursor of the keyset page after ``items`` (ids descending): its last id when
    the page is full (more may follow), None when it is short (the last page)."""
    return encode_cursor(items[-1].id) if items and len(items) == limit else None
