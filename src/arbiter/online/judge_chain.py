"""Layer 4 of online scoring: an ordered chain of LLM judges behind circuit breakers.

The chain tries its judges in order (for example a local Ollama model, then a hosted
one, each an ``arbiter.online.llm_judge.LLMJudge``) and takes the first label inside
the vocabulary. Each judge is bounded by its own timeout and guarded by a
``CircuitBreaker``: after repeated failures it is skipped without being called until a
cooldown has passed. When every judge fails or is skipped, the outcome says so
(source ``heuristics_fallback``, no label) instead of raising, and ``JudgeMetrics``
counts how often a real judge answered. ``JudgeLayer`` runs the chain in the pipeline
for escalated items. A judge that asks through the judging layer (``reports_calls``
true and a ``judged`` method, like ``LLMJudge``) bounds its own call and reports what
it cost: each attempt then carries its model-call record, and the outcome their sum.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from arbiter.contract import JudgeAttempt, JudgeOutcome, ModelCalls, Prediction
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item
from arbiter.params import check_number, invalid
from arbiter.stats import wilson_interval
from arbiter.telemetry import Telemetry

__all__ = [
    "FALLBACK_SOURCE",
    "BreakerState",
    "ChainJudge",
    "CircuitBreaker",
    "JudgeChain",
    "JudgeLayer",
    "JudgeMetrics",
]

FALLBACK_SOURCE = "heuristics_fallback"
"""The outcome's source when no judge gave a usable label."""

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Stops calling a failing dependency for a while, then tries it once.

    ``closed``: calls pass; ``failure_threshold`` consecutive failures open it.
    ``open``: calls are refused until ``cooldown_s`` has passed, then it is
    ``half_open``: one trial call passes; its success closes the breaker, its failure
    opens it for another cooldown.

    Args:
        failure_threshold: Consecutive failures that open the breaker (at least 1).
        cooldown_s: Seconds it stays open before a trial call (at least 0).
        clock: Monotonic seconds; tests inject a fake clock.

    Raises:
        ValueError: If an argument is out of range.
    """

    def __init__(
        self,
        failure_threshold: int = 3,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_number(
            failure_threshold, "failure_threshold", "CircuitBreaker", minimum=1, integer=True
        )
        check_number(cooldown_s, "cooldown_s", "CircuitBreaker", minimum=0.0)
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        """``closed``, ``open`` (cooling down) or ``half_open`` (ready for a trial)."""
        if self._opened_at is None:
            return "closed"
        if self._trial_in_flight or self._clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    @property
    def consecutive_failures(self) -> int:
        """Failures since the last success."""
        return self._failures

    def allow(self) -> bool:
        """Whether a call may go ahead now; a granted half-open call is the trial."""
        state = self.state
        if state == "closed":
            return True
        if state == "open" or self._trial_in_flight:
            return False
        self._trial_in_flight = True
        return True

    def record_success(self) -> None:
        """A call succeeded: the breaker closes."""
        self._failures = 0
        self._opened_at = None
        self._trial_in_flight = False

    def record_failure(self) -> None:
        """A call failed: count it, and open the breaker at the threshold or after a trial."""
        self._failures += 1
        if self._trial_in_flight:
            self._trial_in_flight = False
            self._opened_at = self._clock()
        elif self._opened_at is None and self._failures >= self.failure_threshold:
            self._opened_at = self._clock()

    def release(self) -> None:
        """A granted call ended with neither verdict (it was cancelled): free the trial."""
        self._trial_in_flight = False


@runtime_checkable
class ChainJudge(Protocol):
    """Anything that gives a label for a prediction."""

    @property
    def name(self) -> str:
        """Name reported as the outcome's source."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds one verdict may take."""
        ...

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """The label the prediction deserves; raise on failure."""
        ...


class JudgeMetrics(BaseModel):
    """How the chain's outcomes were resolved since it was built."""

    total: int = 0
    """Outcomes produced."""
    by_source: dict[str, int] = Field(default_factory=dict)
    """Outcomes per resolving source: each judge's name and ``heuristics_fallback``."""
    failures_by_judge: dict[str, int] = Field(default_factory=dict)
    """Failed attempts per judge (errors, timeouts, labels outside the vocabulary)."""
    skipped_by_judge: dict[str, int] = Field(default_factory=dict)
    """Attempts skipped per judge because its circuit was open."""
    circuit_by_judge: dict[str, BreakerState] = Field(default_factory=dict)
    """Each judge's breaker state when the snapshot was taken."""
    pct_scored_by_judge: float | None = None
    """Percentage (0-100) of outcomes resolved by a real judge rather than the
    fallback; None before any outcome."""
    pct_scored_by_judge_ci95: tuple[float, float] | None = None
    """Its 95% Wilson interval, in percent; None before any outcome."""


