"""Whether a phrase is mentioned rather than used: quoted, or given as an example, in a
text that discusses attacks, formats or language.

``researchers say the phrase 'ignore previous instructions' is common`` quotes an
injection, and ``close every tag, e.g. </document>`` shows a tag: neither addresses the
model. A detector reports such a match ``low``. An attacker can dress an instruction up
the same way; that is a known limit of a lexical first filter.
"""

from __future__ import annotations

from functools import cache

from arbiter.safety.patterns import Compiled, compile_re2

__all__ = ["mentioned"]

_DISCUSSION = (
    r"(?i)\be\.g\.|\b(?:attacks?|attackers?|injections?|jailbreaks?|phrases?|words?|examples?|"
    r"tags?|elements?|markup|html|xml|"
    r"such\s+as|known\s+as|called|researchers?|payloads?|filters?|detect\w*|malicious|"
    r"techniques?|hackers?|warns?|tokens?|syntax|format|documentation|tutorial|article|study|"
    r"paper|classifier|red[\s-]?team\w*|rhetoric|polic(?:y|ies)|moderat\w+|slurs?|insults?|"
    r"quotes?|quoted|said|says|wrote|term|predicts?)\b"
)
"""Words of a text that discusses what it quotes rather than addressing anyone."""
_LEAD_INS = r"(?i)(?:\be\.g\.|\bi\.e\.|\bsuch\s+as|\bfor\s+(?:example|instance)|\blike)[\s:,]*$"
"""Words that introduce an example right before it."""
_OPENING_QUOTES = "\"'`“‘«"
_CLOSING_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»"}
_QUOTE_REACH = 80
"""Characters before a match where its opening quote may stand, and after it its closing."""
_AROUND = 200
"""Characters either side of a match read for words of discussion."""


@cache
def _compiled(pattern: str) -> Compiled:
    return compile_re2(pattern)


def _quoted(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", max(0, start - _QUOTE_REACH), start) + 1
    window = text[max(line_start, start - _QUOTE_REACH) : start]
    opening = max(window.rfind(q) for q in _OPENING_QUOTES)
    if opening < 0:
        return False
    after = text[end : end + _QUOTE_REACH]
    closing = after.find(_CLOSING_QUOTES[window[opening]])
    return closing >= 0 and "\n" not in after[:closing]


def _introduced(text: str, start: int) -> bool:
    return _compiled(_LEAD_INS).search(text[max(0, start - 16) : start]) is not None


def mentioned(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is quoted or given as an example (``e.g.``, ``such
    as``) in a passage that discusses it (words such as ``attack``, ``phrase``,
    ``researchers``, ``token``, ``policy`` within 200 characters)."""
    if not (_quoted(text, start, end) or _introduced(text, start)):
        return False
    around = text[max(0, start - _AROUND) : min(len(text), end + _AROUND)]
    return _compiled(_DISCUSSION).search(around) is not None
