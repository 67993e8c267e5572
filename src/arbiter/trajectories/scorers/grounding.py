"""Grounding scorers: was there a retrieval, was it relevant, does the answer rest on it.

- ``expect_retrieval``: a retrieval happened (or did not) as the case's
  ``expect_retrieval`` says.
- ``retrieval_relevance``: the retrievers' similarity of what they returned, banded by
  ``min_retrieval_similarity``.
- ``citation_present`` (``rag_focused``): the answer cites something it retrieved.
- ``grounded_overlap``: the share of the answer's claims whose content words the
  support holds (:mod:`arbiter.scoring.claims`), banded by ``min_grounded_overlap``.
- ``numeric_fidelity``: the share of the answer's figures found among the numbers of the
  support (:mod:`arbiter.scoring.figures`), banded by ``min_numeric_fidelity``.

The *support* of an answer is what the run looked up or was told: the text of every
retrieved chunk, every tool result (strings, keys and numbers), the answers of its
sub-agents (a coordinator composes from its experts), and the question. Echoing the
user's own terms is not invention, so the question counts; but the question alone is
no support: a run that looked nothing up (an ``llm_only`` agent answering from what the
model knows) gets no grounding score. Sub-agents' steps count as the coordinator's.

The *question* is the case input's ``query`` (or ``question``, ``input``, ``prompt``),
else the user messages the run's own LLM calls were sent.

Grounding is not asked of a platform notice: when ``trajectory.metadata["answer_kind"]``
is ``withheld``, ``annotated`` or ``rewritten`` (a gate withheld or annotated the
answer, or rewrote it), the delivered text is the platform's, quoting the very spans it
reports, and ``citation_present``, ``grounded_overlap`` and ``numeric_fidelity``
abstain instead of counting one shortfall twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from pydantic import JsonValue

from arbiter.contract import (
    Evidence,
    Example,
    Output,
    Retrieval,
    Score,
    Trajectory,
)
from arbiter.errors import InputError
from arbiter.params import check_number
from arbiter.scoring.base import ScoreFunction
from arbiter.scoring.claims import Vocabulary, claims_of, json_text
from arbiter.scoring.figures import NumberIndex, figures_in, texts_numbers
from arbiter.scoring.reading import quoted
from arbiter.trajectories.scorers.common import assertions, banded, trajectory_scorer, walked
from arbiter.trajectories.scorers.derived import shared

__all__ = [
    "NOTICE_KINDS",
    "citation_present",
    "expect_retrieval",
    "grounded_overlap",
    "numeric_fidelity",
    "retrieval_relevance",
]

NOTICE_KINDS = frozenset({"withheld", "annotated", "rewritten"})
"""Values of ``trajectory.metadata["answer_kind"]`` saying the delivered text is a
platform notice, not the model's claim."""

_QUESTION_KEYS = ("query", "question", "input", "prompt")
_MAX_EVIDENCE = 5
"""Unsupported claims or figures quoted as evidence."""
_MAX_QUOTE = 200


def _flag(example: Example, key: str) -> bool | None:
    """A true / false assertion, None when absent."""
    value = assertions(example).get(key)
    if value is None or isinstance(value, bool):
        return value
    raise InputError(f"assertion {key!r} must be true or false, got {value!r}")


def _notice(trajectory: Trajectory) -> Score | None:
    """An abstention when the delivered text is a platform notice, else None."""
    kind = trajectory.metadata.get("answer_kind")
    if isinstance(kind, str) and kind in NOTICE_KINDS:
        return Score(
            explanation=f"the delivered text is a platform notice (answer {kind}), not a claim",
            metadata={"answer_kind": kind},
        )
    return None


def _answer(trajectory: Trajectory) -> str | None:
    answer = trajectory.final_answer
    return answer if answer is not None and answer.strip() else None


def _claim(trajectory: Trajectory) -> str | Score:
    """The answer as a model's claim, else the abstention saying why it is none (no
    answer, or a platform notice)."""
    answer = _answer(trajectory)
    if answer is None:
        return Score(explanation="the run delivered no answer")
    return _notice(trajectory) or answer


def _retrievals(example: Example, trajectory: Trajectory) -> tuple[Retrieval, ...]:
    return shared(_retrievals_of, example, trajectory)


def _retrievals_of(example: Example, trajectory: Trajectory) -> tuple[Retrieval, ...]:
    return tuple(step for step in walked(trajectory, example) if isinstance(step, Retrieval))


def _question(example: Example, trajectory: Trajectory) -> list[str]:
    for key in _QUESTION_KEYS:
        value = example.input.get(key)
        if isinstance(value, str) and value.strip():
            return [value]
    return [
        message.content
        for call in trajectory.llm_calls
        for message in call.input_messages
        if message.role == "user" and message.content
    ]


def _looked_up(example: Example, trajectory: Trajectory) -> Iterator[JsonValue]:
    """What the run looked up or was told: chunk texts, tool results, sub-agents' answers."""
    for step in walked(trajectory, example):
        # By the steps' discriminator: a string compare where isinstance of a pydantic
        # model class is an ABC check (three of them for each model call).
        if step.kind == "tool_call":
            if step.result is not None:
                yield step.result
        elif step.kind == "retrieval":
            yield from (chunk.text for chunk in step.chunks if chunk.text)
        elif step.kind == "handoff" and step.trajectory.final_answer:
            yield step.trajectory.final_answer


