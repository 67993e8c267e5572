"""Reading an aiohttp answer's body within a size bound (the ``http`` system under test)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arbiter.http.errors import Side, body_too_large

if TYPE_CHECKING:
    import aiohttp

__all__ = ["read_aiohttp_body"]

_CHUNK = 64 * 1024


async def read_aiohttp_body(
    response: aiohttp.ClientResponse, limit: int, *, where: str, side: Side = "system"
) -> bytes:
    """The whole body, or an invalid-response error once it passes ``limit`` bytes.

    A body that declares its length within the bound is read in one go (the fast path
    of a small JSON answer); any other is read in chunks and cut off at the bound, so a
    300 MB answer costs no more than ``limit`` bytes of memory.
    """
    declared = response.content_length
    if declared is not None:
        if declared > limit:
            raise body_too_large(side, where, limit)
        return await response.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise body_too_large(side, where, limit)
        chunks.append(chunk)
    return b"".join(chunks)
