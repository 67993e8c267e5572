"""List-length constraints of the task: "list up to 5" answered with 7, "exactly three"
answered with 2. Fewer items than an upper bound is fine.

Items are bullet or numbered lines (the longest run of them); with
``settings.list_prose`` also a prose enumeration ("X and Y") in the sentence naming the
items, or the output's own count ("Two examples ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from arbiter.contract import Callout
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import segment_bounds, stem

__all__ = ["list_length_breaches"]

_COUNT_TEXT = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_COUNT_WORDS = _COUNT_TEXT.split()
_N = r"(?P<n>\d{1,2}|" + "|".join(_COUNT_WORDS) + r")"
_NOUN = r"(?P<noun>[a-z][a-z\-]*(?:\s+[a-z][a-z\-]*){0,2})"
_BOUND = re.compile(
    r"\b(?P<op>up\s+to|at\s+most|no\s+more\s+than|not\s+more\s+than|a\s+maximum\s+of|"
    r"maximum\s+of|max(?:imum)?|fewer\s+than|less\s+than|at\s+least|a\s+minimum\s+of|"
    r"minimum\s+of|exactly)\s+" + _N + r"\s+" + _NOUN,
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"\b(?:give|list|name|provide|suggest|share|offer|write|identify|pick|choose|select|"
    r"outline|state|mention|recommend|propose|highlight|top)\s+(?:me\s+|us\s+|the\s+)?"
    + _N
    + r"\s+"
    + _NOUN,
    re.IGNORECASE,
)
# Constraints on these are about length or time, not about a number of items.
_NOT_ITEM_TEXT = (
    "words sentences characters letters paragraphs lines pages minutes seconds hours days "
    "weeks months years times percent"
)
_NOT_ITEMS = frozenset(stem(w) for w in _NOT_ITEM_TEXT.split())
_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*•‣◦]|\d{1,2}[.)]|[a-z][.)])[ \t]+\S.*$", re.MULTILINE)
_ENUMERATION_START = re.compile(r"\b(?:are|is|include|includes|were)\b|:", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_ITEM_WORDS = 8
"""Longest item of a prose enumeration, in words; longer parts are clauses, not items."""
_ENUMERATION_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


@dataclass(frozen=True)
class _Constraint:
    low: int | None
    high: int | None
    noun: str
    """Stem of the counted noun (``step`` for "onboarding steps")."""
    phrase: str


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNT_WORDS.index(word.lower()) + 1


def _head(noun_phrase: str) -> str | None:
    """The counted noun: the first plural-looking word of the phrase."""
    for word in noun_phrase.lower().split():
        if word.endswith("s") and len(word) > 3:
            return None if stem(word) in _NOT_ITEMS else stem(word)
    return None


@lru_cache(maxsize=256)
def _constraint(task: str) -> _Constraint | None:
    """The task's list-length constraint, if any (cached: every lens asks)."""
    for pattern in (_BOUND, _IMPERATIVE):
        for match in pattern.finditer(task):
            head = _head(match.group("noun"))
            if head is None:
                continue
            n = _count(match.group("n"))
            op = " ".join(match.groupdict().get("op", "exactly").lower().split())
            low, high = {
                "fewer than": (None, n - 1),
                "less than": (None, n - 1),
                "at least": (n, None),
                "a minimum of": (n, None),
                "minimum of": (n, None),
                "exactly": (n, n),
            }.get(op, (None, n))
            return _Constraint(low, high, head, match.group())
    return None


def _bullet_items(output: str) -> list[tuple[int, int]]:
    """Spans of the items of the longest run of bullet or numbered lines."""
    runs: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    position = 0
    for line in output.splitlines(keepends=True):
        match = _ITEM_LINE.match(line)
        if match:
            current.append((position + match.start(), position + len(line.rstrip())))
        elif line.strip():
            runs.append(current)
            current = []
        position += len(line)
    runs.append(current)
    best = max(runs, key=len)
    stripped = [(s + len(output[s:e]) - len(output[s:e].lstrip()), e) for s, e in best]
    return stripped if len(stripped) >= 2 else []


def _prose_count(output: str, noun: str) -> tuple[int, tuple[int, int]] | None:
    """Items of a prose enumeration naming ``noun``, else the output's own stated count.

    Returns:
        The count and the span of the sentence, or None when no sentence names ``noun``
        with an enumeration ("are X and Y", short items) or a count ("Two examples").
    """
    bounds = [*segment_bounds(output), len(output)]
    for start, end in pairwise(bounds):
        sentence = output[start:end]
        if noun not in {stem(w) for w in _WORDS.findall(sentence)}:
            continue
        span = _segment_span(output, start, end)
        opener = _ENUMERATION_START.search(sentence)
        if opener:
            body = sentence[opener.end() :].strip().rstrip(".!?")
            parts = [p for p in _ENUMERATION_SPLIT.split(body) if p.strip()]
            if len(parts) >= 2 and all(len(p.split()) <= _ITEM_WORDS for p in parts):
                return len(parts), span
        stated = re.search(_N + r"\s+(?:[a-z\-]+\s+){0,2}?" + noun, sentence, re.IGNORECASE)
        if stated:
            return _count(stated.group("n")), span
    return None


def _segment_span(output: str, start: int, end: int) -> tuple[int, int]:
    text = output[start:end]
    return start + len(text) - len(text.lstrip()), start + len(text.rstrip())


def list_length_breaches(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """An answer with more items than the task allows, or not the exact number asked.

    Args:
        task: The task, where the constraint is ("list up to 5 ...", "give exactly three").
        context: Unused.
        output: The output under judgement.
        settings: ``list_prose`` decides whether prose enumerations are counted.

    Returns:
        At most one ``completeness``/``unsupported`` callout, quoting the first item past
        the limit, or the last item when the list stops short.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in list_length_breaches("List up to 2 tips.", "",
        ...     "- a\\n- b\\n- c", DetectorSettings())]
        ['- c']
    """
    del context
    constraint = _constraint(task)
    if constraint is None:
        return []
    items = _bullet_items(output)
    count: int
    if items:
        count = len(items)
    elif settings.list_prose:
        found = _prose_count(output, constraint.noun)
        if found is None:
            return []
        count, span = found
        items = [span] * count
    else:
        return []
    if constraint.high is not None and count > constraint.high:
        s, e = items[constraint.high]
        problem = f"gives {count}"
    elif constraint.low is not None and count < constraint.low:
        s, e = items[-1]
        problem = f"stops at {count}"
    else:
        return []
    return [
        Callout(
            dimension="completeness",
            kind="unsupported",
            claim=f"The task asks for {constraint.phrase.strip()}; the output {problem}.",
            quote=output[s:e],
        )
    ]