def _support(example: Example, trajectory: Trajectory) -> tuple[str, ...]:
    """The text of everything the run looked up (:func:`_looked_up`), each read once for
    both grounded_overlap and numeric_fidelity (a feature shared by the two)."""
    return tuple(json_text(found) for found in _looked_up(example, trajectory))


def _looked_anything_up(example: Example, trajectory: Trajectory) -> bool:
    return any(step.kind in ("tool_call", "retrieval") for step in walked(trajectory, example))


@trajectory_scorer(name="expect_retrieval", dimension="retrieval", moment="retrieve")
def expect_retrieval() -> ScoreFunction:
    """A retrieval happened, or did not, as the case's ``expect_retrieval`` says.

    Sub-agents' retrievals count; one that returned no chunk still happened.
    """

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        expected = _flag(example, "expect_retrieval")
        if expected is None:
            return Score(explanation="the case sets no expect_retrieval")
        retrievals = _retrievals(example, output.trajectory)
        happened = bool(retrievals)
        passed = happened == expected
        did = f"{len(retrievals)} retrieval(s) happened" if happened else "no retrieval happened"
        wanted = "one was expected" if expected else "none was expected"
        return Score(
            value=1.0 if passed else 0.0,
            passed=passed,
            explanation=f"{did}; {wanted}",
            metadata={"retrievals": len(retrievals)},
        )

    return score


@trajectory_scorer(name="retrieval_relevance", dimension="retrieval_relevance", moment="retrieve")
def retrieval_relevance(*, statistic: Literal["mean", "top"] = "mean") -> ScoreFunction:
    """The similarity of what the retrievers returned, banded by ``min_retrieval_similarity``.

    Abstains without a retrieval whose chunks carry a similarity.

    Args:
        statistic: ``mean``: the mean similarity of every scored chunk; ``top``: the
            mean over retrievals of each one's best chunk.
    """

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        per_retrieval = [
            [c.similarity for c in step.chunks if c.similarity is not None]
            for step in _retrievals(example, output.trajectory)
        ]
        scored = [values for values in per_retrieval if values]
        if not scored:
            return Score(explanation="no retrieved chunk carries a similarity")
        every = [value for values in scored for value in values]
        mean = sum(every) / len(every)
        top = sum(max(values) for values in scored) / len(scored)
        result = banded(
            mean if statistic == "mean" else top,
            "min_retrieval_similarity",
            example,
            higher_is_better=True,
        )
        result.explanation = f"{statistic} similarity {result.explanation}"
        result.metadata.update(
            {"mean": mean, "top": top, "chunks": len(every), "retrievals": len(scored)}
        )
        return result

    return score


_MARKER = re.compile(r"\[\^?([0-9][0-9,;\s^]{0,40})\]")
_TRIM = "()[]{}<>\"'`,;:!?*."
_MAX_PHRASE_SOURCES = 50
"""Sources with spaces (titles) looked for as phrases; ids and URLs are looked up as
tokens, at no cost per source."""


def _citation(answer: str, sources: list[str], chunks: int) -> str | None:
    """The first citation of a retrieved source in ``answer``, or None."""
    for marker in _MARKER.finditer(answer):
        numbers = re.findall(r"[0-9]+", marker.group(1))
        if any(1 <= int(number) <= chunks for number in numbers):
            return marker.group()
    folded = answer.casefold()
    tokens = {token.strip(_TRIM) for token in folded.split()}
    phrases = 0
    for source in sources:
        for name in _cited_names(source):
            if " " not in name:
                if name in tokens:
                    return name
            elif phrases < _MAX_PHRASE_SOURCES:
                phrases += 1
                if name in folded:
                    return name
    return None


def _cited_names(source: str) -> list[str]:
    """How an answer may name a source: the source, and the last part of a path or URL."""
    name = " ".join(source.casefold().split()).strip(_TRIM)
    names = [name] if len(name) >= 3 else []
    tail = name.rstrip("/").rpartition("/")[2].strip(_TRIM)
    if tail != name and len(tail) >= 3:
        names.append(tail)
    return names


