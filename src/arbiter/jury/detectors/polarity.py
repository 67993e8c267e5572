"""Polarity flips against the context: required ↔ optional, allowed ↔ prohibited, can ↔
cannot, always ↔ never, includes ↔ excludes, and a bare "not" inserted or removed.

A *polar mention* is a rule word with its axis and sign ("not required" is obligation −,
the same as "optional"; "not allowed" is permission −, the same as "prohibited"). Each
output mention is aligned with the context mentions of its axis by the words around
them; it is a flip when the best-aligned context mention has the other sign and beats
every same-sign one by a margin.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress

from arbiter.contract import Callout
from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.overlaps import SCAN_LIMIT, WindowGroups, window_key
from arbiter.jury.detectors.settings import DetectorSettings
from arbiter.jury.detectors.text import WORD_CACHE, Window, overlap, stem, window

__all__ = ["polarity_flips"]

SEGMENT_WEIGHT = 0.5
"""Weight of the whole-segment word overlap, added to the window score to break ties."""
_NOT = r"(?:\bnot|n['’]t)"
_CUES: tuple[tuple[str, int, str], ...] = (
    ("obl", -1, _NOT + r"\s+(?:be\s+)?(?:required|mandatory|compulsory|necessary|needed)\b"),
    ("obl", -1, r"\b(?:do|does|did)(?:\s+not|n['’]t)\s+(?:need|require|have\s+to)\b"),
    ("obl", -1, r"\b(?:need\s+not|needn['’]t|no\s+need|not\s+have\s+to|optional(?:ly)?)\b"),
    ("perm", -1, _NOT + r"\s+(?:be\s+)?(?:allowed|permitted|able\s+to)\b"),
    (
        "perm",
        -1,
        r"\b(?:prohibit(?:ed|s)?|forbid(?:den|s)?|banned|disallowed|cannot|can['’]t|can\s+not"
        r"|may\s+not|must\s+not|mustn['’]t|must\s+never|unable\s+to|(?:can|may)\s+only)\b",
    ),
    ("incl", -1, _NOT + r"\s+(?:be\s+)?(?:include[sd]?|including|cover(?:s|ed)?)\b"),
    ("incl", -1, r"\bexclud(?:e|es|ed|ing)\b"),
    (
        "obl",
        1,
        r"\b(?:required|requires?|mandatory|compulsory|obligatory|must|needs?\s+to"
        r"|ha(?:ve|s)\s+to)\b",
    ),
    ("perm", 1, r"\b(?:allowed|permitted|may|can|able\s+to)\b"),
    ("freq", 1, r"\balways\b"),
    ("freq", -1, r"\bnever\b"),
    ("incl", 1, r"\b(?:includ(?:e|es|ed|ing)|cover(?:s|ed)?|comes?\s+with)\b"),
)
_CUE = re.compile(
    "|".join(f"(?P<c{i}>{pattern})" for i, (_, _, pattern) in enumerate(_CUES)), re.IGNORECASE
)
_CUE_STARTER_TEXT = (
    "not do does did don't doesn't didn't need needs needn't no optional optionally prohibit "
    "prohibited prohibits forbid forbidden forbids banned disallowed cannot can can't may must "
    "mustn't unable exclude excludes excluded excluding required requires require mandatory "
    "compulsory obligatory have has allowed permitted able always never include includes "
    "included including cover covers covered come comes"
)
_CUE_STARTERS = frozenset(_CUE_STARTER_TEXT.split())
"""Words a ``_CUE`` match can begin with."""
_DOUBLE_NEGATIVE = re.compile(r"(?:\bnot|n['’]t|\bnever)\s+(?:be\s+)?$", re.IGNORECASE)
_NEGATORS = frozenset({"not", "never", "cannot", "no"})
_DIGIT_NEXT = re.compile(r"\s*\d")
_NEGATION_REACH = 3
# Stems of rule words: a "not" before them is an axis cue, not a bare negation.
_RULE_WORDS = (
    "required require optional allowed permitted prohibited forbidden include included "
    "excluded cover covered need needed must can may always never able"
)
_RULE_STEMS = frozenset(stem(w) for w in _RULE_WORDS.split())


_AXES = frozenset(axis for axis, _, _ in _CUES)
"""The axes of the rule words; a bare negation's axis is ``not:`` and the negated stem."""


@dataclass(frozen=True, slots=True)
class _Cue:
    """A rule word of a text with its axis and sign, before its window is read."""

    axis: str
    sign: int
    start: int
    end: int
    first: int
    last: int
    """Indices of its first and last token."""
    stems: frozenset[str]
    """The stems of its own words, left out of its window."""


@dataclass(frozen=True, slots=True)
class _Mention:
    axis: str
    sign: int
    start: int
    end: int
    window: Window
    segment: frozenset[str]


def _is_month(text: str, start: int, end: int) -> bool:
    """A capitalised "May" is the month unless it opens a sentence before a non-number."""
    before = start  # the end of text[:start].rstrip(), found without copying the text
    while before > 0 and text[before - 1].isspace():
        before -= 1
    opens = start == 0 or (before > 0 and text[before - 1] in ".!?:")
    return not opens or _DIGIT_NEXT.match(text, end) is not None


