"""What every safety detector does to a text first: bound it, fold it, show it inertly.

- :func:`bounded`: the first ``limit`` characters of a text, and whether it was cut.
  Every detector reads a bounded text and says so in its scan.
- :func:`fold`: one character in, one character out (so spans stay valid), mapping the
  disguises of a word onto the word: fullwidth forms, Cyrillic and Greek letters that
  look Latin, and leetspeak digits and symbols (``1gn0r3`` reads ``ignore``).
- :func:`visible`: invisible and control characters written as ``\\uXXXX``, so a preview
  shows what a reader would not see.
- :func:`preview`: a short, visible excerpt of a span, for findings that may quote what
  they found (an injection, not a secret).

Every function here runs in time linear in its input.
"""

from __future__ import annotations

from functools import cache

from arbiter.escape import clip
from arbiter.safety.patterns import Compiled, Subject, compile_re2, searchable

__all__ = [
    "DEFAULT_LIMIT",
    "PREVIEW_CHARS",
    "bounded",
    "fold",
    "folded_subject",
    "preview",
    "visible",
]

DEFAULT_LIMIT = 1_000_000
"""Characters a detector reads of one text by default (the longest text a trajectory holds)."""

PREVIEW_CHARS = 120
"""Longest preview of a finding."""

_WORD_REACH = 40
"""Characters either side of where two scripts meet read as the word they meet in."""
_MAX_DISGUISED = 256
"""Disguised words folded one by one; past this many the whole text is folded at once."""

# Letters of other scripts that render like Latin ones, as used to slip words past filters.
_CONFUSABLES = {
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "ɡ": "g", "һ": "h", "ⅼ": "l", "ո": "n", "ս": "u",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S",
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "ν": "v", "χ": "x", "Α": "A", "Β": "B", "Ε": "E", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ζ": "Z",
}  # fmt: skip
# Leetspeak: ASCII digits and symbols standing for letters (bytes: UTF-8 keeps every
# ASCII byte for itself, so this folds a UTF-8 encoding byte for byte).
_LEET = bytes.maketrans(b"01345789@$!|", b"oieastbgasil")
# A word that mixes Latin letters with look-alikes of other scripts, or a run of
# fullwidth forms: the only places the look-alikes are folded (a text in Cyrillic or
# Greek is left as it is).
_DISGUISED = (
    r"\p{Latin}[\p{Cyrillic}\p{Greek}]|[\p{Cyrillic}\p{Greek}]\p{Latin}|[\x{FF01}-\x{FF5E}]+"
)

# What a preview writes as an escape: C0 and C1 controls, DEL, and the characters that
# hide, join or reorder text (zero-width, bidirectional controls, tags, variation
# selectors, the byte-order mark).
_INVISIBLE_RANGES = (
    (0x00, 0x08),
    (0x0B, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0xE0000, 0xE007F),
    (0xE0100, 0xE01EF),
)


@cache
def _fold_table() -> dict[int, str]:
    table = {ord(k): v for k, v in _CONFUSABLES.items()}
    # Fullwidth ASCII (U+FF01-U+FF5E) onto ASCII, then leetspeak on that.
    table.update({code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)})
    leet = {chr(a): chr(b) for a, b in enumerate(_LEET) if a != b}
    return {code: leet.get(value, value) for code, value in table.items()}


@cache
def _disguised() -> Compiled:
    return compile_re2(_DISGUISED)


@cache
def _visible_table() -> dict[int, str]:
    return {
        code: f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"
        for low, high in _INVISIBLE_RANGES
        for code in range(low, high + 1)
    }


def bounded(text: str, limit: int | None) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut (None: no limit)."""
    if limit is None or len(text) <= limit:
        return text, False
    return text[:limit], True


def fold(text: str) -> str:
    """``text`` with leetspeak, fullwidth forms and look-alike letters mapped onto plain
    Latin letters, one character for one: the result has the length of ``text``, so a
    span found in it is a span of ``text``.

    Look-alike letters are folded only inside words that mix them with Latin letters
    (``ignоre`` with a Cyrillic ``о``), so a text written in Cyrillic stays as it is.

    Examples:
        >>> fold("1gn0r3 ｐｒｅｖｉｏｕｓ")
        'ignore previous'
    """
    if text.isascii():
        return text.encode("ascii").translate(_LEET).decode("ascii")
    folded = text.encode("utf-8", "surrogatepass").translate(_LEET)
    plain = folded.decode("utf-8", "surrogatepass")
    table = _fold_table()
    spans: list[tuple[int, int]] = []
    subject = Subject(searchable(plain))
    for found in _disguised().finditer(subject.data):
        if len(spans) == _MAX_DISGUISED:
            # Disguise everywhere: one pass over the whole text costs less than each word.
            return plain.translate(table)
        start, end = subject.span(found)
        # The word the two scripts meet in, at most a word's length either way.
        low = max(0, start - _WORD_REACH)
        while start > low and plain[start - 1].isalpha():
            start -= 1
        high = min(len(plain), end + _WORD_REACH)
        while end < high and plain[end].isalpha():
            end += 1
        if spans and start <= spans[-1][1]:
            start = spans[-1][0]
            spans.pop()
        spans.append((start, end))
    if not spans:
        return plain
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(plain[last:start])
        pieces.append(plain[start:end].translate(table))
        last = end
    pieces.append(plain[last:])
    return "".join(pieces)


def folded_subject(subject: Subject) -> Subject:
    """:func:`fold` of a subject, as a subject with the same character offsets. Leetspeak
    is folded byte for byte (the offsets map is shared); a text with look-alike letters
    of other scripts by :func:`fold`."""
    if subject.data.isascii() or _disguised().search(subject.data) is None:
        return subject.translated(_LEET)
    return Subject(fold(subject.text))


def visible(text: str) -> str:
    """``text`` with every invisible or control character written as an escape.

    Examples:
        >>> visible("ig\\u200bnore")
        'ig\\\\u200bnore'
    """
    return text.translate(_visible_table())


def preview(text: str, start: int, end: int, *, context: int = 0) -> str:
    """The span ``[start, end)`` of ``text`` (with ``context`` characters around it),
    made visible and cut to :data:`PREVIEW_CHARS`."""
    low, high = max(0, start - context), min(len(text), end + context)
    # Cut before escaping too: an escape is up to 6 characters per character.
    excerpt = " ".join(text[low : min(high, low + PREVIEW_CHARS * 2)].split())
    return clip(visible(excerpt), PREVIEW_CHARS)
