"""The ``rubric`` scorer: an LLM judge applies a rubric and must quote its evidence.

The model answers strict JSON (reasoning, quotes with what each shows, a verdict
``pass`` / ``fail`` / ``unknown`` and a score in [0, 1]); code then decides:

- each quote is looked up verbatim in the output (:func:`arbiter.scoring.quotes.locate`,
  the jury's normaliser); a quote that is not there is kept as evidence with
  ``verified=False`` and supports nothing;
- a verdict whose every quote is unverifiable is demoted to ``unknown``: the judge was
  not reading this output, so its verdict is an opinion and the scorer abstains. A
  verdict without any quote stands (a failure by omission has nothing to quote);
- ``unknown`` is an abstention (``passed=None``), never a pass or a fail;
- with a ``threshold``, ``passed`` is ``score >= threshold`` instead of the verdict;
- a score outside [0, 1] (small models on grammars without numeric bounds answer 4)
  is ignored, never clamped: the verdict stands, the score's value is unset and the
  explanation and ``metadata["ignored_score"]`` say so; with a threshold, which needs
  a score, the scorer abstains;
- a provider that still fails after the provider layer's retries, a judgement past the
  timeout, and an answer that is not the requested JSON are errored scores; each keeps
  the model call it made (the judging layer's record: tokens and cost, unknown cost for
  a timeout).

On the ``mock`` provider the judge is a deterministic stand-in, not a model: it passes
an output that contains the example's reference answer (case and whitespace folded),
quoting it, fails one that does not, and abstains without a reference. It ignores the
rubric; it makes runs, tests and docs work offline with meaningful verdicts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from pydantic import ConfigDict, Field

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.judging import Ask, Judged, ModelRef, Quote, QuotedAnswer, one_line
from arbiter.params import check_number
from arbiter.scoring.base import ScoreFunction, ScoringContext, scorer
from arbiter.scoring.files import TextFile
from arbiter.scoring.judged import errored_score
from arbiter.scoring.quotes import locate, normalize

__all__ = [
    "MAX_EVIDENCE",
    "MAX_RUBRIC_CHARS",
    "PROMPT_VERSION",
    "RubricAnswer",
    "RubricFile",
    "RubricQuote",
    "offline_answer",
    "rubric",
    "system_prompt",
]

PROMPT_VERSION = "1"
"""Version of the prompt file (``prompts/rubric_v1.txt``) and of the scorer."""
MAX_RUBRIC_CHARS = 20_000
"""Longest rubric accepted."""
MAX_EVIDENCE = 8
"""Quotes of an answer that are checked and listed (the explanation counts the rest)."""
_MAX_CONTEXT_CHARS = 8_000
"""Characters of the example's input and of the reference shown to the judge."""
_MAX_QUOTE = 300
"""Characters kept of a quote or of what it shows (model text, listed as evidence)."""
_MAX_EXPLANATION = 500
"""Characters of the one-line explanation (it carries the model's reasoning)."""
_CLOSING_TAG = re.compile(r"</(rubric|input|reference|output)>", re.IGNORECASE)


class RubricQuote(Quote):
    """One passage the judge's verdict rests on."""

    model_config = ConfigDict(extra="forbid")

    quote: str = Field(description="Words copied exactly from the OUTPUT.")
    """Words copied from the output (checked in code)."""
    shows: str = Field(description="What the quote shows, in one sentence.")
    """What the quote shows."""


