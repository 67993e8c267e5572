"""The decomposed judges: one dimension each, a panel of models, consensus in code.

Each judge is an ordinary ``@scorer(kind="model")`` factory taking the panel
configuration (``judges``: ``"provider:model"`` strings or mappings, see
:class:`~arbiter.judges.panel.PanelModel`; ``max_members``). Each reads only what its
dimension needs and abstains when that is absent; its prompt is a versioned file in
``prompts/`` (``NAME.md`` for people, ``NAME.txt`` the exact text the model gets).

Judges are non-gating by default: a judge is only worth its agreement with humans
(``arbiter calibrate``), so making one gate is an explicit act of configuration, never
automatic: the argument ``gate`` (``--scorer groundedness:gate=true``, ``args = {gate =
true}`` or ``gate = true`` in an eval file) or ``--gate-on NAME``. The choice is recorded
once, as the spec's ``gating``.

On the ``mock`` provider (the default panel) every member votes ``unknown``: the mock
does not read, so the judges abstain offline rather than pretend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from pydantic import JsonValue

from arbiter.contract import Example, Output, Score
from arbiter.judges import readers
from arbiter.judges.panel import CallMeter, Panel, PanelModel, PanelRuling, build_panel
from arbiter.judges.readers import Sections
from arbiter.judges.verdicts import JudgeAnswer, parse_ruling
from arbiter.judging import Ask
from arbiter.scoring.base import (
    ScoreFunction,
    ScorerFactory,
    ScorerMoment,
    ScoringContext,
    scorer,
)

__all__ = [
    "JUDGES",
    "PROMPT_VERSION",
    "Judge",
    "JudgeDefinition",
    "answer_correctness",
    "answer_groundedness",
    "content_safety",
    "groundedness",
    "instruction_following",
    "plan_quality",
    "scope_faithfulness",
    "system_prompt",
    "tool_arg_optimality",
]

PROMPT_VERSION = "1"
"""Version of every judge's prompt file, and of the judges."""

Reader = Callable[[Example, Output], "Sections | str"]
"""Reads an item: the sections to show, or why the judge abstains."""

JudgeOption = str | dict[str, JsonValue]
"""One panel member as a scorer argument: ``"provider:model"`` or a mapping."""

_CLOSING_TAG = re.compile(
    r"</(question|answer|chunks|tool_results|tool_calls|scope|reference|plan)>", re.IGNORECASE
)
_OFFLINE_ANSWER: dict[str, Any] = {
    "reasoning": "The mock judge does not read the item; it abstains.",
    "evidence": [],
    "verdict": "unknown",
    "score": 0.0,
}
_MAX_EXPLANATION = 500


@dataclass(frozen=True)
class JudgeDefinition:
    """What makes one decomposed judge: its dimension, prompt and what it reads."""

    name: str
    """The scorer's name, and its prompt file's stem."""
    dimension: str
    """The one dimension it rules on."""
    moment: ScorerMoment
    """When in a run what it judges happens."""
    read: Reader
    """The sections it shows the panel, or why it abstains."""
    needs_trajectory: bool = False
    """Whether what it reads is only in an agent's run (retrieved chunks, tool calls and
    results, a plan), so it abstains on a bare answer text."""


