"""Rules as RE2 patterns, matched in one linear pass: the detectors' matching engine.

A detector declares its rules (a category, a severity, an RE2 pattern); a
:class:`RuleSet` compiles them once, first into an RE2 *set* that tells in one pass over
the text which rules match at all, then each rule on its own, run only when the set says
it matches. Clean text therefore costs one pass whatever the number of rules, and a text
full of matches is bounded by ``max_matches``. RE2 never backtracks: every pattern runs
in time linear in the text. Its ``\\b``, ``\\w``, ``\\d`` and ``\\s`` are ASCII-only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

from arbiter.contract.safety import Severity

__all__ = ["Found", "Rule", "RuleSet", "compile_re2", "searchable"]

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

    def search(self, text: str, pos: int = 0, endpos: int = ...) -> Found | None:
        """The first match at or after ``pos``."""
        ...

    def finditer(self, text: str) -> Iterator[Found]:
        """Every non-overlapping match, in order."""
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

    def matching(self, text: str) -> list[int]:
        """The indexes of the rules that match somewhere in ``text`` (one pass)."""
        found = self._set.Match(text)
        return sorted(found) if found else []

    def finditer(self, text: str, *, max_matches: int) -> Iterator[tuple[Rule, Found]]:
        """Each match of each matching rule, rule by rule, at most ``max_matches`` in all.

        ``text`` must be :func:`searchable`.
        """
        left = max_matches
        for index in self.matching(text):
            for found in self._compiled[index].finditer(text):
                if left <= 0:
                    return
                left -= 1
                yield self.rules[index], found
