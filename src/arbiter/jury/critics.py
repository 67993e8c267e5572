"""Critics: a lens on a model, asked for a strict-JSON critique of one output."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from arbiter.contract import Case, CriticOutcome, Critique, ModelCalls, Usage
from arbiter.errors import InputError
from arbiter.judging import Ask, JudgingContext, ModelRef

__all__ = [
    "DEFAULT_ROSTER",
    "LENS_INSTRUCTIONS",
    "CriticSpec",
    "critic_ask",
    "critic_prompt",
    "run_critic",
]

Lens = Literal["factual", "logical", "adversary", "custom"]

LENS_INSTRUCTIONS: dict[str, str] = {
    "factual": (
        "factual. Check every figure, amount, percentage, date, duration, name and rule in "
        "the OUTPUT against the CONTEXT, one by one."
    ),
    "logical": (
        "logical. Hunt for statements that contradict each other or flip the CONTEXT's "
        "polarity: required vs optional, allowed vs prohibited, always vs never, an "
        "inserted or dropped 'not'."
    ),
    "adversary": (
        "adversary. Assume the OUTPUT is wrong somewhere and find where: claims the CONTEXT "
        "does not support, parts of the TASK left undone, constraints of the TASK broken."
    ),
}
"""The one paragraph of the prompt that differs between lenses."""


class CriticSpec(BaseModel):
    """One juror: a lens, on a model, through a provider."""

    name: str
    """Unique name within the roster; shown in tables and stored with critiques."""
    lens: Lens = "factual"
    """What the critic focuses on (the mock provider turns it into detector sensitivity)."""
    provider: str = "mock"
    """Provider name: ``mock`` (the offline string detectors), openai, anthropic, gemini,
    ollama, llama_cpp, or one a plugin registered."""
    model: str = "mock"
    """Model name as the provider knows it."""
    instructions: str | None = None
    """The lens paragraph for a custom lens."""
    effort: Literal["low", "medium", "high", "max"] | None = None
    """Reasoning effort, sent only when ``supports_effort``."""
    supports_effort: bool = False
    """Whether the model accepts an effort setting (Haiku-class models reject it)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds one critique may take before the critic is recorded as dead."""
    max_output_tokens: int = Field(default=2048, ge=64)
    """Upper bound of the critique's length."""

    @model_validator(mode="after")
    def _custom_lens_has_instructions(self) -> CriticSpec:
        if self.lens == "custom" and not self.instructions:
            raise ValueError(f"critic {self.name!r}: a custom lens needs 'instructions'")
        return self

    def lens_instructions(self) -> str:
        """The lens paragraph of the prompt."""
        if self.lens == "custom":
            if not self.instructions:
                raise InputError(f"critic {self.name!r}: a custom lens needs 'instructions'")
            return self.instructions
        return LENS_INSTRUCTIONS[self.lens]

    def model_ref(self) -> ModelRef:
        """The model this critic asks, with its timeout and output bound."""
        return ModelRef(
            provider=self.provider,
            model=self.model,
            timeout=self.timeout,
            max_output_tokens=self.max_output_tokens,
        )


DEFAULT_ROSTER: tuple[CriticSpec, ...] = (
    CriticSpec(name="factual", lens="factual"),
    CriticSpec(name="logical", lens="logical"),
    CriticSpec(name="adversary", lens="adversary"),
)
"""The offline jury: three lenses on the deterministic mock provider."""


@cache
def _template() -> str:
    return files("arbiter.jury.prompts").joinpath("critic.txt").read_text(encoding="utf-8")


def critic_prompt(spec: CriticSpec) -> str:
    """The system prompt of one critic (the versioned file with its lens filled in)."""
    return _template().replace("{lens_instructions}", spec.lens_instructions())


def critic_ask(spec: CriticSpec, case: Case) -> Ask[Critique]:
    """The question one critic asks its model about one case."""
    prompt = f"TASK:\n{case.task}\n\nCONTEXT:\n{case.context}\n\nOUTPUT:\n{case.output}\n"
    return Ask(
        system=critic_prompt(spec),
        prompt=prompt,
        answer=Critique,
        schema_name="critique",
        effort=spec.effort if spec.supports_effort else None,
        metadata={"critic": spec.name, "case": case.id},
    )


async def run_critic(spec: CriticSpec, context: JudgingContext, case: Case) -> CriticOutcome:
    """Ask one critic; any failure makes it a dead juror, never an exception.

    A dead juror keeps the record of the call it made (an answer that did not parse
    cost its tokens; a timed-out call's cost is unknown).

    Args:
        spec: The critic.
        context: Where its provider comes from (cache, pooled providers, meter).
        case: The case to judge.
    """
    judged = await context.ask(spec.model_ref(), critic_ask(spec, case))
    calls = judged.calls
    base: dict[str, Any] = {
        "critic": spec.name,
        "lens": spec.lens,
        "model": spec.model,
        "latency_ms": round(calls.latency_ms, 3),
        "calls": calls,
        "raw": judged.raw,
    }
    if judged.answer is None:
        error = judged.error or "no answer"
        if judged.status == "timeout":
            error = f"no answer within {spec.timeout:g}s"
        return CriticOutcome(**base, status="dead", error=error, usage=_usage(judged.raw, calls))
    return CriticOutcome(
        **base,
        status="ok",
        critique=judged.answer,
        usage=_usage(judged.raw, calls),
        cached=bool(calls.cached),
    )


def _usage(raw: str | None, calls: ModelCalls) -> Usage | None:
    """The call's tokens and cost as the critic's ``usage``, when the model answered."""
    if raw is None:
        return None
    return Usage(
        input_tokens=calls.input_tokens,
        output_tokens=calls.output_tokens,
        cost_usd=calls.cost_usd,
    )
