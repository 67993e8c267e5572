"""One judging call: each status, what its record holds, the budget, the meter, the price."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from arbiter.contract import Case, ModelCalls, Usage
from arbiter.errors import InvalidResponse, ProviderAuthError, ProviderUnavailable
from arbiter.judging import Ask, CallBudget, CallMeter, JudgingContext, ModelRef
from arbiter.jury.critics import CriticSpec, run_critic
from arbiter.providers.base import CompletionRequest, CompletionResponse


class Answer(BaseModel):
    ok: bool


QUESTION = Ask(system="s", prompt="p", answer=Answer, schema_name="answer")
REF = ModelRef(provider="fake", model="m", timeout=0.05)


class Scripted:
    """A provider at the edge: answers a text or raises, counting requests; can hang."""

    name = "fake"

    def __init__(self, answer: str | Exception | None) -> None:
        self.answer = answer
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if self.answer is None:
            await asyncio.Event().wait()  # hangs until cancelled
        if isinstance(self.answer, Exception):
            raise self.answer
        usage = Usage(input_tokens=10, output_tokens=4, cost_usd=0.01)
        return CompletionResponse(text=str(self.answer), model="m-1", usage=usage)


def _context(answer: str | Exception | None, **options: Any) -> tuple[JudgingContext, Scripted]:
    provider = Scripted(answer)
    return JudgingContext(given={"fake": provider}, use_cache=False, **options), provider


@pytest.mark.parametrize(
    ("answer", "status", "calls", "error"),
    [
        ('{"ok": true}', "ok", ModelCalls(calls=1, input_tokens=10, output_tokens=4), None),
        ('{"ok": "x"}', "invalid", ModelCalls(calls=1, input_tokens=10, output_tokens=4), "Inv"),
        (None, "timeout", ModelCalls(calls=1, cost_usd=None), "ProviderTimeout"),
        (ProviderAuthError("no key"), "refused", ModelCalls(calls=1, cost_usd=0.0), "Provider"),
        (ProviderUnavailable("HTTP 500"), "error", ModelCalls(calls=1, cost_usd=0.0), "Provider"),
    ],
    ids=["ok", "invalid", "timeout", "refused", "error"],
)
async def test_every_call_returns_a_status_and_a_record_and_never_raises(
    answer: str | Exception | None, status: str, calls: ModelCalls, error: str | None
) -> None:
    context, provider = _context(answer)
    judged = await context.ask(REF, QUESTION)
    assert judged.status == status
    assert len(provider.requests) == 1
    record = judged.calls.model_copy(update={"latency_ms": 0.0})
    if status in ("ok", "invalid"):
        calls = calls.model_copy(update={"cost_usd": 0.01})
    assert record == calls
    assert (judged.answer is not None) == (status == "ok")
    assert (judged.error is None) == (error is None)
    if error is not None:
        assert judged.error is not None
        assert judged.error.startswith(error)
    assert context.meter.total.calls == 1


async def test_an_answer_cut_off_at_the_token_limit_keeps_the_tokens_it_cost() -> None:
    cut = InvalidResponse("fake m: the answer was cut off at max_output_tokens=512")
    cut.usage = Usage(input_tokens=30, output_tokens=512, cost_usd=0.02)
    context, _ = _context(cut)
    judged = await context.ask(REF, QUESTION)
    assert judged.status == "invalid"
    assert judged.error is not None
    assert "cut off" in judged.error
    record = judged.calls.model_copy(update={"latency_ms": 0.0})
    assert record == ModelCalls(calls=1, input_tokens=30, output_tokens=512, cost_usd=0.02)
    priced = await context.ask(REF.model_copy(update={"price": (1.0, 2.0)}), QUESTION)
    assert priced.calls.cost_usd == pytest.approx((30 * 1.0 + 512 * 2.0) / 1_000_000)


async def test_a_spent_budget_refuses_the_call_without_making_it() -> None:
    context, provider = _context('{"ok": true}', budget=CallBudget(max_calls=1))
    first = await context.ask(REF, QUESTION)
    second = await context.ask(REF, QUESTION)
    assert (first.status, second.status) == ("ok", "refused")
    assert second.calls == ModelCalls()
    assert second.error is not None
    assert "budget of 1 model calls" in second.error
    assert len(provider.requests) == 1


async def test_a_reference_price_overrides_the_providers_and_a_callers_meter_counts_too() -> None:
    context, _ = _context('{"ok": true}')
    meter = CallMeter()
    priced = REF.model_copy(update={"price": (1.0, 2.0)})
    judged = await context.ask(priced, QUESTION, meter=meter)
    assert judged.calls.cost_usd == pytest.approx((10 * 1.0 + 4 * 2.0) / 1_000_000)
    assert meter.total == context.meter.total == judged.calls


async def test_a_dead_juror_keeps_the_call_it_made() -> None:
    context, _ = _context('{"accuracy": 9}')
    spec = CriticSpec(name="factual", provider="fake", model="m")
    outcome = await run_critic(spec, context, Case(id="c", task="t", context="x", output="y"))
    assert outcome.status == "dead"
    assert outcome.usage == Usage(input_tokens=10, output_tokens=4, cost_usd=0.01)
    assert (outcome.calls.calls, outcome.calls.input_tokens) == (1, 10)


def test_the_judging_surface_is_listed_once_in_ruffs_order_and_every_name_resolves() -> None:
    import arbiter.judging as judging

    # isort-style: constants, then classes, then functions, each alphabetical.
    def order(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert judging.__all__ == sorted(set(judging.__all__), key=order)
    assert [name for name in judging.__all__ if not hasattr(judging, name)] == []
