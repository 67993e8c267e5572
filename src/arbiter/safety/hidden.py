"""Invisible characters that carry or disguise instructions: tags, bidi controls, zero-width.

- *Tag characters* (U+E0000-U+E007F) mirror ASCII but render as nothing: a model reads
  the text they spell, a person sees none of it. Their one legitimate use is a flag
  emoji's subdivision sequence (a black flag U+1F3F4, a few tag letters, a cancel tag),
  which is allowed. Any other run is ``high`` and its preview spells the hidden text.
- *Variation selectors* in a run of three or more encode bytes the same way (one after a
  character picks its glyph, which is allowed).
- *Bidirectional controls* (embeddings, overrides, isolates) make text display in an
  order other than the one it is read in; an override (U+202D, U+202E) is ``high``, the
  others ``medium``. The marks used in right-to-left writing (U+200E, U+200F) are allowed.
- *Zero-width characters*: a run of two or more, or several inside Latin words, split
  words so that filters miss them (``ig\\u200bnore``); the joiners of emoji sequences
  and of Persian or Indic writing sit alone between non-Latin characters and are allowed.

:func:`stripped` gives the text without its zero-width characters, with the map back to
the original offsets, so the text rules can read the words they split.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import cache

from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.patterns import Compiled, Subject, compile_re2
from arbiter.safety.text import preview, visible

__all__ = ["find_hidden", "stripped"]

_TAG_FLAG_MAX = 8
"""Tag characters a flag emoji's subdivision sequence may hold (letters and the cancel)."""
_SPLIT_WORDS = 2
"""Zero-width characters inside Latin words that make a finding."""
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
_HIDDEN = (
    r"(?P<tag>[\x{E0000}-\x{E007F}]+)"
    r"|(?P<selector>[\x{FE00}-\x{FE0F}\x{E0100}-\x{E01EF}]{3,})"
    r"|(?P<bidi>[\x{202A}-\x{202E}\x{2066}-\x{2069}]+)"
    r"|(?P<run>[\x{200B}-\x{200D}\x{2060}-\x{2064}\x{FEFF}\x{180E}]{2,})"
    r"|(?P<split>[A-Za-z][\x{200B}-\x{200D}\x{2060}-\x{2064}\x{FEFF}\x{180E}][A-Za-z])"
)


@cache
def _hidden() -> Compiled:
    return compile_re2(_HIDDEN)


@cache
def _zero_width() -> Compiled:
    return compile_re2("[" + _ZERO_WIDTH + "]")


@cache
def _zero_width_table() -> dict[int, None]:
    return dict.fromkeys(map(ord, _ZERO_WIDTH))


def _spelled(run: str) -> str:
    """The ASCII a run of tag characters spells."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def find_hidden(collector: Collector) -> bool:
    """Add a finding for each hidden-character run of the collector's text.

    Returns:
        Whether zero-width characters split words (the caller then reads the stripped
        text too).
    """
    text, subject = collector.text, collector.subject
    splits: list[tuple[int, int]] = []
    seen = 0
    for found in _hidden().finditer(subject.data):
        seen += 1
        if seen > MAX_CANDIDATES:
            collector.cap(f"hidden-character runs: first {MAX_CANDIDATES} examined")
            break
        start, end = subject.span(found)
        branch = found.lastgroup
        if branch == "tag":
            run = subject.group(found, "tag")
            flag = start > 0 and text[start - 1] == "\U0001f3f4"
            if flag and len(run) <= _TAG_FLAG_MAX and run.endswith("\U000e007f"):
                continue
            spelled = _spelled(run)
            shown = f"tag characters spelling {visible(spelled)!r}" if spelled else "tag characters"
            collector.add("hidden_unicode", "high", start, end, shown, "invisible tag characters")
        elif branch == "selector":
            collector.add(
                "hidden_unicode",
                "high",
                start,
                end,
                f"{end - start} variation selectors in a row",
                "a run of variation selectors can encode hidden bytes",
            )
        elif branch == "bidi":
            run = subject.group(found, "bidi")
            override = "\u202d" in run or "\u202e" in run
            collector.add(
                "hidden_unicode",
                "high" if override else "medium",
                start,
                end,
                preview(text, start, end, context=30),
                "a bidirectional override shows text in another order than it is read"
                if override
                else "bidirectional controls reorder how text is shown",
            )
        elif branch == "run":
            collector.add(
                "hidden_unicode",
                "high" if end - start >= 4 else "medium",
                start,
                end,
                preview(text, start, end, context=20),
                f"{end - start} zero-width characters in a row",
            )
        else:
            splits.append((start, end))
    if len(splits) >= _SPLIT_WORDS:
        first, last = splits[0][0], splits[-1][1]
        collector.add(
            "hidden_unicode",
            "medium",
            first,
            last,
            preview(text, first, min(last, first + 60)),
            f"{len(splits)} zero-width characters inside words",
        )
    return bool(splits)


def stripped(text: str) -> tuple[str, Callable[[int], int]] | None:
    """``text`` without zero-width characters, and a map from its offsets to ``text``'s;
    None when it holds more than :data:`MAX_CANDIDATES` of them (not worth reading as
    words)."""
    removed: list[int] = []
    subject = Subject(text)
    for found in _zero_width().finditer(subject.data):
        if len(removed) == MAX_CANDIDATES:
            return None
        removed.append(subject.char(found.start()))
    if not removed:
        return text, lambda offset: offset
    # The stripped offset where each removed character stood: non-decreasing.
    landing = [position - rank for rank, position in enumerate(removed)]

    def original(offset: int) -> int:
        return offset + bisect_right(landing, offset)

    return text.translate(_zero_width_table()), original
