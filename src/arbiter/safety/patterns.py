"""Rules as RE2 patterns, matched in one linear pass: the detectors' matching engine.

A detector declares its rules (a category, a severity, an RE2 pattern); a
:class:`RuleSet` compiles them once, first into an RE2 *set* that tells in one pass over
the text which rules match at all, then each rule on its own, run only when the set says
it matches. Clean text therefore costs one pass whatever the number of rules, and a text
full of matches is bounded by ``max_matches``. RE2 never backtracks: every pattern runs
in time linear in the text. Its ``\\b``, ``\\w``, ``\\d`` and ``\\s`` are ASCII-only.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

from arbiter.contract.safety import Severity

__all__ = ["Compiled", "Found", "Rule", "RuleSet", "Subject", "compile_re2", "searchable"]

_MAX_MEM = 64 << 20
"""Bytes RE2 may use for one compiled set or pattern (the default 8 MiB is too little
for the larger alternations' DFA, which then falls back to a slower engine)."""


class Found(Protocol):
    """What RE2 returns for a match (the subset used here)."""

    @property
    def lastgroup(self) -> str | None:
        """The name of the last group that matched (which branch of an alternation)."""
        ...

    def group(self, index: int | str = 0) -> Any:
        """The text a group matched (``0``: the whole match; a name: a named group)."""
        ...

    def start(self, index: int = 0) -> int:
        """Where a group starts, in characters (-1 when it did not take part)."""
        ...

    def end(self, index: int = 0) -> int:
        """Where a group ends, in characters."""
        ...


class Compiled(Protocol):
    """A compiled RE2 pattern (the subset used here)."""

    def search(self, text: str | bytes, pos: int = 0, endpos: int = ...) -> Found | None:
        """The first match at or after ``pos``."""
        ...

    def finditer(self, text: str | bytes) -> Iterator[Found]:
        """Every non-overlapping match, in order (byte offsets on a bytes subject)."""
        ...


def _options() -> Any:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    return options


def compile_re2(pattern: str) -> Compiled:
    """``pattern`` compiled by RE2 with room for a large DFA.

    Raises:
        ValueError: RE2 cannot compile it (a bug in a shipped rule).
    """
    try:
        return cast(Compiled, re2.compile(pattern, _options()))
    except re2.error as exc:
        raise ValueError(f"not an RE2 pattern: {pattern!r}: {exc}") from None


def searchable(text: str) -> str:
    """``text`` as RE2 can read it (valid UTF-8), one character for one: a lone
    surrogate becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class Subject:
    """A text as RE2 reads it fastest: encoded once as UTF-8, searched as bytes, each
    match's byte offsets turned back into character offsets on demand.

    Args:
        text: A :func:`searchable` text.
    """

    __slots__ = ("_ascii", "_bytes", "_chars", "_text", "data")

    def __init__(self, text: str) -> None:
        try:
            self.data = text.encode("utf-8")
        except UnicodeEncodeError:
            text = searchable(text)
            self.data = text.encode("utf-8")
        self._text: str | None = text
        self._ascii = len(self.data) == len(text)
        # Known (byte offset, character offset) pairs, sorted: each offset asked for is
        # decoded from the nearest pair before it, so a scan decodes the text about once.
        self._bytes = [0]
        self._chars = [0]

    @property
    def text(self) -> str:
        """The text (valid UTF-8: a lone surrogate became U+FFFD)."""
        if self._text is None:
            self._text = self.data.decode("utf-8")
        return self._text

    def translated(self, table: bytes) -> Subject:
        """The same text with its bytes mapped through ``table``, which must map every
        ASCII byte to an ASCII byte and leave the others as they are: the result has
        the same offsets, and shares this subject's offset map."""
        other = Subject.__new__(Subject)
        other.data = self.data.translate(table)
        other._text = None
        other._ascii, other._bytes, other._chars = self._ascii, self._bytes, self._chars
        return other

    def char(self, offset: int) -> int:
        """The character offset of a byte offset (which RE2 puts on a character boundary)."""
        if self._ascii:
            return offset
        index = bisect_right(self._bytes, offset) - 1
        base, chars = self._bytes[index], self._chars[index]
        if base == offset:
            return chars
        found = chars + len(self.data[base:offset].decode("utf-8"))
        self._bytes.insert(index + 1, offset)
        self._chars.insert(index + 1, found)
        return found

    def span(self, found: Found, group: int = 0) -> tuple[int, int]:
        """A match's (or a group's) character span."""
        return self.char(found.start(group)), self.char(found.end(group))

    def group(self, found: Found, group: int | str = 0) -> str:
        """What a match (or a group) matched, as text ("" when the group took no part)."""
        value = found.group(group)
        return value.decode("utf-8") if isinstance(value, bytes) else (value or "")


@dataclass(frozen=True)
class Rule:
    """One thing a detector looks for."""

    category: str
    """The finding's category."""
    severity: Severity
    """The finding's severity (a detector may lower it after looking at the match)."""
    pattern: str
    """RE2 syntax; inline flags such as ``(?i)`` at its start."""
    note: str = ""
    """Why a match is a finding, one line."""


class RuleSet:
    """Rules compiled for one pass: which match at all, then where.

    Args:
        rules: The rules, in the order their matches are reported.

    Raises:
        ValueError: A rule is not RE2 syntax.
    """

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self._compiled = [compile_re2(rule.pattern) for rule in self.rules]
        self._set = re2.Set.SearchSet(_options())
        for rule in self.rules:
            self._set.Add(rule.pattern)
        self._set.Compile()

    def matching(self, text: Subject | str) -> list[int]:
        """The indexes of the rules that match somewhere in ``text`` (one pass)."""
        found = self._set.Match(text.data if isinstance(text, Subject) else text)
        return sorted(found) if found else []

    def finditer(
        self,
        text: Subject,
        *,
        max_matches: int,
        matching: Sequence[int] | None = None,
        categories: Collection[str] | None = None,
    ) -> Iterator[tuple[Rule, Found]]:
        """Each match of each matching rule, rule by rule, at most ``max_matches`` in all.

        Args:
            text: What to search (matches carry byte offsets: :meth:`Subject.span`).
            max_matches: Most matches yielded.
            matching: The rules known to match (:meth:`matching`), when already asked.
            categories: Only rules of these categories; None: every rule.
        """
        left = max_matches
        for index in self.matching(text) if matching is None else matching:
            if categories is not None and self.rules[index].category not in categories:
                continue
            for found in self._compiled[index].finditer(text.data):
                if left <= 0:
                    return
                left -= 1
                yield self.rules[index], found
