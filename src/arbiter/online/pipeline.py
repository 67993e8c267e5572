"""The online pipeline: cheap layers always, expensive ones only when called for.

Order for one prediction:

1. heuristics (always) and grounding stages 1-2 (always, when configured; stage 3
   too when an embedder is configured and the text makes regulatory claims);
2. escalation when a layer flagged, the item is anomalous, or it falls in the sample
   rate of clean items: disagreement, consistency and the judge chain run
   concurrently, each only if configured, all bounded by one budget. When the budget
   expires, finished layers are kept and each unfinished one is recorded as
   ``abstained`` with the cut-off named.

Nothing raises to the caller: a layer's exception becomes an ``error`` status and a
line in ``errors``; an unreadable prediction becomes a result saying so.
``OnlineScorer`` puts the pipeline behind a bounded queue for services.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from opentelemetry.trace import Span

from arbiter.contract import (
    GroundingResult,
    HeuristicResult,
    JudgeOutcome,
    LayerReport,
    OnlineResult,
    Prediction,
)
from arbiter.online.consistency import ConsistencyCheck, field_text, score_consistency
from arbiter.online.disagreement import score_disagreement
from arbiter.online.grounding import (
    GroundingConfig,
    PolicyCheck,
    check_grounding,
    check_grounding_stage3,
    grounding_text,
)
from arbiter.online.heuristics import CompiledRules, compile_rules
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.reading import Item, describe_error, fallback_id, read_prediction
from arbiter.online.rules import Condition, RuleSet, default_rules
from arbiter.params import check_number
from arbiter.systems.base import SystemUnderTest
from arbiter.telemetry import Telemetry

__all__ = ["OnlinePipeline"]

logger = logging.getLogger(__name__)

_EXPENSIVE = ("disagreement", "consistency", "judge")
_NOT_CONFIGURED = LayerReport(status="not_configured", reason="not configured")
_NOT_ESCALATED = LayerReport(status="not_escalated", reason="not escalated")
_NO_SPAN: AbstractContextManager[None] = nullcontext()

Job = Callable[[Span | None], Awaitable[Any]]


class OnlinePipeline:
    """Scores one prediction at a time; every dependency is injected, none required.

    Args:
        rules: Heuristic rules (a set or compiled); None: the bundled defaults.
        grounding: Grounding stages 1-2; None switches the layer off.
        policy: Grounding stage 3; None: stages 1-2 only.
        systems: Systems to compare in the disagreement layer, by name.
        disagreement_timeout: Seconds each system may take.
        consistency: The consistency layer's embedder, store and settings.
        judge_chain: The judge chain.
        anomalous: An item matching any condition is escalated.
        sample_rate: Share of clean items escalated anyway.
        seed: Seed of the sampling RNG.
        budget_s: Bound on the escalated layers; raised to the longest single call
            (judge or system timeout) plus ``budget_margin_s``, logged and kept in
            ``budget_note``.
        budget_margin_s: The margin.
        telemetry: Spans and metrics; disabled by default.
        closers: Backends the pipeline owns (providers, embedders, stores built for it):
            ``aclose`` closes each that has an ``aclose``.
    """

    def __init__(
        self,
        *,
        rules: RuleSet | CompiledRules | None = None,
        grounding: GroundingConfig | None = None,
        policy: PolicyCheck | None = None,
        systems: Mapping[str, SystemUnderTest] | None = None,
        disagreement_timeout: float = 10.0,
        consistency: ConsistencyCheck | None = None,
        judge_chain: JudgeChain | None = None,
        anomalous: Sequence[Condition] = (),
        sample_rate: float = 0.0,
        seed: int | None = 0,
        budget_s: float = 25.0,
        budget_margin_s: float = 1.0,
        telemetry: Telemetry | None = None,
        closers: Sequence[object] = (),
    ) -> None:
        check_number(sample_rate, "sample_rate", "OnlinePipeline", minimum=0.0, maximum=1.0)
        self._closers = list(closers)
        if isinstance(rules, CompiledRules):
            self.rules = rules
        else:
            self.rules = compile_rules(rules if rules is not None else default_rules())
        self.grounding = grounding
        self.policy = policy
        self.systems = dict(systems) if systems else None
        self.disagreement_timeout = disagreement_timeout
        self.consistency = consistency
        self.judge_chain = judge_chain
        self._anomalous = [(c.describe(), c.compile()) for c in anomalous]
        self.sample_rate = sample_rate
        self._rng = random.Random(seed)
        self._telemetry = telemetry or Telemetry.disabled()
        self._traced = self._telemetry.enabled
        self._cancelled: set[asyncio.Future[Any]] = set()
        self.budget_s, self.budget_note = self._budget(budget_s, budget_margin_s)
        if self.budget_note:
            logger.warning(self.budget_note)

    def _budget(self, budget_s: float, margin_s: float) -> tuple[float, str | None]:
        calls: list[tuple[float, str]] = []
        if self.judge_chain is not None and self.judge_chain.longest_timeout > 0:
            calls.append((self.judge_chain.longest_timeout, "the longest judge timeout"))
        if self.systems:
            calls.append((self.disagreement_timeout, "the disagreement timeout"))
        if not calls:
            return budget_s, None
        longest, what = max(calls)
        floor = longest + margin_s
        if budget_s >= floor:
            return budget_s, None
        note = (
            f"budget_s {budget_s:g}s raised to {floor:g}s: {what} ({longest:g}s) "
            f"+ {margin_s:g}s margin"
        )
        return floor, note

    async def aclose(self) -> None:
        """Cancel layers still running after a cut-off, wait (briefly) for them to end,
        and close the backends the pipeline owns."""
        leftovers = list(self._cancelled)
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.wait(leftovers, timeout=1.0)
        closers, self._closers = self._closers, []
        for backend in closers:
            close = getattr(backend, "aclose", None)
            if callable(close):
                with contextlib.suppress(Exception):  # closing is best effort
                    await close()

    async def evaluate(
        self,
        prediction: Prediction | Mapping[str, Any],
        *,
        context: str | None = None,
        input: Mapping[str, Any] | None = None,
    ) -> OnlineResult:
        """Score one prediction; never raises (only the caller's own cancellation).

        Args:
            prediction: A ``Prediction`` or a raw dict of one (fields may be missing or
                invalid: the problems are recorded in ``errors``).
            context: Extra context for the judge.
            input: The input to replay to the disagreement systems; default
                ``metadata.input`` of the prediction.

        Returns:
            What every layer found, which ran and why, per-layer and total latency.
        """
        started = time.perf_counter()
        try:
            with self._span("arbiter.evaluate_item") as span:
                result = await self._evaluate(prediction, context, input, span)
                if span is not None:
                    span.set_attribute("arbiter.prediction_id", result.prediction_id)
                    span.set_attribute("arbiter.escalated", result.escalated)
                    for line in result.errors:
                        Telemetry.event(span, "arbiter.error", {"message": line})
        except Exception as exc:  # a bug of ours must not reach the caller either
            result = OnlineResult(
                prediction_id=fallback_id(prediction),
                label=None,
                errors=[f"pipeline: {describe_error(exc)}"],
            )
        result.total_ms = (time.perf_counter() - started) * 1000.0
        self._telemetry.record_item(escalated=result.escalated)
        return result

    async def _evaluate(
        self,
        prediction: Any,
        context: str | None,
        input: Mapping[str, Any] | None,
        span: Span | None,
    ) -> OnlineResult:
        item = read_prediction(prediction)
        if isinstance(item, str):
            return self._unreadable(prediction, item)
        layers: dict[str, LayerReport] = {}
        errors = item.errors
        heuristics = self._heuristics(item.doc, layers, errors)
        grounding = await self._grounding(item.doc, layers, errors)
        reasons = self._reasons(item.doc, heuristics, grounding)
        result = OnlineResult(
            prediction_id=item.id,
            label=item.label,
            heuristics=heuristics,
            grounding=grounding,
            escalated=bool(reasons),
            escalation_reasons=reasons,
            layers=layers,
            errors=errors,
        )
        if reasons:
            await self._escalate(item, result, context, input, span)
        else:
            for name in _EXPENSIVE:
                configured = self._configured(name)
                result.layers[name] = _NOT_ESCALATED if configured else _NOT_CONFIGURED
        return result

    # ------------------------------------------------------------------ cheap layers

    def _heuristics(
        self, doc: Mapping[str, Any], layers: dict[str, LayerReport], errors: list[str]
    ) -> HeuristicResult | None:
        started = time.perf_counter()
        result: HeuristicResult | None = None
        with self._span("arbiter.layer.heuristics"):
            try:
                result = self.rules.check(doc)
            except Exception as exc:
                errors.append(f"heuristics: {describe_error(exc)}")
        self._report(layers, "heuristics", started, None if result is not None else errors[-1])
        return result

    async def _grounding(
        self, doc: Mapping[str, Any], layers: dict[str, LayerReport], errors: list[str]
    ) -> GroundingResult | None:
        config = self.grounding
        if config is None:
            layers["grounding"] = _NOT_CONFIGURED
            return None
        started = time.perf_counter()
        notes: list[str] = []
        result: GroundingResult | None = None
        with self._span("arbiter.layer.grounding"):
            try:
                result = check_grounding(doc, config, notes=notes)
                if self.policy is not None and (result.claims or result.keywords):
                    result, failure = await self._stage3(result, grounding_text(doc, config))
                    if failure is not None:
                        errors.append(f"grounding {failure}")
                        notes.append(failure)
            except Exception as exc:
                errors.append(f"grounding: {describe_error(exc)}")
                result = None
        reason = errors[-1] if result is None else "; ".join(notes) or None
        self._report(layers, "grounding", started, reason, ran=result is not None)
        return result

    async def _stage3(
        self, result: GroundingResult, text: str
    ) -> tuple[GroundingResult, str | None]:
        """Stage 3 within its own timeout; on failure stages 1-2 stand and say why."""
        policy = self.policy
        assert policy is not None
        try:
            async with asyncio.timeout(policy.timeout_s):
                checked = await check_grounding_stage3(
                    result,
                    text,
                    embedder=policy.embedder,
                    store=policy.store,
                    namespace=policy.namespace,
                    threshold=policy.threshold,
                )
        except TimeoutError:
            return result, f"stage 3: no answer within {policy.timeout_s:g}s"
        except Exception as exc:
            return result, f"stage 3: {describe_error(exc)}"
        return checked, None

    def _reasons(
        self,
        doc: Mapping[str, Any],
        heuristics: HeuristicResult | None,
        grounding: GroundingResult | None,
    ) -> list[str]:
        reasons: list[str] = []
        if heuristics is not None and heuristics.flagged:
            reasons.append("heuristics: " + ", ".join(f.rule for f in heuristics.findings))
        if grounding is not None and grounding.flagged:
            if grounding.ungrounded:
                shown = ", ".join(grounding.ungrounded[:5])
                more = len(grounding.ungrounded) - 5
                reasons.append(
                    f"grounding: ungrounded {shown}" + (f" (+{more})" if more > 0 else "")
                )
            else:
                best = grounding.best_policy_similarity
                shown = "none" if best is None else f"{best:.2f}"
                reasons.append(f"grounding: best policy similarity {shown} under threshold")
        for description, holds in self._anomalous:
            if holds(doc):
                reasons.append(f"anomalous: {description}")
                break
        if not reasons and self.sample_rate > 0.0 and self._rng.random() < self.sample_rate:
            reasons.append("sampled")
        return reasons

    # ------------------------------------------------------------- expensive layers

    def _configured(self, name: str) -> bool:
        if name == "disagreement":
            return self.systems is not None
        if name == "consistency":
            return self.consistency is not None
        return self.judge_chain is not None

    async def _escalate(
        self,
        item: Item,
        result: OnlineResult,
        context: str | None,
        input: Mapping[str, Any] | None,
        span: Span | None,
    ) -> None:
        layers, jobs = result.layers, self._jobs(item, context, input, result.layers)
        if not jobs:
            return
        tasks = {
            name: asyncio.ensure_future(self._guarded(name, job)) for name, job in jobs.items()
        }
        started = time.perf_counter()
        try:
            await asyncio.wait(tasks.values(), timeout=self.budget_s)
        finally:
            unfinished = [task for task in tasks.values() if not task.done()]
            for task in unfinished:
                task.cancel()
                self._cancelled.add(task)
                task.add_done_callback(self._cancelled.discard)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        for name, task in tasks.items():
            if task.done() and not task.cancelled():
                value, report, error = task.result()
                layers[name] = report
                setattr(result, name, value)
                result.errors.extend(f"{name}: {line}" for line in error)
                continue
            reason = f"cut off at {self.budget_s:g}s budget"
            layers[name] = LayerReport(
                status="abstained", reason=reason, latency_ms=elapsed_ms, cut_off=True
            )
            self._telemetry.record_layer(name, elapsed_ms, "abstained")
            if span is not None:
                Telemetry.event(span, "arbiter.layer.abstained", {"layer": name, "reason": reason})

    def _jobs(
        self,
        item: Item,
        context: str | None,
        input: Mapping[str, Any] | None,
        layers: dict[str, LayerReport],
    ) -> dict[str, Job]:
        jobs: dict[str, Job] = {}
        typed = item.typed
        for name in _EXPENSIVE:
            if not self._configured(name):
                layers[name] = _NOT_CONFIGURED
            elif name != "disagreement" and typed is None:
                layers[name] = LayerReport(status="error", reason="the prediction is unreadable")
        systems = self.systems
        if systems is not None:
            metadata = item.doc.get("metadata")
            replay = input
            if replay is None and isinstance(metadata, Mapping):
                found = metadata.get("input")
                replay = found if isinstance(found, Mapping) else None
            if replay is None:
                reason = "no input to replay: pass input= or set metadata.input"
                layers["disagreement"] = LayerReport(status="abstained", reason=reason)
            else:
                replayed, timeout = replay, self.disagreement_timeout
                jobs["disagreement"] = lambda _span: score_disagreement(
                    replayed, systems, timeout=timeout
                )
        if typed is not None and self.consistency is not None:
            check = self.consistency
            jobs["consistency"] = lambda _span: score_consistency(
                typed,
                embedder=check.embedder,
                store=check.store,
                namespace=check.namespace,
                threshold=check.threshold,
                top_k=check.top_k,
                text_of=field_text(check.text_field) if check.text_field else None,
                upsert=check.upsert,
            )
        if typed is not None and self.judge_chain is not None:
            jobs["judge"] = lambda span: self._judge(typed, context, span)
        return jobs

    async def _judge(
        self, prediction: Prediction, context: str | None, span: Span | None
    ) -> JudgeOutcome:
        assert self.judge_chain is not None
        outcome = await self.judge_chain.judge(prediction, context=context)
        if span is not None:
            for attempt in outcome.attempts:
                if attempt.outcome != "ok":
                    attributes = {"judge": attempt.source, "outcome": attempt.outcome}
                    Telemetry.event(span, "arbiter.judge.attempt_failed", attributes)
        self._telemetry.record_judge(outcome.source)
        return outcome

    async def _guarded(self, name: str, job: Job) -> tuple[Any, LayerReport, list[str]]:
        """Run one expensive layer; its exception becomes an ``error`` report."""
        started = time.perf_counter()
        with self._span(f"arbiter.layer.{name}") as span:
            try:
                value = await job(span)
            except Exception as exc:
                line = describe_error(exc)
                if span is not None:
                    Telemetry.fail(span, line)
                ms = (time.perf_counter() - started) * 1000.0
                self._telemetry.record_layer(name, ms, "error")
                return None, LayerReport(status="error", reason=line, latency_ms=ms), [line]
        ms = (time.perf_counter() - started) * 1000.0
        self._telemetry.record_layer(name, ms, "ran")
        return value, LayerReport(status="ran", latency_ms=ms), _failures_inside(value)

    # ----------------------------------------------------------------------- helpers

    def _span(self, name: str) -> AbstractContextManager[Span | None]:
        return self._telemetry.span(name) if self._traced else _NO_SPAN

    def _report(
        self,
        layers: dict[str, LayerReport],
        name: str,
        started: float,
        reason: str | None,
        *,
        ran: bool | None = None,
    ) -> None:
        ms = (time.perf_counter() - started) * 1000.0
        ok = ran if ran is not None else reason is None
        status: Literal["ran", "error"] = "ran" if ok else "error"
        layers[name] = LayerReport(status=status, reason=reason, latency_ms=ms)
        self._telemetry.record_layer(name, ms, status)

    def _unreadable(self, prediction: object, why: str) -> OnlineResult:
        layers = {
            "heuristics": LayerReport(status="error", reason=why),
            "grounding": LayerReport(status="error", reason=why)
            if self.grounding is not None
            else _NOT_CONFIGURED,
        }
        for name in _EXPENSIVE:
            layers[name] = _NOT_ESCALATED if self._configured(name) else _NOT_CONFIGURED
        return OnlineResult(
            prediction_id=fallback_id(prediction), label=None, layers=layers, errors=[why]
        )


def _failures_inside(value: Any) -> list[str]:
    """Failures a layer reported without raising (a system's or judge's), one line each."""
    errors = getattr(value, "errors_by_provider", None)
    if isinstance(errors, Mapping):
        return [f"{name}: {line}" for name, line in errors.items()]
    attempts = getattr(value, "attempts", None)
    if isinstance(attempts, list):
        return [f"{a.source}: {a.error}" for a in attempts if a.outcome == "failed"]
    return []