class RubricAnswer(QuotedAnswer):
    """What the judge answers: the strict JSON schema of the request."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="How the OUTPUT meets or misses the RUBRIC.")
    """Two or three sentences, written before the verdict."""
    evidence: list[RubricQuote] = Field(  # type: ignore[assignment]  # narrowed quote
        description="Passages of the OUTPUT quoted exactly."
    )
    """The passages the verdict rests on."""
    # Not bounded here: small models on grammars without numeric bounds (llama.cpp)
    # answer 4 or 7; the verdict stands and such a score is ignored (see ``_judged``).
    score: float = Field(description="From 0.0 (not at all) to 1.0 (fully).")
    """How well the output meets the rubric, in [0, 1]; outside it the score is ignored."""


class RubricFile(TextFile):
    """The ``rubric_file`` argument: a path, read when the scorer is built.

    It is stored as ``{"path", "sha256", "text"}``, so the scorer's spec holds the rubric
    itself: a resumed or replayed run judges with the same rubric even if the file has
    changed since. A stored value whose text does not match its hash is refused.
    """

    __slots__ = ()
    what = "rubric file"
    holds = "rubric"


@cache
def system_prompt() -> str:
    """The system prompt of this version (``prompts/rubric_v1.txt``)."""
    name = f"rubric_v{PROMPT_VERSION}.txt"
    return files("arbiter.scoring.prompts").joinpath(name).read_text(encoding="utf-8")


@scorer(
    name="rubric",
    kind="model",
    version=PROMPT_VERSION,
    description="An LLM judge applies a rubric; its quotes are verified in the output.",
)
def rubric(
    *,
    rubric: str | None = None,
    rubric_file: RubricFile | None = None,
    provider: str = "mock",
    model: str | None = None,
    threshold: float | None = None,
    max_output_chars: int = 20_000,
    max_output_tokens: int = 1024,
    timeout: float = 60.0,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """An LLM judge applies the rubric to the output's text and quotes its evidence.

    Passes on a ``pass`` verdict, fails on ``fail`` and abstains on ``unknown`` or when
    every quote of the judge is missing from the output. The input and the reference
    (``expected``, else ``expected_label``) are shown to the judge when the example has
    them. On ``mock`` the judge is offline: it passes an output containing the reference.

    Args:
        rubric: The rubric, as text (give this or ``rubric_file``).
        rubric_file: A file holding the rubric; read when the scorer is built, and its
            text stored with the run.
        provider: The provider of the judge: mock, openai, llama_cpp, ollama, anthropic,
            gemini, or a plugin's.
        model: The judge's model (needed with a provider other than mock).
        threshold: Pass on ``score >= threshold`` instead of on the verdict.
        max_output_chars: Characters of the output shown to the judge (the rest is cut,
            and said to be).
        max_output_tokens: Upper bound of the judge's answer.
        timeout: Seconds one judgement may take, the provider's retries included.
    """
    text = _rubric_text(rubric, rubric_file)
    check_number(threshold, "threshold", "rubric", minimum=0, maximum=1, optional=True)
    check_number(max_output_chars, "max_output_chars", "rubric", minimum=100, integer=True)
    check_number(max_output_tokens, "max_output_tokens", "rubric", minimum=64, integer=True)
    check_number(timeout, "timeout", "rubric", minimum=0, open_min=True)
    if provider != "mock" and not model:
        raise ValueError(f"provider {provider!r} needs a model: the judge's model name")
    context = context or ScoringContext()
    context.provider(provider)  # an unknown provider fails when the scorer is built
    ref = ModelRef(
        provider=provider, model=model, timeout=timeout, max_output_tokens=max_output_tokens
    )
    settings = _Settings(
        rubric_section=_section("rubric", text, MAX_RUBRIC_CHARS),
        offline=provider == "mock",
        max_output_chars=max_output_chars,
    )
    judge = f"{provider} {ref.model_name}"

    async def score(example: Example, output: Output) -> Score:
        answer_text = _output_text(output)
        if answer_text is None:
            return Score(explanation="the output has no text to judge")
        judged = await context.ask(ref, _ask(settings, example, answer_text))
        return _judged(judged, answer_text, threshold, judge, timeout)

    return score


@dataclass(frozen=True)
class _Settings:
    """What a built rubric scorer sends with every request."""

    rubric_section: str
    offline: bool
    max_output_chars: int


def _rubric_text(text: str | None, file: RubricFile | None) -> str:
    if (text is None) == (file is None):
        raise ValueError("give the rubric as rubric=TEXT or rubric_file=PATH (one of them)")
    chosen = text if text is not None else file["text"] if file is not None else ""
    if not chosen.strip():
        raise ValueError("the rubric is empty")
    if len(chosen) > MAX_RUBRIC_CHARS:
        raise ValueError(
            f"the rubric has {len(chosen):,} characters; at most {MAX_RUBRIC_CHARS:,} are taken"
        )
    return chosen


def _output_text(output: Output) -> str | None:
    """What the judge reads: the output's text (or label), else its raw JSON."""
    if output.answer_text is not None:
        return output.answer_text
    if output.raw is not None:
        return json.dumps(output.raw, ensure_ascii=False)
    return None


def _reference(example: Example) -> str | None:
    if isinstance(example.expected, str):
        return example.expected
    if example.expected is not None:
        return json.dumps(example.expected, ensure_ascii=False)
    return example.expected_label


def _ask(settings: _Settings, example: Example, text: str) -> Ask[RubricAnswer]:
    """The judge's question on one output: the versioned system prompt, tagged sections."""
    reference = _reference(example)
    parts = [
        settings.rubric_section,
        _section("input", json.dumps(example.input, ensure_ascii=False), _MAX_CONTEXT_CHARS),
    ]
    if reference is not None:
        parts.append(_section("reference", reference, _MAX_CONTEXT_CHARS))
    parts.append(_section("output", text, settings.max_output_chars))
    offline = offline_answer(reference, text).model_dump(mode="json") if settings.offline else None
    return Ask(
        system=system_prompt(),
        prompt="\n\n".join(parts),
        answer=RubricAnswer,
        schema_name="rubric_verdict",
        offline_answer=offline,
        metadata={"scorer": "rubric", "example": example.id},
    )


def _section(name: str, text: str, limit: int) -> str:
    """One tagged section of the prompt, clipped, with the sections' closing tags defused."""
    return f"<{name}>\n{_inert(_clip(text, limit))}\n</{name}>"


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters not shown]"


