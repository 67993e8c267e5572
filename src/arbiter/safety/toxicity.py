"""Toxic and unsafe content in what an agent said: a cheap lexical first filter.

A curated lexicon (``data/toxicity.json``) gives each category (``insult``, ``threat``,
``self_harm``, ``hate``, ``weapons``, ``sexual``, and ``profanity``, recorded ``low``)
its phrase templates. They are *directed* phrases (``you idiot``, ``I will hurt you``,
``X are vermin``, ``how to build a pipe bomb``), not words alone, so ``The Idiot`` by
Dostoevsky, ``kill -9`` and a bath bomb stay clean. Obfuscation is folded before
matching: leetspeak and look-alike letters (``y0u 4r3 4 m0r0n``), starred vowels
(``f*ck``), stretched letters (``stuuupid``) and letters spaced out (``k y s``,
``st u p i d``).

A lexicon cannot read sarcasm, quotation, context or a new euphemism; it misses what
it does not list and flags a listed phrase however it is meant. It is the first,
free filter; the semantic check is a content-safety judge asked through the judging
layer (``arbiter.judging``), which is not part of this detector.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from arbiter.contract.safety import SafetyScan, Severity
from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.mention import mentioned
from arbiter.safety.patterns import Compiled, Rule, RuleSet, Subject, compile_re2
from arbiter.safety.text import DEFAULT_LIMIT, fold, folded_subject, preview

__all__ = ["LEXICON_FILE", "Lexicon", "compile_template", "lexicon", "scan_toxicity"]

LEXICON_FILE = "toxicity.json"
"""The lexicon, in ``arbiter/safety/data/``."""

_SEPARATOR = r"[\s,.!?*_\-]+"
_VOWELS = frozenset("aeiou")
_WILDCARD = r"(?:[\s,]+[a-z']+){0,3}"
_SPACED = r"\b[A-Za-z]{1,2}(?:[ .\-_*][A-Za-z]{1,2}){2,}\b"
_SPACED_CONTEXT = 40
"""Characters either side of a spaced-out run read with it (``you s t u p i d``)."""


@dataclass(frozen=True)
class Lexicon:
    """The compiled lexicon: one rule per category."""

    rules: RuleSet


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` outside brackets and braces."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part]


def _word(word: str) -> str:
    """A literal word: stretched letters, starred vowels, optional apostrophes."""
    pieces = []
    for char in word.lower():
        if char.isalpha():
            pieces.append(rf"(?:{char}|\*)+" if char in _VOWELS else f"{char}+")
        elif char == "'":
            pieces.append("'?")
        elif char == "-":
            pieces.append(r"[\s\-]?")
        elif char.isdigit():
            pieces.append(char)
        else:
            pieces.append(f"\\{char}" if not char.isalnum() else char)
    return "".join(pieces)


def compile_template(template: str, macros: dict[str, str]) -> str:
    """The RE2 pattern of one phrase template (see ``data/toxicity.json``'s ``about``).

    Raises:
        ValueError: An unknown macro or an unbalanced bracket.

    Examples:
        >>> compile_template("go die", {})
        'g+(?:o|\\\\*)+[\\\\s,.!?*_\\\\-]+d+(?:i|\\\\*)+(?:e|\\\\*)+'
    """
    if template.count("[") != template.count("]") or template.count("{") != template.count("}"):
        raise ValueError(f"unbalanced template: {template!r}")
    parts: list[tuple[str, bool]] = []
    for token in _split_top(template, " "):
        optional = token.endswith("?") and len(token) > 1
        token = token[:-1] if optional else token
        if token == "*":
            parts.append((_WILDCARD, False))
            continue
        if token.startswith("{") and token.endswith("}"):
            name = token[1:-1]
            if name not in macros:
                raise ValueError(f"unknown macro {{{name}}} in {template!r}")
            regex = compile_template(macros[name], macros)
        elif token.startswith("[") and token.endswith("]"):
            choices = _split_top(token[1:-1], "|")
            regex = "(?:" + "|".join(compile_template(c, macros) for c in choices) + ")"
        else:
            regex = _word(token)
        parts.append((regex, optional))
    pattern = ""
    for index, (regex, optional) in enumerate(parts):
        # The wildcard brings its own separators; every other word follows one.
        joined = regex if index == 0 or regex == _WILDCARD else _SEPARATOR + regex
        pattern += f"(?:{joined})?" if optional else joined
    return pattern


@cache
def lexicon() -> Lexicon:
    """The shipped lexicon, compiled on first use.

    Raises:
        ValueError: The lexicon file holds a template that does not compile.
    """
    raw = resources.files("arbiter.safety").joinpath("data", LEXICON_FILE).read_text("utf-8")
    document: dict[str, Any] = json.loads(raw)
    macros: dict[str, str] = document["macros"]
    rules = []
    for category, entry in document["categories"].items():
        phrases = [compile_template(phrase, macros) for phrase in entry["phrases"]]
        severity: Severity = entry["severity"]
        pattern = r"(?i)\b(?:" + "|".join(phrases) + r")\b"
        rules.append(Rule(category, severity, pattern, f"lexicon: {category.replace('_', ' ')}"))
    return Lexicon(RuleSet(rules))


@cache
def _spaced() -> Compiled:
    return compile_re2(_SPACED)


def _spaced_out(collector: Collector, rules: RuleSet) -> None:
    """Findings in runs of letters spaced out (``k y s``), read with their surroundings."""
    subject = collector.subject
    for count, found in enumerate(_spaced().finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"spaced-out runs: first {MAX_CANDIDATES} examined")
            return
        start, end = subject.span(found)
        run = subject.group(found)
        tokens = [t for t in _split_any(run) if t]
        if sum(1 for t in tokens if len(t) == 1) < 2:
            continue
        # Where the spaced word starts and ends is ambiguous (``a s t u p i d``): the
        # run is read whole and without its first or last token.
        readings = [(0, len(tokens))]
        if len(tokens) >= 4:
            readings += [(1, len(tokens)), (0, len(tokens) - 1)]
        for first, last in readings:
            if _spaced_reading(collector, rules, tokens, first, last, start, end):
                break


def _spaced_reading(
    collector: Collector,
    rules: RuleSet,
    tokens: list[str],
    first: int,
    last: int,
    start: int,
    end: int,
) -> bool:
    """Add the findings of one reading of a spaced-out run: tokens ``first`` to ``last``
    joined, the others kept as words. Returns whether there were any."""
    text = collector.text
    joined = " ".join([*tokens[:first], "".join(tokens[first:last]), *tokens[last:]])
    left = text[max(0, start - _SPACED_CONTEXT) : start]
    right = text[end : end + _SPACED_CONTEXT]
    window = Subject(fold(left + joined + right))
    low, high = len(left), len(left) + len(joined)
    added = False
    for rule, match in rules.finditer(window, max_matches=8):
        first, last = window.span(match)
        if first < high and low < last and rule.severity != "low":
            collector.add(
                rule.category,
                rule.severity,
                start,
                end,
                preview(window.text, first, last),
                f"{rule.note} (letters spaced out)",
            )
            added = True
    return added


def _split_any(run: str) -> list[str]:
    for separator in " .-_*":
        run = run.replace(separator, " ")
    return run.split(" ")


def scan_toxicity(text: str, *, limit: int | None = DEFAULT_LIMIT) -> SafetyScan:
    """Scan text an agent said for toxic or unsafe content (a lexical first filter).

    Args:
        text: An answer or a message.
        limit: Characters read (the rest is ignored and the scan says ``truncated``).

    Raises:
        ValueError: ``limit`` is not a positive int or None.

    Examples:
        >>> [f.category for f in scan_toxicity("y0u 4r3 4 m0r0n").findings]
        ['insult']
        >>> scan_toxicity("Kill the process with kill -9 1234.").findings
        []
    """
    collector = Collector("toxicity", text, limit)
    rules = lexicon().rules
    text = collector.text
    folded = folded_subject(collector.subject)
    # Digits are read as written (step 1 to ...) and folded (y0u 4r3); overlapping
    # findings of the two readings are merged by the scan.
    readings = [collector.subject]
    if folded.data != collector.subject.data:
        readings.append(folded)
    for reading in readings:
        for rule, found in rules.finditer(reading, max_matches=MAX_CANDIDATES):
            start, end = reading.span(found)
            severity: Severity = rule.severity
            note = rule.note
            if severity != "low" and mentioned(text, start, end):
                severity, note = "low", f"{note}, quoted in a discussion"
            collector.add(rule.category, severity, start, end, preview(text, start, end), note)
    _spaced_out(collector, rules)
    return collector.scan()
