"""The ``jury`` scorer: the jury's verdict on an output, as a score of a run.

It judges ``output.answer_text`` against the example's ``input["task"]`` and
``input["context"]`` exactly as ``arbiter judge`` would (same roster, same synthesis),
so a jury case file read as a dataset and run through a ``precomputed`` system gives
the figures of ``arbiter jury eval``:

- ``passed``: the decision is ACCEPT (REVISE and REJECT fail);
- ``answer`` / ``expected``: the decision and the case's expected one, so the section's
  classification report is the exact-verdict accuracy and confusion;
- ``category_map`` (ACCEPT → clean, REVISE and REJECT → defective): the section's mapped
  view, whose ``defective`` precision and recall are the detection figures. A case that
  only knows whether it is defective is compared in that view alone;
- ``evidence``: an ESCALATE first (a human should look), then the findings with their
  verified quotes (contradictions first), then the opinions (quotes not found in the
  output); ``metadata``: decision, escalate, confidence, flip margin, agreement.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import GetCoreSchemaHandler, ValidationError
from pydantic_core import CoreSchema, core_schema

from arbiter.contract import Case, Evidence, Example, ModelCalls, Output, Score, Verdict
from arbiter.datasets.case_rows import CASE_METADATA_KEY
from arbiter.datasets.jsonio import read_json_file
from arbiter.errors import InputError
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec
from arbiter.jury.evaluation import DECISIONS
from arbiter.jury.jury import Jury
from arbiter.jury.offline import OFFLINE_PROVIDER
from arbiter.scoring.base import ScoreFunction, ScoringContext, scorer
from arbiter.scoring.files import FileArgument
from arbiter.validation import describe_validation_error

if TYPE_CHECKING:
    from arbiter.providers.registry import ProviderRegistry

__all__ = ["DETECTION_CATEGORIES", "MAX_EVIDENCE", "Roster", "jury"]

DETECTION_CATEGORIES: dict[str, str] = {
    "ACCEPT": "clean",
    "REVISE": "defective",
    "REJECT": "defective",
}
"""The default ``category_map``: a jury flags an output unless it ACCEPTs it."""
MAX_EVIDENCE = 16
"""Evidence items a score lists at most (the explanation counts the rest)."""
_ESCALATE = "escalate: "
"""How synthesis starts the reasons it escalates for."""
_MAX_TEXT = 300
"""Characters kept of a quoted span or a critic's claim (both untrusted text)."""


class Roster(FileArgument, list[dict[str, Any]]):
    """The ``roster`` argument: a roster file's path, or the critics as a JSON list.

    Either way it is validated to the list of critic specs, so the scorer's spec records
    the critics themselves: a resumed run judges with the same jury even if the file
    changed since.
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(cls.read)

    @classmethod
    def read(cls, value: Any) -> Roster:
        """The critics ``value`` gives, each checked as a :class:`CriticSpec`.

        Raises:
            ValueError: The file is missing or not JSON, ``value`` is neither a path nor a
                list, or a critic is invalid (the message names the file and the item).
        """
        where = ""
        if isinstance(value, str):
            where = f"{value}: "
            try:
                items = read_json_file(value, what="roster")
            except InputError as exc:
                raise ValueError(str(exc)) from None
        elif isinstance(value, list):
            items = value
        else:
            raise ValueError("expected a roster file's path or a JSON list of critic specs")
        if not isinstance(items, list) or not items:
            raise ValueError(f"{where}a roster must be a non-empty JSON list of critic specs")
        critics = []
        for i, item in enumerate(items):
            try:
                critics.append(CriticSpec.model_validate(item).model_dump(mode="json"))
            except ValidationError as exc:
                reason = describe_validation_error(exc, CriticSpec)
                raise ValueError(f"{where}[{i}]: {reason}") from None
        return cls(critics)


@scorer(
    name="jury",
    kind="model",
    description="The jury's verdict: passes on ACCEPT; callouts with verified quotes as "
    "evidence (offline critics by default).",
)
def jury(
    *,
    provider: str | None = None,
    model: str | None = None,
    roster: Roster | None = None,
    category_map: dict[str, str] = DETECTION_CATEGORIES,
    context: ScoringContext | None = None,
) -> ScoreFunction:
    """The jury's verdict on the output: passes on ACCEPT, fails on REVISE and REJECT.

    Reads ``input["task"]`` and ``input["context"]`` (a jury case file read as a dataset
    has both) and the output's text. The default critics are the three offline lenses
    of ``arbiter judge``; ``provider`` and ``model`` move them onto a model, ``roster``
    replaces them, as ``arbiter judge --provider/--model/--roster`` do.

    Args:
        provider: Put every critic on this provider (mock, openai, llama_cpp, ollama,
            anthropic, gemini, or a plugin's).
        model: The model every critic runs on (needed with a provider other than mock).
        roster: The critics: a roster file (a JSON list of critic specs) or that list.
        category_map: Decision to category for the report's mapped view (detection).
    """
    critics = _critics(provider, model, roster)
    _check_category_map(category_map)
    context = context or ScoringContext()
    online = {c.name for c in critics if c.provider != OFFLINE_PROVIDER}
    if online:
        _check_providers(critics, context)
    # The context builds each provider once and closes it when the run ends.
    judge = Jury(critics, context=context)
    categories = dict(category_map)

    async def score(example: Example, output: Output) -> Score:
        verdict = await judge.judge_async(_case_of(example, output))
        return _score_of(verdict, example, categories, online)

    return score


def _score_of(
    verdict: Verdict, example: Example, categories: Mapping[str, str], online: Collection[str]
) -> Score:
    """The score a verdict gives; ``online`` names the critics that call a model."""
    evidence = _evidence(verdict)
    listed = evidence[:MAX_EVIDENCE]
    flag = "; ESCALATE: a human should look" if verdict.escalate else ""
    explanation = f"{verdict.decision} (confidence {verdict.confidence:.2f}{flag})"
    if verdict.reasons:
        explanation += f": {verdict.reasons[0]}"
    if len(evidence) > len(listed):
        explanation += f"; {len(evidence) - len(listed)} more findings not listed"
    return Score(
        answer=verdict.decision,
        expected=_expected(example, categories),
        passed=verdict.decision == "ACCEPT",
        explanation=_line(explanation, limit=1_000),
        evidence=listed,
        model=_model_calls(verdict, online),
        metadata={
            "decision": verdict.decision,
            "escalate": verdict.escalate,
            "confidence": verdict.confidence,
            "flip_margin": verdict.flip_margin,
            "agreement": verdict.agreement,
        },
    )


def _critics(provider: str | None, model: str | None, roster: Roster | None) -> list[CriticSpec]:
    """The roster, chosen from the same three options as ``arbiter judge``'s."""
    if roster is not None:
        if provider or model:
            raise ValueError("give a roster, or a provider and model, not both")
        critics = [CriticSpec.model_validate(item) for item in roster]
        names = [c.name for c in critics]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"critic name {twice!r} appears twice in the roster")
        return critics
    if provider not in (None, OFFLINE_PROVIDER) and not model:
        raise ValueError(f"provider {provider!r} needs a model: the model every critic runs on")
    update = {key: value for key, value in (("provider", provider), ("model", model)) if value}
    return [spec.model_copy(update=update) for spec in DEFAULT_ROSTER]