def _inert(text: str) -> str:
    """The text with closing tags of the prompt's sections defused (``<\\/output>``)."""
    return _CLOSING_TAG.sub(r"<\\/\1>", text)


def offline_answer(reference: str | None, text: str) -> RubricAnswer:
    """The mock judge's answer: does the output contain the reference (case folded)?

    Examples:
        >>> offline_answer("Paris", "It is paris.").evidence[0].quote
        'paris'
        >>> offline_answer("Paris", "Lyon").verdict, offline_answer(None, "Lyon").verdict
        ('fail', 'unknown')
    """
    if reference is None or not reference.strip():
        return RubricAnswer(
            reasoning="The mock judge compares the output with a reference answer, "
            "and this example has none.",
            evidence=[],
            verdict="unknown",
            score=0.0,
        )
    haystack, needle = normalize(text), normalize(reference)
    start = haystack.lower().find(needle.lower())
    if start < 0:
        return RubricAnswer(
            reasoning="The output does not contain the reference answer (the mock judge "
            "checks only that, not the rubric).",
            evidence=[],
            verdict="fail",
            score=0.0,
        )
    # lower() keeps the length of nearly every text; where it does not, quote nothing.
    same_length = len(haystack.lower()) == len(haystack)
    quote = haystack[start : start + len(needle)] if same_length else ""
    return RubricAnswer(
        reasoning="The output contains the reference answer (the mock judge checks only "
        "that, not the rubric).",
        evidence=[RubricQuote(quote=quote, shows="the reference answer")] if quote else [],
        verdict="pass",
        score=1.0,
    )


def _judged(
    judged: Judged[RubricAnswer], text: str, threshold: float | None, judge: str, timeout: float
) -> Score:
    """The score the judge's answer gives, once its quotes are checked."""
    calls = judged.calls
    answer = judged.answer
    failed = errored_score(judged, judge, timeout)
    if failed is not None or answer is None:
        return failed or Score(error=f"{judge}: no answer", model=calls)
    quoted = answer.evidence[:MAX_EVIDENCE]
    evidence = [
        Evidence(
            quote=_line(q.quote, _MAX_QUOTE),
            verified=locate(q.quote, text) is not None,
            note=_line(q.shows, _MAX_QUOTE),
        )
        for q in quoted
    ]
    verified = sum(e.verified is True for e in evidence)
    demoted = answer.verdict != "unknown" and bool(evidence) and verified == 0
    # NaN fails the comparison too: ignored, like any score outside [0, 1].
    in_range = 0.0 <= answer.score <= 1.0
    passed: bool | None = None
    if answer.verdict != "unknown" and not demoted:
        if threshold is None:
            passed = answer.verdict == "pass"
        elif in_range:
            passed = answer.score >= threshold
    metadata: dict[str, Any] = {
        "prompt": f"rubric_v{PROMPT_VERSION}",
        "verdict": answer.verdict,
        "score": answer.score if in_range else None,
    }
    if not in_range:
        metadata["ignored_score"] = _ignored_score(answer.score)
    return Score(
        value=answer.score if passed is not None and in_range else None,
        answer="unknown" if passed is None else "pass" if passed else "fail",
        passed=passed,
        explanation=_explanation(
            answer, evidence, demoted, len(answer.evidence), in_range, threshold
        ),
        evidence=evidence,
        model=calls,
        metadata={
            **metadata,
            "demoted": demoted,
            "quotes": len(answer.evidence),
            "verified_quotes": verified,
            "answered_by": _line(judged.answered_by or "", 100),
        },
    )


def _ignored_score(score: float) -> str:
    """What the explanation and metadata say of a score outside [0, 1]."""
    return f"score {score:g} outside [0, 1] ignored"


def _explanation(
    answer: RubricAnswer,
    evidence: list[Evidence],
    demoted: bool,
    quoted: int,
    in_range: bool,
    threshold: float | None,
) -> str:
    head = f"{answer.verdict} ({answer.score:.2f})"
    if not in_range:
        head = f"{answer.verdict} ({_ignored_score(answer.score)})"
        if threshold is not None and answer.verdict != "unknown":
            head = f"unknown: the threshold needs a score; {_ignored_score(answer.score)}"
    if demoted:
        head = f"unknown: the judge's {answer.verdict} rests only on quotes not in the output"
    parts = [head, answer.reasoning]
    if evidence:
        verified = sum(e.verified is True for e in evidence)
        parts.append(f"{verified} of {len(evidence)} quotes found in the output")
    if quoted > len(evidence):
        parts.append(f"{quoted - len(evidence)} more quotes not checked")
    return _line("; ".join(p for p in parts if p.strip()), _MAX_EXPLANATION)


def _line(text: str, limit: int = _MAX_EXPLANATION) -> str:
    return one_line(text, limit)
