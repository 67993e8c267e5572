"""Reading an answer: its body within a size bound, its text, and its JSON.

Every client of ours reads answers here, whatever library carried them: the body is cut
off at the configured bound (a 300 MB answer costs no more than the bound), the text is
decoded with the answer's charset, and the JSON is parsed by the project's one JSON
reader (:func:`arbiter.datasets.jsonio.parse_json`), so an answer means what the same
document would mean in a file.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

from arbiter.datasets.jsonio import JsonInputError, parse_json
from arbiter.errors import ArbiterError, InvalidResponse, InvalidSystemResponse
from arbiter.http.errors import Side, body_too_large, not_json

__all__ = ["declared_length", "decode_text", "parse_answer", "read_capped"]


async def read_capped(
    chunks: AsyncIterable[bytes], declared: int | None, limit: int, *, side: Side, where: str
) -> bytes:
    """The whole body, or an invalid-response error once it passes ``limit`` bytes.

    Args:
        chunks: The body as it arrives.
        declared: Its ``Content-Length``, when the answer gives one: a larger one is
            refused before a byte is read.
        limit: The bound, in bytes.
        side: Whose error a too-large answer is.
        where: What was called, for the message.

    Raises:
        InvalidSystemResponse: (``side="system"``) the body is larger than ``limit``.
        InvalidResponse: (``side="provider"``) the same.
    """
    if declared is not None and declared > limit:
        raise body_too_large(side, where, limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise body_too_large(side, where, limit)
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def declared_length(value: str | None) -> int | None:
    """A ``Content-Length`` header as a number; None when absent or not a number."""
    return int(value) if value is not None and value.isdigit() else None


def decode_text(raw: bytes, charset: str | None) -> str:
    """The body as text, in its declared charset (UTF-8 when none or unknown)."""
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return raw.decode("utf-8", errors="replace")


def parse_answer(text: str, *, side: Side, where: str, status: int | None) -> Any:
    """The JSON document of a 2xx answer (``status``; None: a text an SDK handed over).

    Raises:
        InvalidSystemResponse: (``side="system"``) the body is not JSON, or JSON that
            cannot mean one thing everywhere (a NaN, ``1e999``, a lone surrogate,
            nesting deeper than the reader allows).
        InvalidResponse: (``side="provider"``) the same.
    """
    if not text.strip():
        raise not_json(side, where, status, text)
    try:
        return parse_json(text, source=where)
    except JsonInputError as exc:
        if exc.kind == "invalid_json":
            raise not_json(side, where, status, text) from None
        cls: type[ArbiterError] = InvalidSystemResponse if side == "system" else InvalidResponse
        shown = f"{where}: HTTP {status}" if status is not None else where
        raise cls(f"{shown}: {exc.reason}") from None
