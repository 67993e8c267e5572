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
from arbiter.safety.patterns import Rule, RuleSet
from arbiter.safety.text import preview, visible

__all__ = ["BLOCKS", "MAX_DECODED", "ROT13_HINTS", "Reader", "find_blocks", "find_rot13", "rot13"]

MAX_DECODED = 4_096
"""Characters of one encoded block decoded."""
_MIN_BLOCK = 20
"""Characters an encoded block needs to be decoded."""
_HEXADECIMAL = frozenset("0123456789abcdefABCDEF")
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = b"abcdefghijklmnopqrstuvwxyz"
_MARKS = b"0123456789+/"
_PRINTABLE = 0.9
"""Share of printable characters a decoded block needs to be read as text."""

Reader = Callable[[str], str | None]
"""Reads a decoded text: what instruction it holds (a short description), or None."""

BLOCKS = (
    Rule("base64", "high", r"[A-Za-z0-9+/_-]{20,}={0,2}"),
    Rule("hex", "high", r"\b[0-9A-Fa-f]{2}(?:[ :,-][0-9A-Fa-f]{2}){11,}\b"),
    Rule("hex", "high", r"(?:\\x|0x|%)[0-9A-Fa-f]{2}[\\x0-9A-Fa-f%, ]{14,}"),
)
"""Runs that may be an encoding: base64's alphabet (plain hex is in it too), hex pairs
with a separator, ``\\x`` / ``0x`` / ``%`` escapes."""
ROT13_HINTS = (
    "ignore", "disregard", "forget", "instructions", "previous", "system prompt", "you are now",
    "jailbreak", "developer mode", "reveal", "override", "assistant", "do anything now",
    "no restrictions", "from now on", "your rules", "print your",
)  # fmt: skip
"""Words an instruction encoded with rot13 is likely to hold (matched rotated)."""
_ROT13 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


@cache
def _blocks() -> RuleSet:
    return RuleSet(BLOCKS)


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


def _count(data: bytes, characters: bytes) -> int:
    return len(data) - len(data.translate(None, characters))


def _looks_encoded(block: str) -> bool:
    """Whether a base64-alphabet run reads as an encoding, not a word, a path or an
    identifier: base64 of text mixes cases and holds digits or ``+`` / ``/``."""
    data = block.encode("ascii", "replace")
    return (
        _count(data, _UPPER) >= 2
        and _count(data, _LOWER) >= 2
        and _count(data, _MARKS) >= 1
        and block.count("-") <= len(block) // 8
    )


def _base64(block: str) -> str | None:
    if not _looks_encoded(block):
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


def find_blocks(collector: Collector, read: Reader) -> None:
    """Add an ``encoded_payload`` finding for each base64 or hex block of the collector's
    text that decodes to an instruction ``read`` recognises."""
    subject = collector.subject
    examined = 0
    for rule, found in _blocks().finditer(subject, max_matches=MAX_CANDIDATES + 1):
        examined += 1
        if examined > MAX_CANDIDATES:
            collector.cap(f"encoded blocks: first {MAX_CANDIDATES} examined")
            break
        block = subject.group(found)
        if len(block) < _MIN_BLOCK:
            continue
        kind, decoded = "hex", None
        if rule.category == "base64":
            kind, decoded = "base64", _base64(block)
        if decoded is None and (rule.category == "hex" or _HEXADECIMAL.issuperset(block)):
            # A run of hex digits is in base64's alphabet too: read it as hex as well.
            kind, decoded = "hex", _hex(block)
        if decoded is None:
            continue
        meaning = read(decoded)
        if meaning is not None:
            start, end = subject.span(found)
            collector.add(
                "encoded_payload",
                "high",
                start,
                end,
                f"{kind} decoding to {visible(' '.join(decoded.split())[:80])!r}",
                f"{kind} that decodes to {meaning}",
            )


def rot13(text: str) -> str:
    """``text`` with its ASCII letters rotated by 13 (one pass, lengths kept)."""
    if text.isascii():
        return text.encode("ascii").translate(_ROT13).decode("ascii")
    return text.encode("utf-8", "surrogatepass").translate(_ROT13).decode("utf-8", "surrogatepass")


def find_rot13(collector: Collector, read: Reader) -> None:
    """Add an ``encoded_payload`` finding when the collector's text, rotated by 13,
    holds an instruction ``read`` recognises."""
    rotated = rot13(collector.text)
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
