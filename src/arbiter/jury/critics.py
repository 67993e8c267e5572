"""Critics: a lens on a model, asked for a strict-JSON critique of one output."""

from __future__ import annotations

import asyncio
import time
from functools import cache
from importlib.resources import files
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from arbiter.contract import Case, CriticOutcome, Critique
from arbiter.errors import ArbiterError, InputError
from arbiter.providers.base import CompletionRequest, Provider

__all__ = [
    "DEFAULT_ROSTER",
    "LENS_INSTRUCTIONS",
    "CriticSpec",
    "build_request",
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


@cache
def _critique_schema() -> dict[str, Any]:
    from arbiter.providers.schema import strict_json_schema

    return strict_json_schema(Critique)


def build_request(spec: CriticSpec, case: Case) -> CompletionRequest:
    """The provider request for one critic on one case."""
    prompt = f"TASK:\n{case.task}\n\nCONTEXT:\n{case.context}\n\nOUTPUT:\n{case.output}\n"
    return CompletionRequest(
        model=spec.model,
        system=critic_prompt(spec),
        prompt=prompt,
        schema_name="critique",
        json_schema=_critique_schema(),
        effort=spec.effort if spec.supports_effort else None,
        max_output_tokens=spec.max_output_tokens,
        timeout=spec.timeout,
        metadata={"critic": spec.name, "case": case.id},
    )


async def run_critic(spec: CriticSpec, provider: Provider, case: Case) -> CriticOutcome:
    """Ask one critic; any failure makes it a dead juror, never an exception.

    Args:
        spec: The critic.
        provider: The provider it runs on.
        case: The case to judge.
    """
    from arbiter.providers.parse import parse_structured

    started = time.perf_counter()
    base: dict[str, Any] = {"critic": spec.name, "lens": spec.lens, "model": spec.model}
    raw: str | None = None
    try:
        response = await asyncio.wait_for(
            provider.complete(build_request(spec, case)), timeout=spec.timeout
        )
        raw = response.text
        critique = parse_structured(response.text, Critique)
    except TimeoutError:
        return CriticOutcome(
            **base,
            status="dead",
            error=f"no answer within {spec.timeout:g}s",
            latency_ms=_ms(started),
        )
    except ArbiterError as exc:
        return CriticOutcome(
            **base,
            status="dead",
            error=f"{type(exc).__name__}: {exc}",
            latency_ms=_ms(started),
            raw=raw,
        )
    except Exception as exc:  # a broken provider must not break the jury
        return CriticOutcome(
            **base,
            status="dead",
            error=f"{type(exc).__name__}: {exc}"[:300],
            latency_ms=_ms(started),
            raw=raw,
        )
    return CriticOutcome(
        **base,
        status="ok",
        critique=critique,
        latency_ms=_ms(started),
        usage=response.usage,
        cached=response.cached,
        raw=raw,
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
