"""The online pipeline: free layers always, expensive ones only when called for.

A pipeline holds a list of layers (:class:`~arbiter.online.layer.Layer`). For one
prediction:

1. the free layers run one after the other, in order (the built-in ones: heuristics,
   then grounding stages 1-2, and stage 3 when an embedder is configured and the text
   makes regulatory claims);
2. the item is escalated when a free layer flagged it, it is anomalous, or it falls in
   the sample rate of clean items (a seeded draw per item id, see
   :mod:`arbiter.online.sampling`): the expensive layers (the built-in ones:
   disagreement, consistency, the judge chain; a judge panel joins as a layer of its
   own) then run concurrently, all bounded by one budget. When the budget expires,
   finished layers are kept and each unfinished one is recorded as ``abstained`` with
   the cut-off named.

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
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.trace import Span

from arbiter.contract import LayerResult, OnlineResult, Prediction
from arbiter.online.consistency import ConsistencyCheck, ConsistencyLayer
from arbiter.online.disagreement import DisagreementLayer
from arbiter.online.grounding import GroundingConfig, GroundingLayer, PolicyCheck
from arbiter.online.heuristics import CompiledRules, HeuristicsLayer
from arbiter.online.judge_chain import JudgeChain, JudgeLayer
from arbiter.online.layer import Layer, LayerContext, NotRun, Unconfigured
from arbiter.online.reading import Item, describe_error, fallback_id, read_prediction
from arbiter.online.rules import Condition, HeuristicRules, default_rules
from arbiter.online.sampling import SAMPLED, sampled, trigger
from arbiter.params import check_number, invalid
from arbiter.systems.base import SystemUnderTest
from arbiter.telemetry import Telemetry

__all__ = ["OnlinePipeline", "standard_layers"]

logger = logging.getLogger(__name__)

_NOT_CONFIGURED = LayerResult(status="not_configured", reason="not configured")
_NOT_ESCALATED = LayerResult(status="not_escalated", reason="not escalated")


def standard_layers(
    *,
    rules: HeuristicRules | CompiledRules | None = None,
    grounding: GroundingConfig | None = None,
    policy: PolicyCheck | None = None,
    systems: Mapping[str, SystemUnderTest] | None = None,
    disagreement_timeout: float = 10.0,
    consistency: ConsistencyCheck | None = None,
    judge_chain: JudgeChain | None = None,
) -> list[Layer]:
    """The built-in layers in order, each ``Unconfigured`` when its part is not given.

    The one place that lists them (arguments as for :class:`OnlinePipeline`).
    """
    return [
        HeuristicsLayer(rules if rules is not None else default_rules()),
        GroundingLayer(grounding, policy) if grounding is not None else Unconfigured("grounding"),
        DisagreementLayer(systems, timeout=disagreement_timeout)
        if systems
        else Unconfigured("disagreement", expensive=True),
        ConsistencyLayer(consistency)
        if consistency is not None
        else Unconfigured("consistency", expensive=True),
        JudgeLayer(judge_chain)
        if judge_chain is not None
        else Unconfigured("judge", expensive=True),
    ]


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
        layers: Layers of one's own, after the built-in ones: a free one runs after
            grounding, an expensive one beside the other expensive layers.
        anomalous: An item matching any condition is escalated.
        sample_rate: Share of clean items escalated anyway, each drawn by a hash of
            ``seed`` and its id (:func:`arbiter.online.sampling.sampled`): an item's
            draw is the same in any order and in any re-run.
        seed: Seed of the draw; None: a new one for this pipeline.
        budget_s: Bound on the escalated layers; raised to the longest single call
            (a layer's ``budget_floor``: the judge or system timeout) plus
            ``budget_margin_s``, logged and kept in ``budget_note``.
        budget_margin_s: The margin.
        telemetry: Spans and metrics; disabled by default.
        closers: Backends the pipeline owns (providers, embedders, stores built for it):
            ``aclose`` closes each that has an ``aclose``.

    Raises:
        InvalidParameter: ``sample_rate`` is outside [0, 1], or two layers share a name.
    """

    def __init__(
        self,
        *,
        rules: HeuristicRules | CompiledRules | None = None,
        grounding: GroundingConfig | None = None,
        policy: PolicyCheck | None = None,
        systems: Mapping[str, SystemUnderTest] | None = None,
        disagreement_timeout: float = 10.0,
        consistency: ConsistencyCheck | None = None,
        judge_chain: JudgeChain | None = None,
        layers: Sequence[Layer] = (),
        anomalous: Sequence[Condition] = (),
        sample_rate: float = 0.0,
        seed: int | None = 0,
        budget_s: float = 25.0,
        budget_margin_s: float = 1.0,
        telemetry: Telemetry | None = None,
        closers: Sequence[object] = (),
    ) -> None:
        check_number(sample_rate, "sample_rate", "OnlinePipeline", minimum=0.0, maximum=1.0)
        built_in = standard_layers(
            rules=rules,
            grounding=grounding,
            policy=policy,
            systems=systems,
            disagreement_timeout=disagreement_timeout,
            consistency=consistency,
            judge_chain=judge_chain,
        )
        every = [*built_in, *layers]
        names = [layer.name for layer in every]
        if len(set(names)) != len(names):
            raise invalid("layers", "OnlinePipeline", "layers with unique names", names)
        self._free = [layer for layer in every if not layer.expensive]
        self._expensive = [layer for layer in every if layer.expensive]
        self.layers: tuple[Layer, ...] = (*self._free, *self._expensive)
        """Every layer in the order results report them: the free ones, then the
        expensive ones; a built-in one switched off is ``Unconfigured``."""
        self._idle = {
            layer.name: _NOT_CONFIGURED if isinstance(layer, Unconfigured) else _NOT_ESCALATED
            for layer in self._expensive
        }
        self._closers = list(closers)
        self._anomalous = [(c.describe(), c.compile()) for c in anomalous]
        self.sample_rate = sample_rate
        self.seed = random.SystemRandom().randrange(2**32) if seed is None else seed
        """The seed of the per-item draw."""
        self._telemetry = telemetry or Telemetry.disabled()
        # Off, spans and metrics go nowhere: skip even the calls on the hot path.
        self._traced = self._telemetry.enabled
        self._cancelled: set[asyncio.Future[Any]] = set()
        self.budget_s, self.budget_note = self._budget(budget_s, budget_margin_s)
        if self.budget_note:
            logger.warning(self.budget_note)

    def layer(self, name: str) -> Layer:
        """The layer called ``name``.

        Raises:
            KeyError: No layer has that name.
        """
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def _budget(self, budget_s: float, margin_s: float) -> tuple[float, str | None]:
        floors = [
            call
            for layer in self._expensive
            if not isinstance(layer, Unconfigured) and (call := layer.budget_floor) is not None
        ]
        if not floors:
            return budget_s, None
        longest, what = max(floors)
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
            if self._traced:
                result = await self._traced_evaluate(prediction, context, input)
            else:
                result = await self._evaluate(prediction, context, input, None)
        except Exception as exc:  # a bug of ours must not reach the caller either
            result = OnlineResult(
                prediction_id=fallback_id(prediction),
                label=None,
                errors=[f"pipeline: {describe_error(exc)}"],
            )
        result.total_ms = (time.perf_counter() - started) * 1000.0
        if self._traced:
            self._telemetry.record_item(
                escalated=result.escalated,
                latency_ms=result.total_ms,
                trigger=trigger(result.escalation_reasons),
            )
        return result

    async def _traced_evaluate(
        self, prediction: Any, context: str | None, input: Mapping[str, Any] | None
    ) -> OnlineResult:
        with self._telemetry.span("arbiter.evaluate_item") as span:
            result = await self._evaluate(prediction, context, input, span)
            span.set_attribute("arbiter.prediction_id", result.prediction_id)
            span.set_attribute("arbiter.escalated", result.escalated)
            for line in result.errors:
                Telemetry.event(span, "arbiter.error", {"message": line})
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
        found: dict[str, LayerResult] = {}
        errors = item.errors
        reasons: list[str] = []
        # One context serves the free layers in turn (they run one at a time).
        run = LayerContext("", reasons, found, self._telemetry, context, input)
        for layer in self._free:
            if isinstance(layer, Unconfigured):
                found[layer.name] = _NOT_CONFIGURED
                continue
            run.layer = layer.name
            if self._traced:
                found[layer.name] = await self._run(layer, item, run)
            else:  # one coroutine less per layer on the hot path
                found[layer.name] = await self._call(layer, item, run)
            if run.notes:
                run.notes = []
            if run.errors:
                errors += run.errors
                run.errors = []
        self._escalation(item, reasons)
        if reasons:
            await self._escalate(item, found, errors, reasons, context, input, span)
        else:
            found.update(self._idle)
        return OnlineResult(
            prediction_id=item.id,
            label=item.label,
            escalated=bool(reasons),
            escalation_reasons=reasons,
            layers=found,
            errors=errors,
        )

    def _escalation(self, item: Item, reasons: list[str]) -> None:
        """Add the pipeline's own reasons to the free layers' flags: anomalous, sampled."""
        for description, holds in self._anomalous:
            if holds(item.doc):
                reasons.append(f"anomalous: {description}")
                break
        if not reasons and sampled(item.id, self.sample_rate, self.seed):
            reasons.append(SAMPLED)

    async def _escalate(
        self,
        item: Item,
        found: dict[str, LayerResult],
        errors: list[str],
        reasons: list[str],
        context: str | None,
        input: Mapping[str, Any] | None,
        span: Span | None,
    ) -> None:
        """Run the expensive layers at once under the budget; record each in ``found``."""
        deadline = asyncio.get_running_loop().time() + self.budget_s
        runs: dict[str, LayerContext] = {}
        tasks: dict[str, asyncio.Future[LayerResult]] = {}
        for layer in self._expensive:
            if not isinstance(layer, Unconfigured):
                run = LayerContext(
                    layer.name, reasons, found, self._telemetry, context, input, deadline
                )
                runs[layer.name] = run
                tasks[layer.name] = asyncio.ensure_future(self._run(layer, item, run))
        started = time.perf_counter()
        if tasks:
            try:
                await asyncio.wait(tasks.values(), timeout=self.budget_s)
            finally:
                for running in tasks.values():
                    if not running.done():
                        running.cancel()
                        self._cancelled.add(running)
                        running.add_done_callback(self._cancelled.discard)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        for layer in self._expensive:
            name = layer.name
            task = tasks.get(name)
            if task is None:
                found[name] = _NOT_CONFIGURED
            elif task.done() and not task.cancelled():
                found[name] = task.result()
                errors += runs[name].errors
            else:
                reason = f"cut off at {self.budget_s:g}s budget"
                found[name] = LayerResult(
                    status="abstained", reason=reason, latency_ms=elapsed_ms, cut_off=True
                )
                if self._traced:
                    self._telemetry.record_layer(name, elapsed_ms, "abstained")
                if span is not None:
                    attributes = {"layer": name, "reason": reason}
                    Telemetry.event(span, "arbiter.layer.abstained", attributes)

    async def _run(self, layer: Layer, item: Item, run: LayerContext) -> LayerResult:
        """One layer, inside its span when tracing."""
        if not self._traced:  # no span to open: spare the hot path the context manager
            return await self._call(layer, item, run)
        with self._telemetry.span(f"arbiter.layer.{run.layer}") as span:
            run.span = span
            return await self._call(layer, item, run)

    async def _call(self, layer: Layer, item: Item, run: LayerContext) -> LayerResult:
        """One layer's run, timed; its exception becomes an ``error`` result."""
        started = time.perf_counter()
        try:
            payload = await layer.run(item, run)
        except NotRun as exc:
            return LayerResult(status=exc.status, reason=exc.reason)
        except Exception as exc:
            line = describe_error(exc)
            ms = (time.perf_counter() - started) * 1000.0
            if run.span is not None:
                Telemetry.fail(run.span, line)
            if self._traced:
                self._telemetry.record_layer(run.layer, ms, "error")
            run.errors.append(f"{run.layer}: {line}")
            return LayerResult(status="error", reason=line, latency_ms=ms)
        ms = (time.perf_counter() - started) * 1000.0
        if self._traced:
            self._telemetry.record_layer(run.layer, ms, "ran")
        reason = "; ".join(run.notes) if run.notes else None
        return LayerResult(status="ran", reason=reason, latency_ms=ms, payload=payload)

    def _unreadable(self, prediction: object, why: str) -> OnlineResult:
        layers = {
            layer.name: _NOT_CONFIGURED
            if isinstance(layer, Unconfigured)
            else LayerResult(status="error", reason=why)
            for layer in self._free
        }
        layers.update(self._idle)
        return OnlineResult(
            prediction_id=fallback_id(prediction), label=None, layers=layers, errors=[why]
        )
