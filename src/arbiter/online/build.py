"""``build_pipeline``: an :class:`OnlinePipeline` from an :class:`OnlineConfig`.

Only what the config names is built, each backend from its registry (providers,
embedders, vector stores: built-ins and plugins), so an optional extra only matters when
it is configured. Embedders and stores are shared between layers that name the same one;
every provider, embedder and store calls through its own pooled HTTP client with the
settings' retries and concurrency limit, and ``OnlinePipeline.aclose`` closes them.

Given a gate (``online score --rate-limit``: a :class:`~arbiter.engines.rate.LocalGate`
here, a Ray worker's :class:`~arbiter.engines.ray_limits.ClusterGate`), every judge
call of the chain holds its provider's limits (:class:`GatedJudge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arbiter.config import Settings
from arbiter.contract import OnlineResult, Prediction
from arbiter.errors import InputError
from arbiter.online.config import EmbedderConfig, OnlineConfig, StoreConfig
from arbiter.online.consistency import ConsistencyCheck
from arbiter.online.grounding import PolicyCheck
from arbiter.online.judge_chain import ChainJudge, CircuitBreaker, JudgeChain
from arbiter.online.layer import Layer
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import HeuristicRules
from arbiter.online.safety_layer import SafetyLayer
from arbiter.telemetry import Telemetry

if TYPE_CHECKING:
    import httpx

    from arbiter.engines.base import CallGate
    from arbiter.judging import Judged, JudgingContext
    from arbiter.online.llm_judge import JudgeVerdict
    from arbiter.providers.registry import ProviderRegistry
    from arbiter.vectors.base import Embedder, VectorStore
    from arbiter.vectors.registry import EmbedderRegistry, VectorStoreRegistry

__all__ = [
    "GatedJudge",
    "Registries",
    "TracedJudge",
    "build_pipeline",
    "evaluate_item",
    "evaluate_item_sync",
]


class Registries:
    """The registries a pipeline's backends are built from; the defaults unless given.

    Args:
        providers: Provider factories (default: built-ins and plugins).
        embedders: Embedder factories.
        stores: Vector-store factories.
    """

    def __init__(
        self,
        *,
        providers: ProviderRegistry | None = None,
        embedders: EmbedderRegistry | None = None,
        stores: VectorStoreRegistry | None = None,
    ) -> None:
        self._providers, self._embedders, self._stores = providers, embedders, stores

    @property
    def providers(self) -> ProviderRegistry:
        """The provider registry."""
        if self._providers is None:
            from arbiter.providers.registry import ProviderRegistry

            self._providers = ProviderRegistry.default()
        return self._providers

    @property
    def embedders(self) -> EmbedderRegistry:
        """The embedder registry."""
        if self._embedders is None:
            from arbiter.vectors.registry import EmbedderRegistry

            self._embedders = EmbedderRegistry.default()
        return self._embedders

    @property
    def stores(self) -> VectorStoreRegistry:
        """The vector-store registry."""
        if self._stores is None:
            from arbiter.vectors.registry import VectorStoreRegistry

            self._stores = VectorStoreRegistry.default()
        return self._stores


def build_pipeline(
    config: OnlineConfig | None = None,
    settings: Settings | None = None,
    *,
    telemetry: Telemetry | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    registries: Registries | None = None,
    layers: Sequence[Layer] = (),
    closers: Sequence[object] = (),
    gate: CallGate | None = None,
) -> OnlinePipeline:
    """Build the pipeline a config describes; only the configured layers are built.

    Args:
        config: What to run; None: heuristics (bundled rules) and grounding only.
        settings: Keys and URLs of providers, embedders and Upstash; built from the
            environment only when a configured layer needs it.
        telemetry: Where spans and metrics go; disabled by default.
        transport: An httpx transport for every provider, embedder and Upstash call
            (tests); systems under test take theirs from their description.
        registries: Where providers, embedders and stores are looked up by name.
        layers: Layers of one's own, after the built-in ones (see ``OnlinePipeline``).
        closers: More backends the pipeline closes with its own (those of ``layers``).
        gate: What every judge call of the chain passes, by provider name (the shared
            limits of ``--rate-limit``); None: calls pass at once. The layers of
            ``layers`` gate their own calls.

    Returns:
        A ready pipeline.

    Raises:
        InputError: A rule file, provider name, system description or embedder option
            is invalid, the judges have no vocabulary, or ``judge_panel`` is set and no
            layer of ``layers`` is the judge panel (build those pipelines with
            :func:`arbiter.service.online_judges.online_pipeline`).
    """
    config = config or OnlineConfig()
    if config.judge_panel is not None and not any(x.name == "judge_panel" for x in layers):
        raise InputError(
            "judge_panel: the LLM judge panels are built by the service layer; use "
            "arbiter.service.online_judges.online_pipeline (arbiter online score does)"
        )
    telemetry = telemetry or Telemetry.disabled()
    rules = config.rule_set()
    builder = _Builder(settings, transport, registries or Registries())

    policy: PolicyCheck | None = None
    if config.policy_grounding is not None:
        stage3 = config.policy_grounding
        threshold = stage3.threshold
        if threshold is None:
            threshold = builder.settings.upstash_vector_policies_threshold
        policy = PolicyCheck(
            embedder=builder.embedder(stage3.embedder),
            store=builder.store(stage3.store),
            namespace=stage3.namespace,
            threshold=threshold,
            timeout_s=stage3.timeout_s,
        )
    consistency: ConsistencyCheck | None = None
    if config.consistency is not None:
        layer = config.consistency
        threshold = layer.threshold
        if threshold is None:
            threshold = builder.settings.upstash_vector_threshold
        consistency = ConsistencyCheck(
            embedder=builder.embedder(layer.embedder),
            store=builder.store(layer.store),
            namespace=layer.namespace,
            threshold=threshold,
            top_k=layer.top_k,
            upsert=layer.upsert,
            text_field=layer.text_field,
        )
    systems = None
    if config.disagreement is not None:
        from arbiter.systems.factory import build_system

        systems = {
            name: build_system(description)
            for name, description in config.disagreement.systems.items()
        }
    if config.safety is not None:
        layers = [SafetyLayer(config.safety), *layers]
    return OnlinePipeline(
        rules=rules,
        grounding=config.grounding,
        policy=policy,
        systems=systems,
        disagreement_timeout=config.disagreement.timeout if config.disagreement else 10.0,
        consistency=consistency,
        judge_chain=_judge_chain(config, rules, builder, telemetry, gate),
        layers=layers,
        anomalous=config.anomalous,
        sample_rate=config.sample_rate,
        seed=config.seed,
        budget_s=config.budget_s,
        budget_margin_s=config.budget_margin_s,
        telemetry=telemetry,
        closers=[*builder.closers, *closers],
    )


class _Builder:
    """Settings read at first need; embedders and stores shared between layers."""

    def __init__(
        self,
        settings: Settings | None,
        transport: httpx.AsyncBaseTransport | None,
        registries: Registries,
    ) -> None:
        self._settings = settings
        self.transport = transport
        self.registries = registries
        self._embedders: dict[str, Embedder] = {}
        self._stores: dict[str, VectorStore] = {}
        self.closers: list[Any] = []

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings()
        return self._settings

    def _client(self, name: str) -> Any:
        from arbiter.providers.registry import provider_client

        return provider_client(name, self.settings, transport=self.transport)

    def embedder(self, config: EmbedderConfig) -> Embedder:
        key = config.model_dump_json()
        if key not in self._embedders:
            options = config.model_dump()
            built = self.registries.embedders.build(
                options, self.settings, self._client(f"embedder:{config.kind}")
            )
            self._embedders[key] = built
            self.closers.append(built)
        return self._embedders[key]

    def store(self, config: StoreConfig) -> VectorStore:
        # One store object per folder: the embedded store wants one owner per folder.
        key = config.model_dump_json(exclude={"timeout"})
        if key not in self._stores:
            options = config.model_dump()
            built = self.registries.stores.build(
                options, self.settings, self._client(f"store:{config.kind}")
            )
            self._stores[key] = built
            self.closers.append(built)
        return self._stores[key]

    def judging(self) -> JudgingContext:
        """The judge chain's context: its providers pooled, not cached (each production
        item is judged as it comes), closed with the pipeline."""
        from arbiter.judging import JudgingContext

        context = JudgingContext(
            settings=self.settings,
            providers=self.registries.providers,
            use_cache=False,
            transport=self.transport,
        )
        self.closers.append(context)
        return context


def _judge_chain(
    config: OnlineConfig,
    rules: HeuristicRules,
    builder: _Builder,
    telemetry: Telemetry,
    gate: CallGate | None = None,
) -> JudgeChain | None:
    if not config.judges:
        return None
    from arbiter.online.llm_judge import LLMJudge

    vocabulary = config.vocabulary or rules.vocabulary
    if not vocabulary:
        raise InputError("judges: no vocabulary; set 'vocabulary' or add a label_in rule")
    context = builder.judging()
    judges: list[ChainJudge] = []
    for judge in config.judges:
        context.registry().factory(judge.provider)  # an unknown name fails here, by name
        llm = LLMJudge(
            judge.name,
            judge.provider,
            judge.model,
            vocabulary=vocabulary,
            timeout=judge.timeout,
            context=context,
        )
        traced: ChainJudge = TracedJudge(llm, telemetry) if telemetry.enabled else llm
        judges.append(traced if gate is None else GatedJudge(traced, judge.provider, gate))
    # JudgeChain asks the factory once per judge, in order: hand each its own settings.
    breakers: Iterator[CircuitBreaker] = iter(
        [CircuitBreaker(j.failure_threshold, j.cooldown_s) for j in config.judges]
    )
    try:
        return JudgeChain(judges, vocabulary=vocabulary, breaker_factory=lambda: next(breakers))
    except ValueError as exc:
        raise InputError(f"judges: {exc}") from None


class _WrappedJudge:
    """What a wrapper of a chain judge passes through unchanged: its name, its timeout
    and whether it reports its calls."""

    _judge: ChainJudge

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return self._judge.name

    @property
    def timeout(self) -> float:
        """The wrapped judge's timeout (of its call: a gate's wait is not in it)."""
        return self._judge.timeout

    @property
    def reports_calls(self) -> bool:
        """Whether the wrapped judge asks through the judging layer (see ``judged``)."""
        return bool(getattr(self._judge, "reports_calls", False))


class GatedJudge(_WrappedJudge):
    """A judge of the chain whose every call first holds ``gate(provider)``: a rate token
    and, with a provider's concurrency, one of its slots.

    The wait comes before the judge's own timeout starts, so neither that timeout nor
    the judge's circuit breaker counts it: a call held back by the limit is not the
    provider's failure. What bounds the wait is the item's budget (an item cut off by
    it is counted as cut off, the judge neither blamed nor credited).

    Args:
        judge: The judge to wrap.
        provider: The name of the provider it calls (the limit's name).
        gate: The shared limits.
    """

    def __init__(self, judge: ChainJudge, provider: str, gate: CallGate) -> None:
        self._judge = judge
        self.provider = provider
        self._gate = gate

    async def judged(self, prediction: Prediction, context: str | None) -> Judged[JudgeVerdict]:
        """The wrapped judge's answer and call record, once the gate lets the call through."""
        reporting = getattr(self._judge, "judged", None)
        if not self.reports_calls or not callable(reporting):
            raise TypeError(f"judge {self.name!r} does not report its calls")
        async with self._gate(self.provider):
            judged: Judged[JudgeVerdict] = await reporting(prediction, context)
            return judged

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """The wrapped judge's verdict, once the gate lets the call through (a judge that
        does not report its calls is bounded by the chain, the wait included)."""
        async with self._gate(self.provider):
            return await self._judge.verdict(prediction, context)


class TracedJudge(_WrappedJudge):
    """A judge whose every verdict is a child span ``arbiter.judge.<name>``.

    Args:
        judge: The judge to wrap.
        telemetry: Where the spans go.
    """

    def __init__(self, judge: ChainJudge, telemetry: Telemetry) -> None:
        self._judge = judge
        self._telemetry = telemetry

    async def judged(self, prediction: Prediction, context: str | None) -> Judged[JudgeVerdict]:
        """The wrapped judge's answer and call record, inside a span (a failed call is
        counted by its error's type)."""
        reporting = getattr(self._judge, "judged", None)
        if not self.reports_calls or not callable(reporting):
            raise TypeError(f"judge {self.name!r} does not report its calls")
        with self._telemetry.span(f"arbiter.judge.{self.name}", {"judge": self.name}) as span:
            judged: Judged[JudgeVerdict] = await reporting(prediction, context)
            if judged.answer is None:
                # Recorded as a raised exception would be: an event, an error status.
                line = judged.error or judged.status
                kind, _, message = line.partition(": ")
                attributes = {"exception.type": kind, "exception.message": message}
                Telemetry.event(span, "exception", attributes)
                Telemetry.fail(span, line)
                self._telemetry.record_judge_error(self.name, kind)
            return judged

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """The wrapped judge's verdict, inside a span (an exception is recorded on it, as
        an ``exception`` event with its type and message, and counted by type)."""
        with self._telemetry.span(f"arbiter.judge.{self.name}", {"judge": self.name}):
            try:
                return await self._judge.verdict(prediction, context)
            except Exception as exc:
                self._telemetry.record_judge_error(self.name, type(exc).__name__)
                raise


async def evaluate_item(
    prediction: Prediction | Mapping[str, Any],
    *,
    context: str | None = None,
    pipeline: OnlinePipeline | None = None,
    config: OnlineConfig | None = None,
    settings: Settings | None = None,
    input: Mapping[str, Any] | None = None,
    telemetry: Telemetry | None = None,
) -> OnlineResult:
    """Score one prediction online; never raises for the prediction or a layer.

    A service should build its pipeline once (``build_pipeline``) and pass it: without
    one, a pipeline is built from ``config`` (default: bundled rules and grounding
    only) for this call alone, sampling RNG included, and closed after it.

    Args:
        prediction: A ``Prediction`` or a raw dict of one.
        context: Extra context for the judge.
        pipeline: The pipeline to use.
        config: What to build when no pipeline is given.
        settings: Keys and URLs for building; read from the environment when needed.
        input: The input to replay to the disagreement systems.
        telemetry: Telemetry for a pipeline built here.

    Returns:
        The result.

    Raises:
        InputError: Only while building a pipeline from an invalid ``config``.

    Examples:
        >>> import asyncio
        >>> result = asyncio.run(evaluate_item({"id": "1", "label": "nominal",
        ...     "confidence": 0.9, "raw_output": {"status": "nominal", "anomaly_score": 0.93}}))
        >>> result.escalated, result.escalation_reasons
        (True, ['heuristics: silent_contradiction'])
    """
    if pipeline is not None:
        return await pipeline.evaluate(prediction, context=context, input=input)
    built = build_pipeline(config, settings, telemetry=telemetry)
    try:
        return await built.evaluate(prediction, context=context, input=input)
    finally:
        await built.aclose()


def evaluate_item_sync(prediction: Prediction | Mapping[str, Any], **options: Any) -> OnlineResult:
    """Sync wrapper of :func:`evaluate_item` (not from inside a running event loop)."""
    return asyncio.run(evaluate_item(prediction, **options))