@lru_cache(maxsize=WORD_CACHE)
def _is_negator(word: str) -> bool:
    """Whether a word is "not", "never", "cannot", "no" or ends in "n't"."""
    low = word.lower().replace("’", "'")
    return low in _NEGATORS or low.endswith("n't")


@lru_cache(maxsize=WORD_CACHE)
def _cue_positions(word: str) -> tuple[int, ...]:
    """Offsets into ``word`` where a ``_CUE`` match can begin, most likely first.

    At its start when the word can begin one; 3 before its end when it ends in "n't".
    """
    low = word.lower().replace("’", "'")
    tries = (0,) if low in _CUE_STARTERS else ()
    if low.endswith("n't"):
        tries = (*tries, len(word) - 3)
    return tries


def _token_range(analysis: Analysis, start: int, end: int) -> tuple[int, int]:
    first = bisect_left(analysis.starts, start)
    last = max(first, bisect_left(analysis.starts, end) - 1)
    return first, last


def _cue_matches(text: str, analysis: Analysis) -> list[re.Match[str]]:
    """Matches of ``_CUE``, tried only where a word can start one (much faster)."""
    tokens = analysis.tokens
    positions = list(map(_cue_positions, tokens.words))
    found: list[re.Match[str]] = []
    taken = 0
    # Only the few words that can start a cue are visited (a figure's word is empty).
    for i in compress(range(len(positions)), positions):
        start = tokens.starts[i]
        if start < taken:
            continue
        for offset in positions[i]:
            match = _CUE.match(text, start + offset)
            if match:
                found.append(match)
                taken = match.end()
                break
    return found


@lru_cache(maxsize=256)
def _axis_cues(text: str) -> tuple[_Cue, ...]:
    """The rule words of ``text`` with their axis and sign, before their windows are read."""
    analysis = analyse(text)
    cues: list[_Cue] = []
    for match in _cue_matches(text, analysis):
        name = match.lastgroup or "c0"
        axis, sign, _ = _CUES[int(name[1:])]
        word = match.group()
        if word == "May" and _is_month(text, match.start(), match.end()):
            continue
        if sign and _DOUBLE_NEGATIVE.search(text, max(0, match.start() - 16), match.start()):
            if axis == "freq":
                continue
            sign = -sign
        first, last = _token_range(analysis, match.start(), match.end())
        if first >= len(analysis.tokens):
            continue
        own = frozenset(stem(w) for w in word.split())
        cues.append(_Cue(axis, sign, match.start(), match.end(), first, last, own))
    return tuple(cues)


@lru_cache(maxsize=256)
def _axis_mentions(text: str, axes: frozenset[str]) -> tuple[_Mention, ...]:
    """The polar mentions of ``text`` on ``axes``, in order.

    A context's are only wanted on the axes its output has mentions on: reading the
    words around the others would be wasted.
    """
    analysis = analyse(text)
    tokens = analysis.tokens
    return tuple(
        _Mention(
            cue.axis,
            cue.sign,
            cue.start,
            cue.end,
            window(tokens, cue.first, cue.last, ignore=cue.stems),
            analysis.segment_words(cue.first) - cue.stems,
        )
        for cue in _axis_cues(text)
        if cue.axis in axes
    )


@lru_cache(maxsize=256)
def _negated_stems(text: str) -> frozenset[str]:
    """Stems of the first content word after each bare negator ("not eligible")."""
    tokens = analyse(text).tokens
    stems, starts = tokens.stems, tokens.starts
    cues = _axis_cues(text)
    cue_starts = [c.start for c in cues]  # in order, and the cues do not overlap
    found: set[str] = set()
    # Only the few negators are visited (a figure's word is empty, so never one).
    for i in compress(range(len(tokens)), map(_is_negator, tokens.words)):
        cue = bisect_right(cue_starts, starts[i]) - 1
        if cue >= 0 and starts[i] < cues[cue].end:
            continue  # "cannot", "not required": a rule word's own negation
        segment = tokens.segment(i)
        for j in range(i + 1, i + 1 + _NEGATION_REACH):
            if j not in segment or not stems[j]:
                break
            if stems[j] in _RULE_STEMS:
                break
            if tokens.contents[j]:
                found.add(stems[j])
                break
    return frozenset(found)


@lru_cache(maxsize=256)
def _negation_mentions(text: str, stems: frozenset[str]) -> tuple[_Mention, ...]:
    """Every occurrence of ``stems``, negative when a negator is near it in its clause."""
    analysis = analyse(text)
    tokens = analysis.tokens
    mentions: list[_Mention] = []
    # Only the occurrences of ``stems`` are visited.
    for i in compress(range(len(tokens)), map(stems.__contains__, tokens.stems)):
        word = tokens.stems[i]
        if not tokens.contents[i]:
            continue
        clause = tokens.clause(i)
        near = range(max(0, i - _NEGATION_REACH), min(i + _NEGATION_REACH + 1, len(tokens)))
        negated = any(
            j in clause and tokens.stems[j] and _is_negator(tokens.words[j]) for j in near
        )
        mentions.append(
            _Mention(
                "not:" + word,
                -1 if negated else 1,
                tokens.starts[i],
                tokens.ends[i],
                window(tokens, i, i, ignore={word}),
                analysis.segment_words(i) - {word},
            )
        )
    return tuple(mentions)