class JudgeChain:
    """Judges tried in order, each behind its own circuit breaker.

    Args:
        judges: The judges, cheapest or most trusted first; names must be unique.
        vocabulary: The allowed labels; a verdict outside it (after case and surrounding
            spaces are forgiven) is a failure that falls through to the next judge.
        breaker_factory: Builds one breaker per judge (inject a fake clock here).

    Raises:
        ValueError: If the vocabulary is empty, judge names repeat or take the
            fallback's name, or a judge's timeout is not positive.

    Examples:
        >>> chain = JudgeChain([], vocabulary=["low", "high"])
        >>> import asyncio
        >>> asyncio.run(chain.judge(Prediction(label="low"))).source
        'heuristics_fallback'
    """

    def __init__(
        self,
        judges: Sequence[ChainJudge],
        *,
        vocabulary: Sequence[str],
        breaker_factory: Callable[[], CircuitBreaker] = CircuitBreaker,
    ) -> None:
        self.vocabulary = check_vocabulary(vocabulary, "JudgeChain")
        names = [judge.name for judge in judges]
        if len(set(names)) != len(names) or FALLBACK_SOURCE in names:
            rule = f"judges with unique names other than {FALLBACK_SOURCE!r}"
            raise invalid("judges", "JudgeChain", rule, names)
        for judge in judges:
            check_timeout(judge.timeout, "JudgeChain")
        self.judges: tuple[ChainJudge, ...] = tuple(judges)
        self._breakers = {judge.name: breaker_factory() for judge in self.judges}
        self._canonical = {label.strip().casefold(): label for label in self.vocabulary}
        self._by_source: dict[str, int] = {}
        self._failures: dict[str, int] = {}
        self._skipped: dict[str, int] = {}

    @property
    def longest_timeout(self) -> float:
        """The longest single judge call, in seconds (0 without judges); budget from it."""
        return max((judge.timeout for judge in self.judges), default=0.0)

    def breaker(self, name: str) -> CircuitBreaker:
        """The circuit breaker of the judge called ``name``."""
        return self._breakers[name]

    async def judge(self, prediction: Prediction, *, context: str | None = None) -> JudgeOutcome:
        """The first usable label of the chain, or the fallback outcome.

        Args:
            prediction: The prediction under review.
            context: Extra context for the judges.

        Returns:
            The outcome: its source, the label (None for the fallback), whether it
            agrees with the prediction's label, and every attempt in order. Never
            raises for a judge's failure; only a cancellation of the caller's own task
            propagates (the judge being called is then neither blamed nor credited).
        """
        attempts: list[JudgeAttempt] = []
        for judge in self.judges:
            breaker = self._breakers[judge.name]
            if not breaker.allow():
                attempts.append(JudgeAttempt(source=judge.name, outcome="skipped_open_circuit"))
                _count(self._skipped, judge.name)
                continue
            started = time.perf_counter()
            try:
                label, error, calls = await self._ask(judge, prediction, context)
            except BaseException:
                breaker.release()
                raise
            latency_ms = (time.perf_counter() - started) * 1000.0
            if label is None:
                breaker.record_failure()
                _count(self._failures, judge.name)
                attempts.append(
                    JudgeAttempt(
                        source=judge.name,
                        outcome="failed",
                        error=error,
                        latency_ms=latency_ms,
                        model=calls,
                    )
                )
                continue
            breaker.record_success()
            attempts.append(
                JudgeAttempt(source=judge.name, outcome="ok", latency_ms=latency_ms, model=calls)
            )
            return self._resolved(
                JudgeOutcome(
                    label=label,
                    source=judge.name,
                    agrees=label == self._canonical.get(_key(prediction.label), prediction.label),
                    attempts=attempts,
                    model=_total(attempts),
                )
            )
        return self._resolved(
            JudgeOutcome(
                label=None, source=FALLBACK_SOURCE, attempts=attempts, model=_total(attempts)
            )
        )

    def metrics(self) -> JudgeMetrics:
        """A snapshot of the counts so far (later outcomes do not change it)."""
        total = sum(self._by_source.values())
        scored = total - self._by_source.get(FALLBACK_SOURCE, 0)
        low, high = wilson_interval(scored, total)
        return JudgeMetrics(
            total=total,
            by_source=dict(self._by_source),
            failures_by_judge=dict(self._failures),
            skipped_by_judge=dict(self._skipped),
            circuit_by_judge={name: breaker.state for name, breaker in self._breakers.items()},
            pct_scored_by_judge=100.0 * scored / total if total else None,
            pct_scored_by_judge_ci95=(100.0 * low, 100.0 * high) if total else None,
        )

    async def _ask(
        self, judge: ChainJudge, prediction: Prediction, context: str | None
    ) -> tuple[str | None, str | None, ModelCalls | None]:
        """The judge's label in the vocabulary's spelling, or why there is none, and what
        the call cost (None from a judge that does not report it)."""
        calls: ModelCalls | None = None
        scope: asyncio.Timeout | None = None
        reporting = getattr(judge, "judged", None)
        try:
            if getattr(judge, "reports_calls", False) and callable(reporting):
                # It asks through the judging layer, which bounds the call by the judge's
                # timeout and records it even when it times out.
                judged = await reporting(prediction, context)
                calls = judged.calls
                if judged.answer is None:
                    if judged.status == "timeout":
                        return None, _no_verdict(judge), calls
                    return None, judged.error or judged.status, calls
                answer: object = getattr(judged.answer, "label", judged.answer)
            else:
                async with asyncio.timeout(judge.timeout) as scope:
                    answer = await judge.verdict(prediction, context)
        except TimeoutError as exc:
            if scope is not None and scope.expired():
                return None, _no_verdict(judge), calls
            return None, _describe(exc), calls
        except Exception as exc:
            return None, _describe(exc), calls
        label = self._canonical.get(_key(answer)) if isinstance(answer, str) else None
        if label is None:
            allowed = ", ".join(self.vocabulary)
            shown = repr(answer)[:80]
            return None, f"OutOfVocabulary: verdict {shown} is not one of {allowed}", calls
        return label, None, calls

    def _resolved(self, outcome: JudgeOutcome) -> JudgeOutcome:
        _count(self._by_source, outcome.source)
        return outcome


