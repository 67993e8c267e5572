"""Names the output introduces that neither the context nor the task contains.

A capitalised word inside a sentence ("approved by CFO Martin Alvarez", "built with
Dropbox") is read as a name. When none of the source's words is that word (compared
without case, and by stem), the claim around it has no support: an ``unsupported``
finding, which synthesis caps at REVISE. A word opening a sentence or a line is not
read as a name (it is capitalised anyway), so a one-word name there is missed; the
second word of a multi-word name is still seen.
"""

from __future__ import annotations

from functools import lru_cache

from arbiter.contract import Callout
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.swaps import CALENDAR_WORDS, MAX_MENTIONS
from arbiter.jury.detectors.text import clause_span, stem, words_of

__all__ = ["unsupported_names"]

# Capitalised mid-sentence for reasons other than being a name of something new.
_COMMON_TEXT = "i i'm i've i'd i'll ok mr mrs ms dr prof st am pm"
_COMMON = frozenset(_COMMON_TEXT.split()) | CALENDAR_WORDS
_OPENERS = ".!?:;\n\"'“‘(-*•"


def _opens(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence, a line, a quote or a list item."""
    before = start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    return before == 0 or text[before - 1] in _OPENERS


@lru_cache(maxsize=256)
def _vocabulary(text: str) -> frozenset[str]:
    """Every word of ``text``, lowercased, and its stem."""
    words = {w.lower().replace("’", "'") for w in words_of(text)[2]}
    return frozenset(words | {stem(w) for w in words})


def unsupported_names(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Capitalised names in the output that the context and the task never mention.

    Args:
        task: Its words count as support too ("Summarise Priya's notes").
        context: The source.
        output: The output under judgement.
        settings: Unused.

    Returns:
        ``accuracy``/``unsupported`` callouts quoting the clause of each new name.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in unsupported_names("", "The supplier signed on Friday.",
        ...     "The deal was signed by Acme on Friday.", DetectorSettings())]
        ['The deal was signed by Acme on Friday']
    """
    del settings
    known = _vocabulary(context) | _vocabulary(task)
    starts, ends, words = words_of(output)
    callouts: list[Callout] = []
    quoted: set[tuple[int, int]] = set()
    seen: set[str] = set()
    for start, end, word in zip(starts, ends, words, strict=True):
        if not word[0].isupper() or len(word) < 2:
            continue
        low = word.lower().replace("’", "'")
        if low in _COMMON or low in known or stem(low) in known or low in seen:
            continue
        if _opens(output, start):
            continue
        seen.add(low)
        span = clause_span(output, start, end, min_words=4)
        if span in quoted:
            continue
        quoted.add(span)
        callouts.append(
            Callout(
                dimension="accuracy",
                kind="unsupported",
                claim=f"'{word}' is named, but the context never mentions it.",
                quote=output[span[0] : span[1]],
            )
        )
        if len(callouts) >= MAX_MENTIONS:
            break
    return callouts
