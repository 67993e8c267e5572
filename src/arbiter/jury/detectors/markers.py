"""Unsupported-claim markers: "studies show", "experts agree", "guaranteed", "100%",
"never fails", "clinically proven" — unless the context itself says so.

With ``settings.weak_markers`` weak absolutes count too ("always", "completely",
"the best").
"""

from __future__ import annotations

import re
from functools import lru_cache

from arbiter.contract import Callout
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import clause_span

__all__ = ["unsupported_markers"]

# Each marker: words one of which must occur (a cheap filter), the pattern, and whether
# it is weak (an absolute that only the adversary treats as a claim marker).
_MARKERS: tuple[tuple[tuple[str, ...], re.Pattern[str], bool], ...] = tuple(
    (keys, re.compile(pattern, re.IGNORECASE), weak)
    for keys, pattern, weak in (
        (
            ("stud", "research", "scien", "expert", "doctor", "dentist", "survey"),
            r"\b(?:studies|research|science|scientists|experts|doctors|dentists|surveys?)\s+"
            r"(?:show|shows|showed|shown|have\s+shown|has\s+shown|suggests?|proves?|proven|"
            r"confirms?|agrees?|says?|recommends?)\b",
            False,
        ),
        (
            ("clinically", "scientifically", "medically"),
            r"\b(?:clinically|scientifically|medically)\s+(?:proven|tested|shown|approved)\b",
            False,
        ),
        (("proven",), r"\bproven\b", False),
        (("guarantee",), r"\bguarantee[sd]?\b", False),
        (("100",), r"(?<![\d.])100\s?%|\b100\s+per\s?cent\b", False),
        (("never fail",), r"\bnever\s+fails?\b", False),
        (("risk",), r"\brisk[-\s]free\b", False),
        (
            ("known", "regarded", "accepted"),
            r"\b(?:it\s+is\s+|it['’]s\s+)?(?:well|widely|universally)\s+"
            r"(?:known|regarded|accepted)\b",
            False,
        ),
        (("everyone",), r"\beveryone\s+(?:knows|agrees)\b", False),
        (("always",), r"\balways\b", True),
        (
            (
                "completely",
                "entirely",
                "totally",
                "definitely",
                "certainly",
                "undoubtedly",
                "perfectly",
            ),
            r"\b(?:completely|entirely|totally|definitely|certainly|undoubtedly|perfectly)\b",
            True,
        ),
        (("best",), r"\bthe\s+best\b|\bbest[-\s]in[-\s]class\b|\bworld['’]s\s+best\b", True),
        (("every",), r"\bevery\s+(?:single\s+)?time\b", True),
        (("world",), r"\bworld['’]s\s+(?:leading|first)\b", True),
    )
)


@lru_cache(maxsize=256)
def _markers(text: str) -> tuple[tuple[int, int, int], ...]:
    """Every marker of ``text`` as ``(marker index, start, end)`` (cached: every lens asks)."""
    low = text.lower()
    found: list[tuple[int, int, int]] = []
    for index, (keys, pattern, _) in enumerate(_MARKERS):
        if any(key in low for key in keys):
            found.extend((index, m.start(), m.end()) for m in pattern.finditer(text))
    return tuple(sorted(found, key=lambda item: item[1]))


@lru_cache(maxsize=1024)
def _uses(text: str, index: int) -> bool:
    """Whether ``text`` has marker ``index`` (cached: every lens asks).

    The same as ``index in {i for i, _, _ in _markers(text)}``, but a long context is
    only searched for the markers the output uses, and only up to the first one.
    """
    keys, pattern, _ = _MARKERS[index]
    low = text.lower()
    return any(key in low for key in keys) and pattern.search(text) is not None


def unsupported_markers(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Claims of the output flagged by a marker word the context never uses.

    Args:
        task: Unused.
        context: The source; a marker it also uses is not flagged.
        output: The output under judgement.
        settings: ``weak_markers`` adds the weak absolutes.

    Returns:
        ``accuracy``/``unsupported`` callouts quoting the clause of each marker.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in unsupported_markers("", "A desk.",
        ...     "A desk. Studies show it boosts focus.", DetectorSettings())]
        ['Studies show it boosts focus']
    """
    del task
    callouts: list[Callout] = []
    quoted: set[tuple[int, int]] = set()
    for index, start, end in _markers(output):
        if (_MARKERS[index][2] and not settings.weak_markers) or _uses(context, index):
            continue
        span = clause_span(output, start, end, min_words=4)
        if span in quoted:
            continue
        quoted.add(span)
        callouts.append(
            Callout(
                dimension="accuracy",
                kind="unsupported",
                claim=f"'{output[start:end]}' claims more than the context supports.",
                quote=output[span[0] : span[1]],
            )
        )
    return callouts