class JudgeLayer:
    """The judge chain as an expensive layer.

    Each failed attempt is an error line (``judge: <judge>: ...``) and, when tracing, an
    ``arbiter.judge.attempt_failed`` event on the layer's span; the resolving source is
    counted in the ``arbiter.judge.outcome`` metric.

    Args:
        chain: The judges in order.
    """

    name = "judge"
    expensive = True

    def __init__(self, chain: JudgeChain) -> None:
        self.chain = chain

    @property
    def budget_floor(self) -> tuple[float, str] | None:
        """The longest judge timeout (None without judges): the budget must outlast it."""
        longest = self.chain.longest_timeout
        return (longest, "the longest judge timeout") if longest > 0 else None

    async def run(self, item: Item, context: LayerContext) -> JudgeOutcome:
        """The chain's outcome for the item."""
        if item.typed is None:
            raise NotRun("the prediction is unreadable", status="error")
        outcome = await self.chain.judge(item.typed, context=context.extra_context)
        for attempt in outcome.attempts:
            if attempt.outcome == "failed":
                context.error(f"{attempt.source}: {attempt.error}")
            if attempt.outcome != "ok" and context.span is not None:
                attributes = {"judge": attempt.source, "outcome": attempt.outcome}
                Telemetry.event(context.span, "arbiter.judge.attempt_failed", attributes)
        context.telemetry.record_judge(outcome.source)
        return outcome


def _no_verdict(judge: ChainJudge) -> str:
    return f"TimeoutError: no verdict within {judge.timeout:g}s"


def _total(attempts: Sequence[JudgeAttempt]) -> ModelCalls:
    total = ModelCalls()
    for attempt in attempts:
        if attempt.model is not None:
            total = total + attempt.model
    return total


def _key(label: str) -> str:
    return label.strip().casefold()


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _describe(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return line if len(line) <= 300 else line[:299] + "…"


def check_vocabulary(vocabulary: Sequence[str], owner: str) -> tuple[str, ...]:
    """The labels a judge may answer: a non-empty sequence of distinct, non-blank labels.

    Raises:
        InvalidParameter: It is not.
    """
    labels = tuple(vocabulary)
    keys = {_key(label) for label in labels}
    if isinstance(vocabulary, str) or not labels or "" in keys or len(keys) != len(labels):
        rule = "a non-empty sequence of distinct, non-blank labels"
        raise invalid("vocabulary", owner, rule, vocabulary)
    return labels


def check_timeout(timeout: float, owner: str) -> float:
    """A judge's timeout: a positive, finite number of seconds.

    Raises:
        InvalidParameter: It is not.
    """
    return float(check_number(timeout, "timeout", owner, minimum=0.0, open_min=True))
