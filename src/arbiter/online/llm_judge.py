"""An LLM judge for the online judge chain: one provider call, a label in strict JSON.

The prompt is the versioned file ``prompts/judge.txt`` (its changelog and format are in
``prompts/judge.md``), loaded from the package, never written inline. The schema's
``label`` is an enum of the vocabulary, so a model with constrained decoding cannot
leave it; ``JudgeChain`` checks the label again for models without.
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
from arbiter.online.judge_chain import check_timeout, check_vocabulary
from arbiter.providers.base import CompletionRequest, Provider

__all__ = ["JUDGE_PROMPT_VERSION", "JudgeVerdict", "LLMJudge", "judge_prompt"]

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
    """A judge that asks an LLM through a ``Provider`` for a label in strict JSON.

    Args:
        name: Name reported as the outcome's source (e.g. ``"ollama"``).
        provider: The provider to call.
        model: The model name as the provider knows it.
        vocabulary: The allowed labels; they become the schema's enum.
        timeout: Seconds one verdict may take.
        max_output_tokens: Upper bound on the answer's length.

    Raises:
        ValueError: If the vocabulary is empty or the timeout is not positive.
    """

    prompt_version = JUDGE_PROMPT_VERSION
    """Version of the prompt file the judge sends."""

    def __init__(
        self,
        name: str,
        provider: Provider,
        model: str,
        *,
        vocabulary: Sequence[str],
        timeout: float = 30.0,
        max_output_tokens: int = 512,
    ) -> None:
        self.name = name
        self.provider = provider
        self.model = model
        self.vocabulary = check_vocabulary(vocabulary, "LLMJudge")
        self.timeout = check_timeout(timeout, "LLMJudge")
        self.max_output_tokens = max_output_tokens

    def json_schema(self) -> dict[str, Any]:
        """The strict schema of ``JudgeVerdict`` with the label restricted to the vocabulary."""
        from arbiter.providers.schema import strict_json_schema

        schema = strict_json_schema(JudgeVerdict)
        schema["properties"]["label"]["enum"] = list(self.vocabulary)
        return schema

    def build_request(self, prediction: Prediction, context: str | None) -> CompletionRequest:
        """The provider request for one prediction."""
        system, user = judge_prompt(prediction, context, vocabulary=self.vocabulary)
        return CompletionRequest(
            model=self.model,
            system=system,
            prompt=user,
            schema_name="judge_verdict",
            json_schema=self.json_schema(),
            max_output_tokens=self.max_output_tokens,
            timeout=self.timeout,
            metadata={
                "judge": self.name,
                "prediction": prediction.id,
                "prompt_version": self.prompt_version,
            },
        )

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """Ask the model; its label, unchecked against the vocabulary (the chain checks).

        Raises:
            ProviderError: The provider failed, or ``InvalidResponse`` for an answer
                that is not a ``JudgeVerdict``.
        """
        from arbiter.providers.parse import parse_structured

        response = await self.provider.complete(self.build_request(prediction, context))
        return parse_structured(response.text, JudgeVerdict).label
