"""An answer's claims, and whether a body of support text backs them, word by word.

A *claim* is a sentence of the answer that carries at least one content word: the text
is split after ``.``, ``!`` or ``?`` followed by a space, and at line breaks (a list
item is a claim of its own). *Content words* are the letter-or-digit runs of a text,
case-folded, without English function words and pleasantries (:data:`STOPWORDS`) or
lone letters, a plural ``s`` dropped from words of four letters or more (``orders``
meets ``order``; both sides are folded alike, so ``Paris`` meets ``Paris``).
Underscores and punctuation split words, so a JSON key ``avg_delivery_days`` supplies
``avg``, ``delivery`` and ``day``. A number is one word, compared by its value:
``1,234.50`` in an answer meets ``1234.5`` in a tool result.

A claim is *supported* when at least a given share of its content words occur in the
support's vocabulary. This is lexical evidence, not entailment: it catches an answer
that talks about what the support never mentions, and it is the cheap first half of
grounding; whether the words are put together truthfully is a judge's question.

Every function is linear in the length of its text: splitting and word finding are
single regex passes whose alternatives cannot backtrack, and the number of claims
(and of sentences) read is capped (:data:`MAX_CLAIMS`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from arbiter.scoring.json_writer import json_writer

__all__ = [
    "MAX_CLAIMS",
    "STOPWORDS",
    "Claim",
    "Vocabulary",
    "claims_of",
    "content_words",
    "json_text",
]

MAX_CLAIMS = 5_000
"""Claims of one answer read; the rest is not graded (and the cut is reported)."""
_MAX_CLAIM_CHARS = 2_000
"""Characters of a claim kept for quoting."""

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

# A token is a number as written (thousands separators in groups of three, a decimal
# part) or a run of letters and digits. Every alternative ends where its characters end
# and the thousands groups are fixed-width, so matching is linear. Every token starts on
# a letter or digit: the lookahead turns every other position away before the three
# alternatives are tried there (a third faster on JSON text, the same tokens).
_TOKEN = re.compile(
    r"(?=[^\W_])(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|[^\W_]+)"
)
_BATCH_CHARS = 65_536
"""Support texts are read in batches of about this many characters."""
# A break after sentence punctuation and a space, or at a line break. Each alternative
# starts on one fixed character (the lookbehind's, or the newline) and then takes a
# whole run of spaces, so no position is scanned twice: the split is linear. (A leading
# ``\s*`` would rescan a long run of spaces from each of its positions.)
_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*")
_LIST_NUMBER = re.compile(r"[-*#>\s]*\(?[0-9]{1,3}[.)]")


def _fold(token: str) -> str | None:
    """A case-folded token as compared: a number by its value (``1,234.50`` and
    ``1234.5`` alike), a word without a plural ``s``; None for a stopword or a lone
    letter (what an apostrophe leaves: ``it's``, ``I'm``)."""
    if token[0] in "0123456789":  # the number alternatives come first: a number
        number = float(token.replace(",", ""))
        if number.is_integer() and number < 1e15:
            return str(int(number))
        return repr(number) if math.isfinite(number) else token
    if token in STOPWORDS or len(token) == 1:
        return None
    if len(token) >= 4 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
        return None if token in STOPWORDS else token
    return token


def _normalised(text: str) -> str:
    """NFKC (full-width letters, ligatures) and case folding, once per text."""
    return (text if text.isascii() else unicodedata.normalize("NFKC", text)).casefold()


def content_words(text: str) -> list[str]:
    """The content words of ``text``, in order, with repeats.

    Examples:
        >>> content_words("The orders were shipped on 2024-03-05, worth $1,234.50!")
        ['order', 'shipped', '2024', '3', '5', 'worth', '1234.5']
    """
    folded = (_fold(token) for token in _TOKEN.findall(_normalised(text)))
    return [word for word in folded if word is not None]


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


_ESCAPE = re.compile(r"\\[nrtbf]")
_TEXT = json_writer(ensure_ascii=False)
"""``json.dumps(value, ensure_ascii=False)``, its encoder made once."""


def json_text(value: JsonValue) -> str:
    """The text of a JSON value as one string: its keys, strings and numbers.

    A string is itself; anything else is its JSON (written in C, so a large tool result
    costs one pass), with the escapes that would glue a letter to the next word
    (``\\n``, ``\\t``) turned back into spaces.

    Examples:
        >>> content_words(json_text({"total_orders": 42, "rows": [["EU\\nwest", True]]}))
        ['total', 'order', '42', 'row', 'eu', 'west', 'true']
    """
    if isinstance(value, str):
        return value
    try:
        written = _TEXT(value)
    except (RecursionError, ValueError, TypeError):  # too deep, an int past str()'s limit
        return "\n".join(_leaves(value))
    return _ESCAPE.sub(" ", written) if "\\" in written else written


def _leaves(value: JsonValue, limit: int = 1_000_000) -> Iterator[str]:
    """The keys and strings of a JSON value, walked without recursion (at most ``limit``
    nodes); numbers are left out, since one of them is what made ``json.dumps`` fail."""
    stack: list[JsonValue] = [value]
    for _ in range(limit):
        if not stack:
            return
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            yield from node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


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
        batch: list[str] = []
        size = 0
        for text in texts:
            if self.chars + len(text) > self._budget:
                text = text[: max(self._budget - self.chars, 0)]
                self.truncated = True
            self.chars += len(text)
            batch.append(text)
            size += len(text)
            if size >= _BATCH_CHARS:
                self._read("\n".join(batch))
                batch, size = [], 0
            if self.truncated:
                break
        self._read("\n".join(batch))

    def _read(self, text: str) -> None:
        # Distinct tokens first (in C), so a repetitive support is folded once per word.
        for token in set(_TOKEN.findall(_normalised(text))):
            word = _fold(token)
            if word is not None:
                self.words.add(word)

    def support(self, claim: Claim) -> float:
        """The share of the claim's content words the vocabulary holds."""
        return len(claim.words & self.words) / len(claim.words)
