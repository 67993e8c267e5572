"""An answer's claims, and whether a body of support text backs them, word by word.

A *claim* is a sentence of the answer that carries at least one content word: the text
is split after ``.``, ``!`` or ``?`` followed by a space, and at line breaks (a list
item is a claim of its own). *Content words* are the letter-or-digit runs of a text,
case-folded, without English function words and pleasantries (:data:`STOPWORDS`) or
lone letters, a plural ``s`` dropped from words of four letters or more (``orders``
meets ``order``; both sides are folded alike, so ``Paris`` meets ``Paris``).
Underscores and punctuation split words, so a JSON key ``avg_delivery_days`` supplies
``avg``, ``delivery`` and ``day``.

A claim is *supported* when at least a given share of its content words occur in the
support's vocabulary. This is lexical evidence, not entailment: it catches an answer
that talks about what the support never mentions, and it is the cheap first half of
grounding; whether the words are put together truthfully is a judge's question.

Every function is linear in the length of its text: splitting and word finding are
single regex passes whose alternatives cannot backtrack, and the number of claims
(and of sentences) read is capped (:data:`MAX_CLAIMS`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import JsonValue

__all__ = [
    "MAX_CLAIMS",
    "STOPWORDS",
    "Claim",
    "Vocabulary",
    "claims_of",
    "content_words",
    "json_texts",
]

MAX_CLAIMS = 5_000
"""Claims of one answer read; the rest is not graded (and the cut is reported)."""
_MAX_CLAIM_CHARS = 2_000
"""Characters of a claim kept for quoting."""
_MAX_JSON_NODES = 200_000
"""JSON nodes of one value read for text."""

STOPWORDS = frozenset(
    """\
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during
    each either else etc even ever every few for from further had has have having he her
    here hers herself him himself his how however i if in into is it its itself just let
    like may me might more most much must my myself neither no nor not now of off on once
    only or other our ours ourselves out over own per please quite rather really said same
    shall she should since so some such than that the their theirs them themselves then
    there these they this those though through thus to too under until up upon us very
    via was we well were what when where whether which while who whom whose why will with
    within without would yes yet you your yours yourself yourselves
    sure okay ok hope helps help glad happy certainly course thanks thank let know feel
    free anything following based
    """.split()  # noqa: SIM905  (a word list reads better as text)
)
"""Words that carry no claim of their own (function words, pleasantries)."""

_WORD = re.compile(r"[^\W_]+")
# A break after sentence punctuation and a space, or at a line break. Each alternative
# starts on one fixed character (the lookbehind's, or the newline) and then takes a
# whole run of spaces, so no position is scanned twice: the split is linear. (A leading
# ``\s*`` would rescan a long run of spaces from each of its positions.)
_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*")
_LIST_NUMBER = re.compile(r"[-*#>\s]*\(?[0-9]{1,3}[.)]")


def _fold(word: str) -> str | None:
    """The word as compared, or None for a stopword or a lone letter (what an apostrophe
    leaves: ``it's``, ``I'm``)."""
    folded = word.casefold()
    if folded in STOPWORDS or (len(folded) == 1 and not folded.isdigit()):
        return None
    if len(folded) >= 4 and folded.endswith("s") and not folded.endswith("ss"):
        folded = folded[:-1]
        return None if folded in STOPWORDS else folded
    return folded


def content_words(text: str) -> list[str]:
    """The content words of ``text``, in order, with repeats.

    Examples:
        >>> content_words("The orders were shipped on 2024-03-05!")
        ['order', 'shipped', '2024', '03', '05']
    """
    normalised = text if text.isascii() else unicodedata.normalize("NFKC", text)
    words = (_fold(match.group()) for match in _WORD.finditer(normalised))
    return [word for word in words if word is not None]


@dataclass(frozen=True)
class Claim:
    """One sentence of an answer that says something."""

    text: str
    """The sentence (clipped for quoting)."""
    words: frozenset[str]
    """Its distinct content words."""


def claims_of(answer: str, *, limit: int = MAX_CLAIMS) -> tuple[list[Claim], bool]:
    """The claims of an answer, in order, and whether some were left unread.

    Args:
        answer: The delivered text.
        limit: Most claims read; at most ten times as many sentences are looked at.

    Returns:
        The claims (sentences with a content word) and True when some text was not read.

    Examples:
        >>> [c.text for c in claims_of("Sure! Revenue was 4.2M. Hope this helps.")[0]]
        ['Revenue was 4.2M.']
    """
    claims: list[Claim] = []
    start = 0
    for sentences, match in enumerate(_BREAK.finditer(answer), start=1):
        _add(claims, answer[start : match.start()])
        start = match.end()
        if len(claims) >= limit or sentences >= 10 * limit:
            return claims, bool(answer[start:].strip())
    _add(claims, answer[start:])
    return claims, False


def _add(claims: list[Claim], sentence: str) -> None:
    """Append the sentence as a claim when it has a content word (a list item's number,
    split off as a sentence of its own, is none)."""
    text = sentence.strip()
    if len(text) <= 8 and _LIST_NUMBER.fullmatch(text):
        return
    words = frozenset(content_words(text))
    if words:
        if len(text) > _MAX_CLAIM_CHARS:
            text = text[:_MAX_CLAIM_CHARS] + " [...]"
        claims.append(Claim(text, words))


def json_texts(value: JsonValue, *, limit: int = _MAX_JSON_NODES) -> Iterator[str]:
    """The text a JSON value holds: strings, object keys and numbers, depth first.

    Examples:
        >>> list(json_texts({"total_orders": 42, "rows": [["EU", True]]}))
        ['total_orders', '42', 'rows', 'EU']
    """
    stack: list[JsonValue] = [value]
    seen = 0
    while stack and seen < limit:
        node = stack.pop()
        seen += 1
        if isinstance(node, str):
            yield node
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int | float):
            yield repr(node) if isinstance(node, float) else str(node)
        elif isinstance(node, dict):
            for key, item in reversed(list(node.items())):
                stack.append(item)
                stack.append(key)
        else:
            stack.extend(reversed(node))


class Vocabulary:
    """The content words of a body of support text, with a cap on what is read.

    Args:
        max_chars: Characters of support read in all; beyond it texts are skipped and
            :attr:`truncated` says so.
    """

    def __init__(self, *, max_chars: int = 8_000_000) -> None:
        self.words: set[str] = set()
        self.chars = 0
        self.truncated = False
        self._budget = max_chars

    def add(self, texts: Iterable[str]) -> None:
        """Read the content words of each text, while the character budget lasts."""
        for text in texts:
            if self.chars + len(text) > self._budget:
                text = text[: max(self._budget - self.chars, 0)]
                self.truncated = True
            if text:
                self.chars += len(text)
                self.words.update(content_words(text))
            if self.truncated:
                return

    def support(self, claim: Claim) -> float:
        """The share of the claim's content words the vocabulary holds."""
        return len(claim.words & self.words) / len(claim.words)
