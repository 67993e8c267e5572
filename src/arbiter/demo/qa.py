"""Two simulated LLM question-answering apps: the systems under test of the free-text demo.

No model runs. Each system knows the bundled dataset's answers (``data/qa.jsonl``, made
by ``scripts/make_qa_dataset.py``) and, per question, decides *how* to answer from a
SHA-256 hash of the question text and a version salt -- never Python's randomised
``hash()`` -- so every answer is the same on every run and platform. The ways of
answering are those real LLM apps show; the weights are the chances per question,
the counts what they came to on the 200 bundled questions:

===========  ===============================================  ======  =====  =====
mode         what the app says (for "Paris")                  weight  v1     v2
===========  ===============================================  ======  =====  =====
exact        the reference answer: ``Paris``                  58%     112    125
restyled     other casing or markup: ``paris``, ``Paris.``,   10%     14     13
             ``**Paris**``
alias        another accepted form (``Brasilia``, ``1,000``)  5%      7      7
             where the row lists one, else ``exact``
verbose      a sentence: ``The capital of France is Paris.``  8%      25     20
partial      one part of a two-part answer: ``hydrogen``      see     5      5
             for ``hydrogen and oxygen``                      below
wrong        the row's plausible wrong answer: a neighbour's  9%      16     17
             capital, a nearby year, a unit-confused number
hedge        ``I'm not sure.``                                4%      8      3
embellished  the right answer and an invented claim:          6%      13     10
             ``Paris. The 1994 UN ... Survey confirmed this.``
===========  ===============================================  ======  =====  =====

Of the nine two-part questions, half of those drawn ``exact`` are answered ``partial``.

:func:`answer` is the first version. :func:`answer_v2` is the next release of the
same app: it fixes 40% of the first version's mistakes (:data:`MISTAKES` become
``exact``) and breaks 10% of the answers the first gave in a short form (``exact``,
``restyled``, ``alias``): half of those become ``verbose`` (a chattier prompt), half
``wrong``. Where the mode does not change, neither does the text, so a diff of the two
runs shows only the flips.

Measured with the real scorers on the 200 questions (``tests/demo/test_qa_systems.py``
pins the ranges): version 1 passes ``casefold`` on 58%, ``normalized`` on 64% and
``f1_tokens`` on 72.5%, and is right by ``casefold`` or ``f1_tokens`` on 72.5%; version
2 on 64.5%, 70%, 77% and 77%, with 22 questions fixed and 13 broken by that measure.
What each scorer misses is part of the demo: ``casefold`` fails every restyled or
verbose right answer; ``f1_tokens`` at its 0.5 threshold passes every half answer
(``England`` for ``England and France``) and short sentences (``The answer is Mars.``).

A question the dataset does not hold gets an honest ``I don't know.``
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, Literal

from arbiter.contract import Example

__all__ = ["MISTAKES", "Mode", "answer", "answer_mode", "answer_v2"]

Mode = Literal["exact", "restyled", "alias", "verbose", "partial", "wrong", "hedge", "embellished"]
"""How a system answers one question (see the module's table)."""

MISTAKES: frozenset[Mode] = frozenset({"verbose", "partial", "wrong", "hedge", "embellished"})
"""The modes version 2 may fix; the others give the answer in a short form."""

_V1_SHARES: Sequence[tuple[Mode, float]] = (
    ("exact", 0.58),
    ("restyled", 0.10),
    ("alias", 0.05),
    ("verbose", 0.08),
    ("wrong", 0.09),
    ("hedge", 0.04),
    ("embellished", 0.06),
)
"""Share of questions per mode for version 1, before the partial and alias rules."""

_PARTIAL_SHARE = 0.5
"""Share of two-part questions answered ``exact`` that version 1 answers in part."""

_V2_FIX_SHARE = 0.4
"""Share of version 1's mistakes that version 2 answers ``exact``."""

_V2_BREAK_SHARE = 0.1
"""Share of version 1's short-form answers that version 2 gets wrong or verbose."""

_UNKNOWN = "I don't know."
_MAX_QUESTION = 1_000
"""Characters of a question worth looking up; the dataset's are far shorter."""


@dataclass(frozen=True)
class _Fact:
    """What a system knows of one dataset question."""

    question: str
    expected: str
    kind: str
    cohort: str
    distractor: str
    accept: tuple[str, ...]


def _key(question: str) -> str:
    """The lookup form of a question: case-folded, whitespace collapsed."""
    return " ".join(question.casefold().split())


@cache
def _facts() -> dict[str, _Fact]:
    """The bundled dataset as a lookup table, read once."""
    text = files("arbiter.demo").joinpath("data", "qa.jsonl").read_text(encoding="utf-8")
    table: dict[str, _Fact] = {}
    for line in text.splitlines():
        example = Example.model_validate_json(line)
        metadata = example.metadata
        question = str(example.input["question"])
        table[_key(question)] = _Fact(
            question=question,
            expected=str(example.expected),
            kind=str(metadata["kind"]),
            cohort=str(example.cohort),
            distractor=str(metadata["distractor"]),
            accept=tuple(str(a) for a in metadata.get("accept", ())),
        )
    return table


def _unit(key: str, salt: str) -> float:
    """A number in [0, 1) fixed by the question and the salt, equal on every platform."""
    digest = hashlib.sha256(f"{salt}\n{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _pick(key: str, salt: str, options: Sequence[str]) -> str:
    """One of ``options``, fixed by the question and the salt."""
    return options[int(_unit(key, salt) * len(options))]


def _parts(expected: str) -> list[str]:
    """The parts of a two-part answer (``hydrogen and oxygen``), else the answer alone."""
    return expected.split(" and ", 1)


def _v1_mode(key: str, fact: _Fact) -> Mode:
    drawn = _unit(key, "qa-v1")
    mode: Mode = _V1_SHARES[-1][0]
    cumulative = 0.0
    for candidate, share in _V1_SHARES:
        cumulative += share
        if drawn < cumulative:
            mode = candidate
            break
    if mode == "alias" and not fact.accept:
        return "exact"
    if mode == "exact" and len(_parts(fact.expected)) == 2:
        return "partial" if _unit(key, "qa-v1:partial") < _PARTIAL_SHARE else "exact"
    return mode


def _v2_mode(key: str, fact: _Fact) -> Mode:
    before = _v1_mode(key, fact)
    if before in MISTAKES:
        return "exact" if _unit(key, "qa-v2:fix") < _V2_FIX_SHARE else before
    if _unit(key, "qa-v2:break") < _V2_BREAK_SHARE:
        return "verbose" if _unit(key, "qa-v2:how") < 0.5 else "wrong"
    return before


def answer_mode(question: str, *, version: Literal[1, 2] = 1) -> Mode | None:
    """How a version answers a question, or None for a question it does not know.

    Args:
        question: The question text, as in the dataset (case and spacing aside).
        version: 1 for :func:`answer`, 2 for :func:`answer_v2`.
    """
    if len(question) > _MAX_QUESTION:
        return None
    key = _key(question)
    fact = _facts().get(key)
    if fact is None:
        return None
    return _v1_mode(key, fact) if version == 1 else _v2_mode(key, fact)


_RESTATABLE = re.compile(r"^(?:what|who|which) (is|was|are|were) (the [^?]+)\?$", re.IGNORECASE)
"""A question whose subject can lead the answer: "What is the capital of France?"."""

_HEDGES = (
    "I'm not sure.",
    "I don't know.",
    "I can't answer that with confidence.",
    "Sorry, I don't have enough information to answer that.",
)

_SENTENCES = ("The answer is {}.", "Sure! The answer is {}.", "Good question: it is {}.")
_YES_NO_SENTENCES = {"Yes": "Yes, that is correct.", "No": "No, that is not the case."}

_INVENTED_CLAIMS = {
    "geography": "The 1994 UN World Geographic Survey confirmed this.",
    "science": "Niels Bohr first showed this in 1921.",
    "history": "Letters found in the Vatican archives in 2004 proved this.",
    "arithmetic_units": "This was fixed by the 2016 revision of the metric system.",
    "language_and_culture": "UNESCO first catalogued this in 1962.",
}
"""A claim no source supports, said after the right answer, by topic."""


def _verbose(key: str, fact: _Fact) -> str:
    if fact.kind == "yes_no":
        return _YES_NO_SENTENCES.get(fact.expected, f"{fact.expected}.")
    if fact.kind == "date":
        return f"It happened in {fact.expected}."
    restated = _RESTATABLE.match(fact.question)
    if restated:
        verb, subject = restated.groups()
        return f"{subject[0].upper()}{subject[1:]} {verb} {fact.expected}."
    return _pick(key, "qa:sentence", _SENTENCES).format(fact.expected)


def _render(mode: Mode, key: str, fact: _Fact) -> str:
    """The text a system answers in ``mode``; the same for both versions."""
    expected = fact.expected
    match mode:
        case "exact":
            return expected
        case "restyled":
            styles = (expected.lower(), expected.upper(), f"{expected}.", f"**{expected}**")
            # Digits have no case: only the styles that change the text are candidates.
            return _pick(key, "qa:style", [s for s in styles if s != expected])
        case "alias":
            return _pick(key, "qa:alias", fact.accept) if fact.accept else expected
        case "verbose":
            return _verbose(key, fact)
        case "partial":
            return _parts(expected)[0]
        case "wrong":
            return fact.distractor
        case "hedge":
            return _pick(key, "qa:hedge", _HEDGES)
        case "embellished":
            claim = _INVENTED_CLAIMS.get(fact.cohort, "Every source agrees.")
            return f"{expected}. {claim}"


def _answer(input: dict[str, Any], version: Literal[1, 2]) -> str:
    question = input.get("question")
    if not isinstance(question, str):
        raise ValueError("the input has no 'question' text")
    mode = answer_mode(question, version=version)
    if mode is None:
        return _UNKNOWN
    key = _key(question)
    return _render(mode, key, _facts()[key])


def answer(input: dict[str, Any]) -> str:
    """Version 1 of the QA app: answer ``input["question"]`` in a short text.

    Args:
        input: The example's input, ``{"question": "..."}``.

    Returns:
        The app's answer (see the module docstring for how it errs).

    Raises:
        ValueError: The input has no ``question`` text.
    """
    return _answer(input, 1)


def answer_v2(input: dict[str, Any]) -> str:
    """Version 2 of the QA app: fixes half of version 1's mistakes, breaks a few answers.

    Args:
        input: The example's input, ``{"question": "..."}``.

    Returns:
        The app's answer; the same text as :func:`answer` wherever the mode is the same.

    Raises:
        ValueError: The input has no ``question`` text.
    """
    return _answer(input, 2)