@cache
def system_prompt(name: str) -> str:
    """The exact system prompt of judge ``name`` (``prompts/NAME.txt``)."""
    return files("arbiter.judges.prompts").joinpath(f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Judge:
    """One decomposed judge with its panel: a scorer, and a judge of the judge layer."""

    definition: JudgeDefinition
    """What it judges and how."""
    panel: Panel
    """The models that vote."""
    context: ScoringContext
    """Where the members' providers come from."""

    @property
    def name(self) -> str:
        """The name its scores carry."""
        return self.definition.name

    @property
    def call_timeout(self) -> float:
        """The longest one panel call may take."""
        return self.panel.call_timeout

    async def score(self, example: Example, output: Output) -> Score:
        """Its ruling on one item (the scorer's function)."""
        return await self.judge(example, output, CallMeter())

    async def judge(self, example: Example, output: Output, meter: CallMeter) -> Score:
        """Its ruling on one item; each call's usage is added to ``meter`` as it returns."""
        read = self.definition.read(example, output)
        if isinstance(read, str):
            return Score(explanation=f"abstained: {read}", metadata={"abstained": read})
        if self.panel.empty:
            return Score(
                explanation=self.panel.describe(),
                metadata={"abstained": self.panel.reason or "empty panel"},
            )
        prompt = "\n\n".join(_section(tag, text) for tag, text in read)

        question = Ask(
            system=system_prompt(self.name),
            prompt=prompt,
            answer=JudgeAnswer,
            schema_name=f"{self.name}_verdict",
            parse=parse_ruling,
            offline_answer=_OFFLINE_ANSWER,
            metadata={"scorer": self.name, "example": example.id},
        )

        def ask_for(member: PanelModel) -> Ask[JudgeAnswer]:
            return question

        ruling = await self.panel.ask(self.context, ask_for, [t for _, t in read], meter)
        return _score(ruling, self.panel)


def _section(tag: str, text: str) -> str:
    """One tagged part of the prompt, the parts' closing tags defused (``<\\/answer>``)."""
    body = _CLOSING_TAG.sub(r"<\\/\1>", text)
    return f"<{tag}>\n{body}\n</{tag}>"


def _score(ruling: PanelRuling, panel: Panel) -> Score:
    """The score a panel's votes give: consensus, mean score, checked quotes, cost."""
    tally = ruling.tally
    passed = tally.passed
    scores = [
        v.ruling.score
        for v in ruling.votes
        if v.vote != "unknown" and v.ruling is not None and v.ruling.score is not None
    ]
    verdict = "unknown" if passed is None else "pass" if passed else "fail"
    reasons = [v.ruling.reasoning for v in ruling.votes if v.vote == verdict and v.ruling]
    head = f"{verdict} ({tally})"
    explanation = "; ".join(p for p in [head, *reasons[:1]] if p)
    return Score(
        value=sum(scores) / len(scores) if scores and passed is not None else None,
        answer=verdict,
        passed=passed,
        explanation=explanation[:_MAX_EXPLANATION],
        evidence=ruling.evidence,
        model=ruling.calls,
        metadata={
            "prompt": f"v{PROMPT_VERSION}",
            "panel": panel.describe(),
            "shared_family": panel.shared_family,
            "tally": {"pass": tally.passes, "fail": tally.fails, "unknown": tally.unknown},
            "votes": [
                {
                    "member": v.member,
                    "vote": v.vote,
                    "score": v.ruling.score if v.ruling else None,
                    "demoted": v.ruling.demoted if v.ruling else False,
                    "error": v.error,
                }
                for v in ruling.votes
            ],
        },
    )


def _build(
    definition: JudgeDefinition,
    judges: Sequence[JudgeOption] | None,
    max_members: int,
    context: ScoringContext | None,
) -> ScoreFunction:
    context = context or ScoringContext()
    configs = [PanelModel.parse(j) for j in (judges if judges is not None else ["mock"])]
    panel = build_panel(
        configs, max_members=max_members, settings=context.resolved_settings(), context=context
    )
    return Judge(definition, panel, context).score


JUDGES: dict[str, JudgeDefinition] = {
    d.name: d
    for d in (
        JudgeDefinition(
            "groundedness",
            "groundedness",
            "compose",
            readers.read_groundedness,
            needs_trajectory=True,
        ),
        JudgeDefinition(
            "answer_groundedness",
            "groundedness",
            "compose",
            readers.read_answer_groundedness,
            needs_trajectory=True,
        ),
        JudgeDefinition("scope_faithfulness", "scope", "deliver", readers.read_scope_faithfulness),
        JudgeDefinition(
            "instruction_following", "instructions", "deliver", readers.read_instruction_following
        ),
        JudgeDefinition(
            "answer_correctness", "correctness", "deliver", readers.read_answer_correctness
        ),
        JudgeDefinition("content_safety", "safety", "deliver", readers.read_content_safety),
        JudgeDefinition(
            "tool_arg_optimality",
            "tool_use",
            "act",
            readers.read_tool_arg_optimality,
            needs_trajectory=True,
        ),
        JudgeDefinition(
            "plan_quality", "planning", "plan", readers.read_plan_quality, needs_trajectory=True
        ),
    )
}
"""Every decomposed judge's definition, by name."""


def _judge_scorer(
    name: str, description: str
) -> Callable[[Callable[..., ScoreFunction]], ScorerFactory]:
    definition = JUDGES[name]
    return scorer(
        name=name,
        kind="model",
        version=PROMPT_VERSION,
        description=description,
        dimension=definition.dimension,
        moment=definition.moment,
        gating=False,
        needs_trajectory=definition.needs_trajectory,
    )


@_judge_scorer(
    "groundedness", "A judge panel: is every claim of the answer in the retrieved chunks?"
)
def groundedness(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """Every claim of the answer is supported by the chunks retrieved (RAG runs only).

    Abstains without an answer or without retrieved chunks.

    Args:
        judges: The panel's models: ``"provider:model"`` or mappings of
            :class:`~arbiter.judges.panel.PanelModel` fields; None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["groundedness"], judges, max_members, context)


@_judge_scorer(
    "answer_groundedness", "A judge panel: is every claim of the answer in the tool results?"
)
def answer_groundedness(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """Every claim and figure of the answer is supported by what the tools returned.

    Judges support only, not whether the data answers the question. Abstains without an
    answer or without tool results.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["answer_groundedness"], judges, max_members, context)


@_judge_scorer(
    "scope_faithfulness", "A judge panel: is the answer's subject within the trusted scope?"
)
def scope_faithfulness(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The answer's subject matter is within the declared trusted scope (domain only).

    Never judges whether values are correct; an honest "that is not in the trusted
    scope" is faithful. Reads the question, the answer and the case's assertion
    ``scope_description`` (else its ``scope`` source names), not the tool calls.
    Abstains without an answer or a declared scope.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["scope_faithfulness"], judges, max_members, context)


@_judge_scorer("instruction_following", "A judge panel: does the answer do what was asked?")
def instruction_following(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The answer does what the question or instruction asks, within its constraints.

    Abstains without an answer or without a question.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["instruction_following"], judges, max_members, context)


@_judge_scorer("answer_correctness", "A judge panel: does the answer agree with the reference?")
def answer_correctness(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The answer says what the reference answer says (other wording is fine).

    The reference is the assertion ``reference_answer``, a text ``expected``, or the
    expected label. Abstains without an answer or without a reference.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["answer_correctness"], judges, max_members, context)


@_judge_scorer("content_safety", "A judge panel: is the answer free of harmful content?")
def content_safety(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The answer holds no abuse, harm-enabling instructions or identification of people.

    Professional criticism is not a failure. Abstains without an answer.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["content_safety"], judges, max_members, context)


@_judge_scorer(
    "tool_arg_optimality", "A judge panel: were the tools called with the right arguments?"
)
def tool_arg_optimality(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The tool calls' arguments are the ones the question called for, none wasteful.

    Abstains when the run made no tool call.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["tool_arg_optimality"], judges, max_members, context)


@_judge_scorer("plan_quality", "A judge panel: is the run's plan a sound way to the answer?")
def plan_quality(
    *,
    judges: list[JudgeOption] | None = None,
    max_members: int = 3,
    gate: bool = False,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The plan (``metadata["plan"]``, else the run's step outline) fits the question.

    Abstains without a question, or when the run recorded no plan and took no step.

    Args:
        judges: The panel's models (see ``groundedness``); None: ``["mock"]``.
        max_members: Most models on the panel (one per provider family).
        gate: Whether its verdict decides pass / fail; False until the judge is
            calibrated (setting it is the explicit act of promotion).
    """
    return _build(JUDGES["plan_quality"], judges, max_members, context)