def _check_category_map(category_map: Mapping[str, str]) -> None:
    unknown = sorted(set(category_map) - set(DECISIONS))
    if unknown:
        raise ValueError(
            f"category_map maps the decisions {', '.join(DECISIONS)}; {unknown[0]!r} is none"
        )


def _check_providers(critics: list[CriticSpec], context: ScoringContext) -> None:
    names = _registry(context).names()
    for critic in critics:
        if critic.provider not in names:
            known = ", ".join(names)
            raise ValueError(
                f"critic {critic.name!r}: provider {critic.provider!r} is not one of {known}"
            )


def _registry(context: ScoringContext) -> ProviderRegistry:
    if context.providers is not None:
        return context.providers
    from arbiter.providers.registry import ProviderRegistry

    return ProviderRegistry.default()


def _case_of(example: Example, output: Output) -> Case:
    """The case the jury judges: the example's task and context, the output's text.

    Raises:
        ValueError: The input has no text ``task`` (the score is then an errored one).
    """
    task = example.input.get("task")
    context = example.input.get("context", "")
    if not isinstance(task, str):
        raise ValueError(
            f"example {example.id!r}: the jury needs the task as the text input['task'] "
            "(a jury case file read as a dataset has it)"
        )
    if not isinstance(context, str):
        raise ValueError(f"example {example.id!r}: input['context'] must be a text")
    return Case(id=example.id, task=task, context=context, output=output.answer_text or "")


def _expected(example: Example, categories: Mapping[str, str]) -> str | None:
    """The decision the example expects; else, for a case that only knows whether it is
    defective, the category the map gives every decision of that kind."""
    reference = example.reference_label
    if reference in DECISIONS:
        return reference
    labels = example.metadata.get(CASE_METADATA_KEY)
    defective = labels.get("defective") if isinstance(labels, dict) else None
    if not isinstance(defective, bool):
        return None
    flagged = {categories.get(d, d) for d in DECISIONS if d != "ACCEPT"}
    clean = categories.get("ACCEPT", "ACCEPT")
    if len(flagged) != 1 or clean in flagged:
        return None  # the map does not split the decisions into clean and defective
    return flagged.pop() if defective else clean


def _evidence(verdict: Verdict) -> list[Evidence]:
    """An ESCALATE first, then findings (verified; contradictions first), then opinions."""
    evidence: list[Evidence] = []
    if verdict.escalate:
        why = [r.removeprefix(_ESCALATE) for r in verdict.reasons if r.startswith(_ESCALATE)]
        note = _line("ESCALATE: " + "; ".join(why or verdict.reasons[:1]))
        evidence.append(Evidence(quote="", verified=None, note=note))
    findings = sorted(verdict.findings, key=lambda f: f.kind != "contradicted")
    for finding in findings:
        critics = ", ".join(finding.critics)
        note = f"{finding.kind}: {finding.claim} ({finding.dimension}; {critics})"
        evidence.append(Evidence(quote=_clip(finding.quote), verified=True, note=_line(note)))
    for opinion in verdict.opinions:
        note = f"opinion: {opinion.claim} ({opinion.dimension})"
        evidence.append(Evidence(quote=_clip(opinion.quote), verified=False, note=_line(note)))
    return evidence


def _model_calls(verdict: Verdict, online: Collection[str]) -> ModelCalls | None:
    """The calls of the critics that asked a model; None when none did (offline critics)."""
    return verdict.model_calls() if online else None


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def _line(text: str, limit: int = _MAX_TEXT) -> str:
    return _clip(" ".join(text.split()), limit)
