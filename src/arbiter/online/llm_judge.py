"""An LLM judge for the online judge chain: one provider call, a label in strict JSON.

The prompt is the versioned file ``prompts/judge.txt`` (its changelog and format are in
``prompts/judge.md``), loaded from the package, never written inline. The schema's
``label`` is an enum of the vocabulary, so a model with constrained decoding cannot
leave it; ``JudgeChain`` checks the label again for models without. The call goes
through the judging layer (:mod:`arbiter.judging`), so the chain records what each
attempt cost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from pydantic import BaseModel

from arbiter.contract import Prediction
from arbiter.judging import Ask, Judged, JudgingContext, ModelRef, Provider
from arbiter.online.judge_chain import check_timeout, check_vocabulary

__all__ = ["JUDGE_PROMPT_VERSION", "JudgeFailed", "JudgeVerdict", "LLMJudge", "judge_prompt"]

JUDGE_PROMPT_VERSION = 1
"""Version of ``prompts/judge.txt``; its changelog is ``prompts/judge.md``."""


class JudgeVerdict(BaseModel):
    """The answer an LLM judge must give."""

    label: str
    """The label, one of the vocabulary."""
    reason: str
    """One sentence saying why."""


@cache
def _prompt_sections() -> tuple[str, str]:
    text = (files("arbiter.online") / "prompts" / "judge.txt").read_text(encoding="utf-8")
    match = re.fullmatch(r"\[system\]\n(.*?)\n\[user\]\n(.*)", text, flags=re.DOTALL)
    if match is None:  # pragma: no cover - guards an edit of the packaged file
        raise RuntimeError("prompts/judge.txt must hold a [system] and a [user] section")
    return match.group(1).strip(), match.group(2).strip()


_PLACEHOLDER = re.compile(r"\{(vocabulary|label|raw_output|context)\}")


def judge_prompt(
    prediction: Prediction,
    context: str | None,
    *,
    vocabulary: Sequence[str],
    max_raw_chars: int = 20_000,
) -> tuple[str, str]:
    """The system prompt and user message of ``prompts/judge.txt`` for one prediction.

    Placeholders are filled in one pass, so text inside the prediction is never
    substituted again.

    Args:
        prediction: The prediction under review.
        context: Extra context for the judge, or None.
        vocabulary: The allowed labels.
        max_raw_chars: The raw output's JSON is cut after this many characters.

    Returns:
        ``(system, user)``.
    """
    raw = json.dumps(prediction.raw_output, ensure_ascii=False, indent=2, default=str)
    if len(raw) > max_raw_chars:
        raw = raw[:max_raw_chars] + f"\n… (cut: {len(raw) - max_raw_chars} more characters)"
    values = {
        "vocabulary": ", ".join(json.dumps(label, ensure_ascii=False) for label in vocabulary),
        "label": prediction.label,
        "raw_output": raw,
        "context": context if context else "(none)",
    }
    system, user = _prompt_sections()
    return _fill(system, values), _fill(user, values)


def _fill(template: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


class LLMJudge:
    """A judge that asks an LLM for a label in strict JSON, through the judging layer.

    Args:
        name: Name reported as the outcome's source (e.g. ``"ollama"``).
        provider: The provider: its registered name (built by ``context``), or a
            provider object of the caller's (used as it is).
        model: The model name as the provider knows it.
        vocabulary: The allowed labels; they become the schema's enum.
        timeout: Seconds one verdict may take.
        max_output_tokens: Upper bound on the answer's length.
        context: The judging context (pooled providers, cache, budget, meter); None:
            one without the model-call cache.

    Raises:
        ValueError: If the vocabulary is empty or the timeout is not positive.
    """

    prompt_version = JUDGE_PROMPT_VERSION
    """Version of the prompt file the judge sends."""
    reports_calls = True
    """It asks through the judging layer: :meth:`judged` bounds and records each call."""

    def __init__(
        self,
        name: str,
        provider: str | Provider,
        model: str,
        *,
        vocabulary: Sequence[str],
        timeout: float = 30.0,
        max_output_tokens: int = 512,
        context: JudgingContext | None = None,
    ) -> None:
        self.name = name
        self.vocabulary = check_vocabulary(vocabulary, "LLMJudge")
        self.timeout = check_timeout(timeout, "LLMJudge")
        self.context = context if context is not None else JudgingContext(use_cache=False)
        if not isinstance(provider, str):
            self.context.given[provider.name] = provider
            provider = provider.name
        self.ref = ModelRef(
            provider=provider,
            model=model,
            timeout=self.timeout,
            max_output_tokens=max_output_tokens,
        )
        self._schema = _label_schema(self.vocabulary)

    @property
    def model(self) -> str:
        """The model name as the provider knows it."""
        return self.ref.model_name

    def json_schema(self) -> dict[str, Any]:
        """The strict schema of ``JudgeVerdict`` with the label restricted to the vocabulary."""
        return self._schema

    def question(self, prediction: Prediction, context: str | None) -> Ask[JudgeVerdict]:
        """What the judge asks its model about one prediction."""
        system, user = judge_prompt(prediction, context, vocabulary=self.vocabulary)
        return Ask(
            system=system,
            prompt=user,
            answer=JudgeVerdict,
            schema_name="judge_verdict",
            json_schema=self._schema,
            metadata={
                "judge": self.name,
                "prediction": prediction.id,
                "prompt_version": self.prompt_version,
            },
        )

    async def judged(self, prediction: Prediction, context: str | None) -> Judged[JudgeVerdict]:
        """Ask the model; the answer (unchecked against the vocabulary: the chain checks),
        its status and the call's record. Bounded by ``timeout``; never raises."""
        return await self.context.ask(self.ref, self.question(prediction, context))

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """Ask the model; its label, unchecked against the vocabulary (the chain checks).

        Raises:
            JudgeFailed: The call did not give an answer (the message says why:
                ``InvalidResponse: ...``, ``ProviderTimeout: ...``).
        """
        judged = await self.judged(prediction, context)
        if judged.answer is None:
            raise JudgeFailed(judged.error or judged.status)
        return judged.answer.label


class JudgeFailed(Exception):
    """An LLM judge's call gave no answer; the message is the judging layer's error line."""


def _label_schema(vocabulary: Sequence[str]) -> dict[str, Any]:
    from arbiter.judging.ask import strict_schema

    schema: dict[str, Any] = json.loads(json.dumps(strict_schema(JudgeVerdict)))  # to narrow
    schema["properties"]["label"]["enum"] = list(vocabulary)
    return schema