@trajectory_scorer(
    name="citation_present",
    dimension="citations",
    moment="compose",
    applies_to={"rag_focused"},
)
def citation_present() -> ScoreFunction:
    """The answer cites a source it retrieved: a ``[n]`` marker or the source's name.

    A marker ``[n]`` (also ``[^n]``, ``[1, 3]``) cites when ``n`` numbers a retrieved
    chunk (1 to the count, in rank order across retrievals). A name cites when a chunk's
    ``source``, or the last part of its path or URL, appears in the answer (case-folded,
    as a whole token; a source with spaces, a title, as a phrase). Abstains without
    retrieved chunks, without an answer, on a platform notice, or when the case sets
    ``require_citations`` to false.
    """

    def score(example: Example, output: Output) -> Score:
        trajectory = output.trajectory
        assert trajectory is not None
        if _flag(example, "require_citations") is False:
            return Score(explanation="the case does not require citations")
        chunks = [chunk for step in _retrievals(example, trajectory) for chunk in step.chunks]
        if not chunks:
            return Score(explanation="nothing was retrieved to cite")
        answer = _claim(trajectory)
        if isinstance(answer, Score):
            return answer
        sources = list(dict.fromkeys(c.source for c in chunks if c.source))
        cited = _citation(answer, sources, len(chunks))
        if cited is None:
            return Score(
                value=0.0,
                passed=False,
                explanation=f"the answer cites none of {len(chunks)} retrieved chunk(s)",
            )
        return Score(
            value=1.0,
            passed=True,
            explanation=f"the answer cites {quoted(cited)}",
            evidence=[Evidence(quote=cited[:_MAX_QUOTE], verified=True, note="a citation")],
        )

    return score


@trajectory_scorer(name="grounded_overlap", dimension="grounding", moment="compose")
def grounded_overlap(*, min_claim_support: float = 0.5) -> ScoreFunction:
    """The share of the answer's claims the support backs, banded by ``min_grounded_overlap``.

    A claim (a sentence with a content word) is backed when at least
    ``min_claim_support`` of its content words occur in the support: retrieved chunks,
    tool results, sub-agents' answers and the question. Abstains without an answer,
    when nothing was retrieved or returned, on an answer with no claim, and on a
    platform notice.

    Args:
        min_claim_support: The share of a claim's content words the support must hold.
    """
    check_number(min_claim_support, "min_claim_support", "grounded_overlap", minimum=0, maximum=1)

    def score(example: Example, output: Output) -> Score:
        trajectory = output.trajectory
        assert trajectory is not None
        answer = _claim(trajectory)
        if isinstance(answer, Score):
            return answer
        vocabulary = Vocabulary()
        vocabulary.add(shared(_support, example, trajectory))
        if not vocabulary.words:
            # The question alone grounds nothing: an answer from the model's own
            # knowledge (an llm_only agent) is not this scorer's to grade.
            return Score(explanation="no support text: nothing was retrieved or returned")
        vocabulary.add(_question(example, trajectory))
        claims, cut = claims_of(answer)
        if not claims:
            return Score(explanation="the answer makes no claim (no content word)")
        unsupported = [c for c in claims if vocabulary.support(c) < min_claim_support]
        share = (len(claims) - len(unsupported)) / len(claims)
        result = banded(share, "min_grounded_overlap", example, higher_is_better=True)
        result.explanation = (
            f"{len(claims) - len(unsupported)} of {len(claims)} claim(s) supported: "
            + result.explanation
        )
        result.evidence = [
            Evidence(quote=c.text[:_MAX_QUOTE], verified=True, note="an unsupported claim")
            for c in unsupported[:_MAX_EVIDENCE]
        ]
        result.metadata.update(
            {
                "claims": len(claims),
                "unsupported": len(unsupported),
                "claims_cut": cut,
                "support_cut": vocabulary.truncated,
            }
        )
        return result

    return score


def _source_numbers(example: Example, trajectory: Trajectory) -> NumberIndex:
    # A text of the support is what json_numbers reads of the value it was written from.
    texts = [*shared(_support, example, trajectory), *_question(example, trajectory)]
    return NumberIndex(texts_numbers(texts))


@trajectory_scorer(name="numeric_fidelity", dimension="numeric_fidelity", moment="compose")
def numeric_fidelity() -> ScoreFunction:
    """The share of the answer's figures the support holds, banded by ``min_numeric_fidelity``.

    A figure is found when a tool result (or a retrieved chunk, a sub-agent's answer, the
    question) holds a number that rounds to it at its written precision; ``45%`` also
    stands for 0.45, ``1.2 million`` for 1,200,000 (:mod:`arbiter.scoring.figures`).
    Abstains when the answer has no figure, when the run neither called a tool nor
    retrieved anything, and on a platform notice.
    """

    def score(example: Example, output: Output) -> Score:
        trajectory = output.trajectory
        assert trajectory is not None
        answer = _claim(trajectory)
        if isinstance(answer, Score):
            return answer
        figures = list(figures_in(answer))
        if not figures:
            return Score(explanation="the answer has no number")
        if not _looked_anything_up(example, trajectory):
            return Score(explanation="the run called no tool and retrieved nothing")
        index = _source_numbers(example, trajectory)
        missing = [figure for figure in figures if not index.holds(figure)]
        share = (len(figures) - len(missing)) / len(figures)
        result = banded(share, "min_numeric_fidelity", example, higher_is_better=True)
        result.explanation = (
            f"{len(figures) - len(missing)} of {len(figures)} number(s) found in tool "
            f"results: {result.explanation}"
        )
        result.evidence = [
            Evidence(
                quote=figure.written[:_MAX_QUOTE],
                verified=True,
                note=f"not in any tool result (at character {figure.at})",
            )
            for figure in missing[:_MAX_EVIDENCE]
        ]
        result.metadata.update({"numbers": len(figures), "not_found": len(missing)})
        return result

    return score
