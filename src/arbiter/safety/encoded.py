"""Encoded payloads: base64, hex and rot13 blocks that decode to instructions.

A block is decoded only when it looks like an encoding (base64's alphabet with both
cases, hex pairs, ``\\x``/``%`` escapes), at most :data:`MAX_DECODED` characters of it,
and at most :data:`~arbiter.safety.collect.MAX_CANDIDATES` blocks per text. What it
decodes to counts only when it is text (UTF-8, mostly printable) and the injection rules
read an instruction in it: a base64 image, a hash or a key decode to bytes and are left
alone, an encoded sentence without an instruction too. Rot13 is read by rotating the
whole text's letters (one pass) and asking the same rules.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from functools import cache

from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.patterns import Compiled, compile_re2
from arbiter.safety.text import preview, visible

__all__ = ["MAX_DECODED", "Reader", "find_encoded"]

MAX_DECODED = 4_096
"""Characters of one encoded block decoded."""
_PRINTABLE = 0.9
"""Share of printable characters a decoded block needs to be read as text."""

Reader = Callable[[str], str | None]
"""Reads a decoded text: what instruction it holds (a short description), or None."""

_BLOCKS = (
    r"(?P<b64>[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_-]{16,}={0,2})"
    r"|(?P<hex>(?:[0-9A-Fa-f]{2}[ :,.-]?){12,})"
    r"|(?P<xhex>(?:(?:\\x|0x|%)[0-9A-Fa-f]{2}[ ,]?){8,})"
)
_ROT13 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


@cache
def _blocks() -> Compiled:
    return compile_re2(_BLOCKS)


def _as_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 and mostly printable, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return text if printable / len(text) >= _PRINTABLE else None


def _base64(block: str) -> str | None:
    if block.isalpha() and (block.islower() or block.isupper()):
        return None  # a long word, not an encoding
    if not any(c.isupper() for c in block) or not any(c.islower() for c in block):
        return None
    body = block.rstrip("=")[:MAX_DECODED]
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    padded = body + "=" * (-len(body) % 4)
    alphabet = b"-_" if ("-" in body or "_" in body) else None
    try:
        data = base64.b64decode(padded, altchars=alphabet, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _as_text(data)


def _hex(block: str) -> str | None:
    digits = "".join(c for c in block[: MAX_DECODED * 2] if c in "0123456789abcdefABCDEF")
    if block.lstrip().lower().startswith(("\\x", "0x", "%")):
        digits = "".join(
            part[:2]
            for part in block.replace("\\x", " ").replace("0x", " ").replace("%", " ").split()
        )
    digits = digits[: len(digits) - len(digits) % 2]
    try:
        data = bytes.fromhex(digits)
    except ValueError:
        return None
    return _as_text(data)


def find_encoded(collector: Collector, read: Reader) -> None:
    """Add an ``encoded_payload`` finding for each block (and the rot13 reading) of the
    collector's text that decodes to an instruction ``read`` recognises."""
    text = collector.text
    examined = 0
    for found in _blocks().finditer(text):
        examined += 1
        if examined > MAX_CANDIDATES:
            collector.cap(f"encoded blocks: first {MAX_CANDIDATES} examined")
            break
        start, end = found.start(), found.end()
        if found.lastgroup == "b64":
            kind, decoded = "base64", _base64(found.group("b64"))
        else:
            kind, decoded = "hex", _hex(found.group(0))
        if decoded is None:
            continue
        meaning = read(decoded)
        if meaning is not None:
            collector.add(
                "encoded_payload",
                "high",
                start,
                end,
                f"{kind} decoding to {visible(' '.join(decoded.split())[:80])!r}",
                f"{kind} that decodes to {meaning}",
            )
    if not text.isascii():
        rotated = text.encode("utf-8").translate(_ROT13).decode("utf-8")
    else:
        rotated = text.encode("ascii").translate(_ROT13).decode("ascii")
    at = _rot13_instruction(rotated, read)
    if at is not None:
        start, end, meaning = at
        collector.add(
            "encoded_payload",
            "high",
            start,
            end,
            f"rot13 reading {preview(rotated, start, end)!r}",
            f"rot13 that decodes to {meaning}",
        )


def _rot13_instruction(rotated: str, read: Reader) -> tuple[int, int, str] | None:
    """Where the rotated text holds an instruction: a span and what it is, or None."""
    meaning = read(rotated)
    if meaning is None:
        return None
    # The reader says what, not where: the span is the line it is on.
    for start, end in _lines(rotated):
        line_meaning = read(rotated[start:end])
        if line_meaning is not None:
            return start, end, line_meaning
    return 0, len(rotated), meaning


def _lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        spans.append((start, end))
        start = end + 1
        if len(spans) > MAX_CANDIDATES:
            break
    return spans
