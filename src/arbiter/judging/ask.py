"""One judging call: a structured ask in, a parsed answer with its model-call record out.

:func:`ask` is the only place in Arbiter that calls ``Provider.complete``. Whatever
happens, it returns a :class:`Judged` and never raises (a cancellation of the caller's
own task excepted): its ``status`` says what became of the call, and its ``calls`` say
what the call cost in the one shape every judged thing reports,
:class:`~arbiter.contract.ModelCalls`:

======== ============================================= ===================================
status   what happened                                 what ``calls`` holds
======== ============================================= ===================================
ok       the answer parsed                             the call: tokens, cost, latency
invalid  the model answered, but not the schema's JSON the call (it was paid for)
timeout  no answer within the model's timeout          1 call, cost unknown (None): it
                                                       may have been billed
refused  not asked: the budget is spent, or the        nothing when the budget refused;
         provider refused the credentials              1 call at no cost otherwise
error    the provider failed otherwise                 1 call at no cost
======== ============================================= ===================================
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from arbiter.contract import ModelCalls
from arbiter.errors import InvalidResponse, ProviderAuthError, ProviderTimeout

if TYPE_CHECKING:
    from arbiter.judging.model import ModelRef
    from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider

__all__ = ["JUDGING_STATUSES", "Ask", "Judged", "JudgingStatus", "ask", "describe_calls"]

A = TypeVar("A", bound=BaseModel)

JudgingStatus = Literal["ok", "timeout", "invalid", "refused", "error"]
"""What became of one judging call (see the module's table)."""

JUDGING_STATUSES: tuple[JudgingStatus, ...] = ("ok", "timeout", "invalid", "refused", "error")
"""Every status, success first."""

_MAX_ERROR = 300
"""Characters of an error line (it may carry model or server text)."""


class CallContext(Protocol):
    """What a call needs of its context (:class:`~arbiter.judging.context.JudgingContext`)."""

    def provider(self, name: str) -> Provider:
        """The provider ``name``, built once."""
        ...

    def budget_refusal(self) -> str | None:
        """Why the budget refuses another call; None while it allows one."""
        ...


@dataclass(frozen=True)
class Ask(Generic[A]):
    """A structured question to a model: prompts, the answer's shape, how to read it."""

    system: str
    """The system prompt."""
    prompt: str
    """The user message."""
    answer: type[A]
    """The answer's Pydantic model; its strict JSON schema is sent unless ``json_schema``."""
    schema_name: str
    """Name of the JSON schema (some APIs require one)."""
    json_schema: dict[str, Any] | None = None
    """The schema sent, when it is narrower than ``answer``'s (an enum of labels)."""
    parse: Callable[[str], A] | None = None
    """Reads the answer text; default: strict JSON validated as ``answer``. It raises
    ``InvalidResponse`` for an answer it cannot read."""
    effort: Literal["low", "medium", "high", "max"] | None = None
    """Reasoning effort, for models that accept it."""
    offline_answer: Any = None
    """The JSON the offline ``mock`` provider answers (never sent to a real model)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """What a provider may log (the item, the scorer); never sent."""

    def schema(self) -> dict[str, Any]:
        """The JSON schema the request carries."""
        return self.json_schema if self.json_schema is not None else strict_schema(self.answer)

    def read(self, text: str) -> A:
        """The answer text as ``answer``.

        Raises:
            InvalidResponse: The text is not the answer's JSON.
        """
        if self.parse is not None:
            return self.parse(text)
        from arbiter.providers.parse import parse_structured

        return parse_structured(text, self.answer)


@cache
def strict_schema(answer: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of an answer model (built once per model)."""
    from arbiter.providers.schema import strict_json_schema

    return strict_json_schema(answer)


@dataclass(frozen=True)
class Judged(Generic[A]):
    """What one judging call came to: the answer (when ``ok``) and what the call cost."""

    status: JudgingStatus
    """``ok``, ``timeout``, ``invalid``, ``refused`` or ``error``."""
    answer: A | None
    """The parsed answer; None unless ``ok``."""
    calls: ModelCalls
    """The call's record: count, cache hit, tokens, latency, cost."""
    error: str | None = None
    """Why there is no answer, one bounded line (``ProviderTimeout: ...``)."""
    raw: str | None = None
    """The model's answer text, when it answered."""
    answered_by: str | None = None
    """The model that answered, as the provider reported it."""

    @property
    def ok(self) -> bool:
        """Whether the answer parsed."""
        return self.status == "ok"


def describe_calls(calls: ModelCalls) -> str:
    """The one line every command prints for model calls.

    Examples:
        >>> describe_calls(ModelCalls(calls=3, cached=1, input_tokens=1200, output_tokens=90,
        ...                           cost_usd=0.0021))
        '3 (1 cached), tokens 1,200 in / 90 out, cost $0.0021'
    """
    cost = "-" if calls.cost_usd is None else f"${calls.cost_usd:,.4f}"
    return (
        f"{calls.calls} ({calls.cached} cached), tokens {calls.input_tokens:,} in / "
        f"{calls.output_tokens:,} out, cost {cost}"
    )


def request_of(ref: ModelRef, question: Ask[Any]) -> CompletionRequest:
    """The provider request of ``question`` to ``ref``'s model."""
    from arbiter.providers.base import CompletionRequest
    from arbiter.providers.mock import MOCK_ANSWER

    metadata = dict(question.metadata)
    if question.offline_answer is not None and ref.provider == "mock":
        metadata[MOCK_ANSWER] = question.offline_answer
    # Built from checked parts on every call: construct, do not validate (or copy the schema).
    return CompletionRequest.model_construct(
        model=ref.model_name,
        system=question.system,
        prompt=question.prompt,
        schema_name=question.schema_name,
        json_schema=question.schema(),
        effort=question.effort,
        max_output_tokens=ref.max_output_tokens,
        timeout=ref.timeout,
        metadata=metadata,
    )


async def ask(context: CallContext, ref: ModelRef, question: Ask[A]) -> Judged[A]:
    """Ask ``ref``'s model ``question`` through ``context``; never raises for the call.

    The context supplies the provider (pooled, behind the model-call cache when the
    context uses it) and the budget; the call's record is added to the context's meter
    as soon as the call returns. Prefer :meth:`JudgingContext.ask
    <arbiter.judging.context.JudgingContext.ask>`, which also adds it to a caller's meter.

    Args:
        context: The shared context.
        ref: The model.
        question: What to ask and how to read the answer.
    """
    refusal = context.budget_refusal()
    if refusal is not None:
        return Judged("refused", None, ModelCalls(), error=f"BudgetSpent: {refusal}")
    started = time.perf_counter()
    try:
        provider = context.provider(ref.provider)
    except Exception as exc:  # an unusable provider is this call's failure, not the caller's
        return Judged("error", None, ModelCalls(), error=_line(exc))
    try:
        async with asyncio.timeout(ref.timeout):
            response = await provider.complete(request_of(ref, question))
    except (TimeoutError, ProviderTimeout) as exc:
        # The request may have been billed: its cost is unknown, not zero.
        calls = ModelCalls(calls=1, latency_ms=_elapsed(started), cost_usd=None)
        error = _line(exc) if isinstance(exc, ProviderTimeout) else _timeout_line(ref)
        return Judged("timeout", None, calls, error=error)
    except ProviderAuthError as exc:
        return Judged("refused", None, _failed(started), error=_line(exc))
    except InvalidResponse as exc:
        # An answer the provider could not hand over (cut off at the token limit, no
        # text): the call still cost its tokens, when the provider said how many.
        return Judged("invalid", None, _billed(exc, ref, started), error=_line(exc))
    except Exception as exc:  # a provider's failure is this call's status, never a crash
        return Judged("error", None, _failed(started), error=_line(exc))
    calls = _priced(response, ref, _elapsed(started))
    try:
        answer = question.read(response.text)
    except InvalidResponse as exc:
        # The call succeeded and cost tokens: the record keeps them.
        return Judged(
            "invalid", None, calls, error=_line(exc), raw=response.text, answered_by=response.model
        )
    return Judged("ok", answer, calls, raw=response.text, answered_by=response.model)


def _priced(response: CompletionResponse, ref: ModelRef, latency_ms: float) -> ModelCalls:
    calls = response.model_calls(latency_ms=latency_ms)
    if ref.price is None or response.cached:
        return calls
    per_in, per_out = ref.price
    cost = (calls.input_tokens * per_in + calls.output_tokens * per_out) / 1_000_000
    return calls.model_copy(update={"cost_usd": cost})


def _billed(exc: InvalidResponse, ref: ModelRef, started: float) -> ModelCalls:
    """The record of a call whose answer was unusable: its tokens and their cost."""
    usage = exc.usage
    if usage is None:
        return _failed(started)
    calls = ModelCalls(
        calls=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        latency_ms=_elapsed(started),
        cost_usd=usage.cost_usd,
    )
    if ref.price is None:
        return calls
    per_in, per_out = ref.price
    cost = (calls.input_tokens * per_in + calls.output_tokens * per_out) / 1_000_000
    return calls.model_copy(update={"cost_usd": cost})


def _failed(started: float) -> ModelCalls:
    return ModelCalls(calls=1, latency_ms=_elapsed(started), cost_usd=0.0)


def _elapsed(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _timeout_line(ref: ModelRef) -> str:
    return f"ProviderTimeout: {ref.name}: no answer within {ref.timeout:g}s"


def _line(exc: BaseException) -> str:
    flat = " ".join(f"{type(exc).__name__}: {exc}".split())
    return flat if len(flat) <= _MAX_ERROR else flat[:_MAX_ERROR] + " [...]"
