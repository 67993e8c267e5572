"""The ``regex`` scorer, on RE2: matching takes time linear in the text, whatever the pattern.

The pattern is the user's, the text an untrusted output, and a backtracking engine
(Python's ``re``) can take exponential time on a pattern such as ``(a+)+$``. RE2 never
backtracks, so no timeout is needed and a score never depends on the machine's speed:
the same output always gets the same score. Its syntax is Python's without
backreferences and lookaround (``(?=``, ``(?<=``, ``\\1``), which RE2 cannot run in
linear time; ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only there, case folding is
Unicode's simple one.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, cast

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.reading import quoted
from arbiter.scoring.text import NO_TEXT

__all__ = ["CompiledPattern", "MatchFound", "compile_pattern", "regex", "searchable"]

_FLAGS = frozenset("ims")
_MAX_EVIDENCE = 200
"""Characters of a match quoted as evidence (a ``.*`` can match a whole output)."""


class MatchFound(Protocol):
    """What RE2 returns for a match (the subset used here)."""

    def group(self, index: int = 0) -> Any:
        """The text matched (``0``: the whole match): str, or bytes on a bytes subject."""
        ...

    def start(self, index: int = 0) -> int:
        """Where the match starts, in characters (bytes on a bytes subject)."""
        ...


class CompiledPattern(Protocol):
    """A compiled RE2 pattern (the subset used here)."""

    def search(self, text: str | bytes) -> MatchFound | None:
        """The first match anywhere in ``text``."""
        ...

    def fullmatch(self, text: str | bytes) -> MatchFound | None:
        """A match of the whole of ``text``."""
        ...


def compile_pattern(pattern: str, flags: str = "") -> CompiledPattern:
    """Compile ``pattern`` with RE2, the flags (``i``, ``m``, ``s``) set inline.

    Raises:
        ValueError: An unknown flag, or a pattern RE2 cannot compile (the message says
            what RE2 found and names what it lacks).
    """
    unknown = sorted(set(flags) - _FLAGS)
    if unknown:
        raise ValueError(
            f"unknown regex flag {unknown[0]!r}; flags are i (ignore case), m (^ and $ at "
            "line ends), s (. matches a newline)"
        )
    options = re2.Options()
    options.log_errors = False  # RE2 would print the error on stderr besides raising it
    prefix = f"(?{''.join(sorted(set(flags)))})" if flags else ""
    try:
        return cast(CompiledPattern, re2.compile(prefix + pattern, options))
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args else "invalid"
        raise ValueError(
            f"pattern {quoted(pattern)} is not RE2 syntax ({reason}); RE2 has no "
            "backreferences or lookaround"
        ) from None


def searchable(text: str) -> str:
    """``text`` as RE2 can read it: a lone surrogate (invalid UTF-8) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@scorer(name="regex", description="The text matches a regular expression (RE2, linear time).")
def regex(
    *,
    pattern: str,
    flags: str = "",
    mode: Literal["search", "fullmatch"] = "search",
) -> ScoreFunction:
    """The output's text matches ``pattern``: anywhere (``search``) or as a whole.

    Args:
        pattern: A regular expression in RE2 syntax (Python's, without backreferences
            or lookaround).
        flags: Any of ``i`` (ignore case), ``m`` (``^`` / ``$`` at line ends), ``s``
            (``.`` matches a newline).
        mode: ``search`` (a match anywhere) or ``fullmatch`` (the whole text).
    """
    compiled = compile_pattern(pattern, flags)
    whole = mode == "fullmatch"

    def score(example: Example, output: Output) -> Score:
        text = output.answer_text
        if text is None:
            return Score(value=0.0, passed=False, explanation=NO_TEXT)
        found = _first_match(compiled, text, whole=whole)
        if found is None:
            explanation = (
                f"{quoted(text)} does not match {quoted(pattern)} as a whole"
                if whole
                else f"no match of {quoted(pattern)} in {quoted(text)}"
            )
            return Score(value=0.0, passed=False, explanation=explanation)
        matched, at, verified = found
        note = f"at character {at}"
        if len(matched) > _MAX_EVIDENCE:
            note += f" (the first {_MAX_EVIDENCE} of {len(matched):,} characters)"
            matched = matched[:_MAX_EVIDENCE]
        evidence = Evidence(quote=matched, verified=verified, note=note)
        return Score(value=1.0, passed=True, evidence=[evidence])

    return score


def _first_match(
    compiled: CompiledPattern, text: str, *, whole: bool
) -> tuple[str, int, bool | None] | None:
    """The first match in ``text``: what it matched, where (in characters), and whether
    those are the output's own characters (None where a lone surrogate was replaced).

    ASCII text is searched as bytes, whose offsets are its characters': the wrapper's
    text path maps byte offsets back to characters in Python, several times the search.
    """
    if text.isascii():
        found = _matched(compiled, text.encode("ascii"), whole=whole)
        return None if found is None else (found.group(0).decode("ascii"), found.start(0), True)
    subject = searchable(text)
    found = _matched(compiled, subject, whole=whole)
    if found is None:
        return None
    return found.group(0), found.start(0), True if subject is text else None


def _matched(compiled: CompiledPattern, subject: str | bytes, *, whole: bool) -> MatchFound | None:
    return compiled.fullmatch(subject) if whole else compiled.search(subject)