def _score(a: _Mention, b: _Mention) -> float:
    shared = len(a.segment & b.segment) / max(1, min(len(a.segment), len(b.segment)))
    return overlap(a.window, b.window) + SEGMENT_WEIGHT * shared


class _Alignment:
    """The context's polar mentions by axis, found through the words of their segments.

    A mention's window words are words of its segment, so a context mention sharing no
    segment word with an output mention scores 0 against it and changes nothing.
    Mentions alike in sign, window and segment score alike: the first stands for all.
    An axis with few mentions is simply scanned.
    """

    def __init__(self, mentions: Sequence[_Mention]) -> None:
        self.mentions = tuple(mentions)
        self.scanned: dict[str, list[_Mention]] = {}
        numbers: dict[str, list[int]] = {}
        for k, m in enumerate(self.mentions):
            self.scanned.setdefault(m.axis, []).append(m)
            numbers.setdefault(m.axis, []).append(k)
        self.groups: dict[str, WindowGroups] = {}
        for axis, on_axis in numbers.items():
            if len(on_axis) > SCAN_LIMIT:
                groups = self.groups[axis] = WindowGroups()
                for k in on_axis:
                    m = self.mentions[k]
                    groups.add((m.sign, window_key(m.window), m.segment), k, m.window, m.segment)
                groups.seal()
        self._aligned: dict[tuple[object, ...], tuple[float, float, _Mention | None]] = {}

    def align(self, mention: _Mention) -> tuple[float, float, _Mention | None]:
        """The best same-sign score, the best other-sign score, and its first mention."""
        groups = self.groups.get(mention.axis)
        if groups is None:
            return _align(mention, self.scanned.get(mention.axis, ()))
        key = (mention.axis, mention.sign, window_key(mention.window), mention.segment)
        if key not in self._aligned:
            found = groups.candidates(mention.segment)
            others = [self.mentions[groups.members[number][0]] for number in found]
            self._aligned[key] = _align(mention, others)
        return self._aligned[key]


def _align(mention: _Mention, others: Iterable[_Mention]) -> tuple[float, float, _Mention | None]:
    """The best score of ``others`` (in context order) of each sign, and the rival."""
    same, opposite, rival = 0.0, 0.0, None
    for other in others:
        score = _score(mention, other)
        if other.sign == mention.sign:
            same = max(same, score)
        elif score > opposite:
            opposite, rival = score, other
    return same, opposite, rival


@lru_cache(maxsize=256)
def _alignment(context: str, axes: frozenset[str], negated: frozenset[str]) -> _Alignment:
    """The context's mentions on ``axes`` and of the ``negated`` stems, indexed (cached)."""
    mentions = list(_axis_mentions(context, axes))
    if negated:
        mentions += _negation_mentions(context, negated)
    return _Alignment(mentions)


def polarity_flips(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Rules whose polarity the output flips against the context.

    Args:
        task: Unused.
        context: The source.
        output: The output under judgement.
        settings: ``polarity_match``, ``polarity_margin`` and ``negation_flips`` apply.

    Returns:
        ``consistency``/``contradicted`` callouts quoting the output's clause, with the
        context's clause as rival.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in polarity_flips("", "A signature is required on delivery.",
        ...     "A signature is optional on delivery.", DetectorSettings())]
        ['A signature is optional on delivery']
    """
    del task
    out_mentions = list(_axis_mentions(output, _AXES))
    if settings.negation_flips:
        stems = _negated_stems(output) | _negated_stems(context)
        if stems:
            out_mentions += _negation_mentions(output, stems)
    # Only the context's mentions on the output's axes are ever compared.
    axes = {m.axis for m in out_mentions}
    negated = frozenset(axis[len("not:") :] for axis in axes - _AXES)
    alignment = _alignment(context, frozenset(axes & _AXES), negated)
    out, ctx = analyse(output), analyse(context)
    callouts: list[Callout] = []
    for mention in out_mentions:
        same, opposite, rival = alignment.align(mention)
        if rival is None or opposite < settings.polarity_match:
            continue
        if opposite <= settings.polarity_margin * same:
            continue
        said, source = output[mention.start : mention.end], context[rival.start : rival.end]
        if not mention.axis.startswith("not:"):
            claim = f"The output says '{said}' where the context says '{source}'."
        elif mention.sign < 0:
            claim = f"The output negates '{said}', which the context affirms."
        else:
            claim = f"The output affirms '{said}', which the context negates."
        callouts.append(
            Callout(
                dimension="consistency",
                kind="contradicted",
                claim=claim,
                quote=out.clause(mention.start, mention.end),
                rival=ctx.clause(rival.start, rival.end),
            )
        )
    return callouts
