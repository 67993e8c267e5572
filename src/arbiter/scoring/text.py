"""Text scorers: equality after three strengths of normalisation, containment, length.

Each reads the output's text (``Output.answer_text``: the text, else the label) and,
unless given its target as an argument, the example's reference texts
(:func:`~arbiter.scoring.reading.reference_texts`: ``expected`` as a text or a list of
acceptable texts, else ``expected_label``). An example without a reference makes the
scorer abstain; an output without a text fails. Their scores carry no ``answer`` /
``expected`` categories: a free text is not a class, and a section would otherwise
build a confusion matrix with one row per distinct reference.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.params import check_number
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.reading import Missing, quoted, reference_texts

__all__ = [
    "all_of",
    "any_of",
    "casefold",
    "contains",
    "exact",
    "length",
    "normalize_text",
    "normalized",
]

_SHOWN_REFERENCES = 3
"""Reference texts an explanation lists before "and N more"."""

NO_TEXT = "the output has no text"

_ASCII_PUNCTUATION = {
    code: None for code in range(128) if unicodedata.category(chr(code)).startswith("P")
}


def normalize_text(text: str) -> str:
    """The form ``normalized`` compares: NFKC, casefolded, punctuation deleted, spaces collapsed.

    In order: Unicode NFKC; ``str.casefold``; NFKC again (folding can leave a
    decomposed form); every character of a Unicode punctuation category (``P*``:
    ``.,;:!?'"-()[]{}``, ``«»``, ``¿``, ...) deleted, not replaced by a space (so
    ``U.S.A.`` equals ``USA``); runs of whitespace made one space; ends stripped.
    Symbols (``$ + < = > ^ ` | ~``) are kept; ``% & * # @ /`` are punctuation there.

    Examples:
        >>> normalize_text("  Ｔhe U.S.A.,  is  “big”! ")
        'the usa is big'
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if folded.isascii():
        bare = folded.translate(_ASCII_PUNCTUATION)
    else:
        bare = "".join(c for c in folded if not unicodedata.category(c).startswith("P"))
    return " ".join(bare.split())


def _equal_to_reference(normalise: Callable[[str], str], form: str) -> ScoreFunction:
    """A score function: the normalised text equals one normalised reference text."""

    def score(example: Example, output: Output) -> Score:
        references = reference_texts(example)
        if isinstance(references, Missing):
            return Score(explanation=references.reason)
        text = output.answer_text
        if text is None:
            return Score(value=0.0, passed=False, explanation=NO_TEXT)
        answer = normalise(text)
        wanted = [normalise(reference) for reference in references]
        if answer in wanted:
            return Score(value=1.0, passed=True)
        explanation = f"expected {_listed(wanted)}, got {quoted(answer)}"
        return Score(value=0.0, passed=False, explanation=f"{form}{explanation}")

    return score


def _listed(texts: Sequence[str], *, lead: str = "one of ") -> str:
    """Up to three texts quoted (``one of 'a', 'b' and 4 more``); one text alone, bare."""
    shown = ", ".join(quoted(t) for t in texts[:_SHOWN_REFERENCES])
    if len(texts) == 1:
        return shown
    more = len(texts) - _SHOWN_REFERENCES
    return lead + shown + (f" and {more:,} more" if more > 0 else "")


@scorer(
    name="exact",
    description="The text equals the expected text (ends stripped).",
    reference="expected",
)
def exact(*, strip: bool = True) -> ScoreFunction:
    """The text equals the expected text, or one of a list of acceptable texts.

    Args:
        strip: Strip whitespace from both ends of both texts first.
    """
    return _equal_to_reference(str.strip if strip else str, "")


@scorer(
    name="casefold",
    description="The text equals the expected text, ignoring case and the ends' whitespace.",
    reference="expected",
)
def casefold() -> ScoreFunction:
    """The text equals the expected text (or one of a list) after ``strip`` and ``casefold``.

    ``str.casefold`` is Unicode's full case folding: ``Straße`` equals ``STRASSE``.
    """
    return _equal_to_reference(lambda text: text.strip().casefold(), "after casefold, ")


@scorer(
    name="normalized",
    description="The text equals the expected text after NFKC, casefold, no punctuation, "
    "collapsed spaces.",
    reference="expected",
)
def normalized() -> ScoreFunction:
    """The text equals the expected text (or one of a list) after :func:`normalize_text`."""
    return _equal_to_reference(normalize_text, "normalized, ")


def _finder(case_sensitive: bool) -> Callable[[str, Sequence[str]], list[Evidence | None]]:
    """Where each needle is found in a text: its evidence, or None when absent."""

    def find(text: str, needles: Sequence[str]) -> list[Evidence | None]:
        haystack = text if case_sensitive else text.casefold()
        # Folding never shortens a character, so equal lengths mean positions agree and
        # the evidence can quote the output's own characters.
        aligned = len(haystack) == len(text)
        found: list[Evidence | None] = []
        for needle in needles:
            target = needle if case_sensitive else needle.casefold()
            at = haystack.find(target)
            if at < 0:
                found.append(None)
            elif aligned:
                quote = text[at : at + len(target)]
                found.append(Evidence(quote=quote, verified=True, note=f"at character {at}"))
            else:
                found.append(Evidence(quote=needle, note="found ignoring case"))
        return found

    return find


def _containment(values: list[str] | None, case_sensitive: bool, *, every: bool) -> ScoreFunction:
    """Score function of ``any_of`` (``every=False``) and ``all_of`` (``every=True``)."""
    find = _finder(case_sensitive)

    def score(example: Example, output: Output) -> Score:
        needles: list[str] | Missing = values if values is not None else reference_texts(example)
        if isinstance(needles, Missing):
            return Score(explanation=needles.reason)
        needles = [n for n in needles if n]
        if not needles:
            return Score(explanation="the example's expected text is empty")
        text = output.answer_text
        if text is None:
            return Score(value=0.0, passed=False, explanation=NO_TEXT)
        found = find(text, needles)
        hits = [e for e in found if e is not None]
        missing = [n for n, e in zip(needles, found, strict=True) if e is None]
        if every:
            passed = not missing
            value = len(hits) / len(needles)
            explanation = (
                ""
                if passed
                else f"missing {_listed(missing, lead='')} ({len(missing):,} of {len(needles):,})"
            )
        else:
            passed = bool(hits)
            value = float(passed)
            explanation = "" if passed else f"not found: {_listed(needles, lead='')}"
        return Score(value=value, passed=passed, explanation=explanation, evidence=hits)

    return score


def _check_values(values: list[str] | None, name: str) -> None:
    if values is not None and (not values or not all(values)):
        raise ValueError(f"{name} must be a non-empty list of non-empty texts")


@scorer(name="contains", description="The text contains the given (or the expected) text.")
def contains(*, text: str | None = None, case_sensitive: bool = False) -> ScoreFunction:
    """The output's text contains ``text`` (by default ignoring case).

    Without ``text``, the example's expected text (or one of its list) must appear.

    Args:
        text: What must appear; None: the example's expected text.
        case_sensitive: Compare as written instead of casefolded.
    """
    if text is not None and not text:
        raise ValueError("text must not be empty")
    return _containment(None if text is None else [text], case_sensitive, every=False)


@scorer(name="any_of", description="The text contains at least one of the values.")
def any_of(*, values: list[str] | None = None, case_sensitive: bool = False) -> ScoreFunction:
    """The output's text contains at least one of ``values`` (by default ignoring case).

    Args:
        values: The texts to look for; None: the example's expected text or list.
        case_sensitive: Compare as written instead of casefolded.
    """
    _check_values(values, "values")
    return _containment(values, case_sensitive, every=False)


@scorer(name="all_of", description="The text contains every one of the values.")
def all_of(*, values: list[str] | None = None, case_sensitive: bool = False) -> ScoreFunction:
    """The output's text contains every one of ``values``; value: the share found.

    Args:
        values: The texts to look for; None: the example's expected text or list.
        case_sensitive: Compare as written instead of casefolded.
    """
    _check_values(values, "values")
    return _containment(values, case_sensitive, every=True)


@scorer(name="length", description="The text has between min and max characters or words.")
def length(
    *,
    min_chars: int | None = None,
    max_chars: int | None = None,
    min_words: int | None = None,
    max_words: int | None = None,
) -> ScoreFunction:
    """The text's length is within the bounds given (at least one is required).

    Characters are Unicode code points; words are runs of non-whitespace. The value is
    the number of characters when a character bound is given, else of words.

    Args:
        min_chars: Fewest characters allowed.
        max_chars: Most characters allowed.
        min_words: Fewest words allowed.
        max_words: Most words allowed.
    """
    bounds = {
        "min_chars": min_chars,
        "max_chars": max_chars,
        "min_words": min_words,
        "max_words": max_words,
    }
    if all(bound is None for bound in bounds.values()):
        raise ValueError("give at least one of min_chars, max_chars, min_words, max_words")
    for name, bound in bounds.items():
        check_number(bound, name, "length", minimum=0, integer=True, optional=True)
    for unit in ("chars", "words"):
        low, high = bounds[f"min_{unit}"], bounds[f"max_{unit}"]
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_{unit}={low} is more than max_{unit}={high}")
    by_chars = min_chars is not None or max_chars is not None
    by_words = min_words is not None or max_words is not None

    def score(example: Example, output: Output) -> Score:
        text = output.answer_text
        if text is None:
            return Score(value=0.0, passed=False, explanation=NO_TEXT)
        chars = len(text)
        words = len(text.split()) if by_words else 0
        problems = [
            *_out_of_bounds(chars, min_chars, max_chars, "character", "chars"),
            *_out_of_bounds(words, min_words, max_words, "word", "words"),
        ]
        return Score(
            value=float(chars if by_chars else words),
            passed=not problems,
            explanation="; ".join(problems),
        )

    return score


def _out_of_bounds(
    count: int, low: int | None, high: int | None, noun: str, unit: str
) -> list[str]:
    plural = noun if count == 1 else f"{noun}s"
    if low is not None and count < low:
        return [f"{count:,} {plural}, fewer than min_{unit}={low}"]
    if high is not None and count > high:
        return [f"{count:,} {plural}, more than max_{unit}={high}"]
    return []
