"""Configuration of the online pipeline, loadable from JSON, and ``build_pipeline``.

A config names what to wire (rules, grounding, judges, systems to compare, a vector
store); ``build_pipeline`` builds only what is named, importing each dependency's
module inside the function, so an optional extra (the local embedder's torch) only
matters when it is configured. Example::

    {
      "rules": "rules.json",
      "sample_rate": 0.05,
      "anomalous": [{"field": "label", "op": "in", "value": ["critical"]}],
      "budget_s": 25,
      "judges": [{"name": "ollama", "provider": "ollama", "model": "qwen3:8b", "timeout": 20}],
      "consistency": {"embedder": {"kind": "ollama"}, "store": {"kind": "upstash"}}
    }
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arbiter.config import Settings
from arbiter.contract import Prediction
from arbiter.errors import InputError
from arbiter.online.grounding import GroundingConfig
from arbiter.online.rules import Condition, RuleSet, default_rules, load_rules
from arbiter.telemetry import Telemetry
from arbiter.vectors.base import Embedder, VectorStore

if TYPE_CHECKING:
    from arbiter.online.judge_chain import Judge, JudgeChain
    from arbiter.online.pipeline import OnlinePipeline

__all__ = [
    "ConsistencyCheck",
    "ConsistencyConfig",
    "DisagreementConfig",
    "EmbedderConfig",
    "JudgeConfig",
    "OnlineConfig",
    "PolicyCheck",
    "PolicyGroundingConfig",
    "StoreConfig",
    "build_pipeline",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbedderConfig(_Strict):
    """Which embedder to build."""

    kind: Literal["local", "ollama", "openai"]
    """``local`` (all-MiniLM-L6-v2, the ``embed`` extra), ``ollama`` or ``openai``."""
    model: str | None = None
    """Model name; default ``OLLAMA_EMBEDDING_MODEL`` for ollama, required for openai."""
    prefix: str | None = None
    """Ollama task prefix; default ``ARBITER_OLLAMA_EMBEDDING_PREFIX``."""
    base_url: str | None = None
    """API root; default ``OLLAMA_URL`` or ``OPENAI_BASE_URL``."""
    dimension: int | None = Field(default=None, ge=1)
    """Declared dimension of a remote model, if known."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds one call may take."""


class StoreConfig(_Strict):
    """Which vector store to build."""

    kind: Literal["embedded", "upstash"] = "embedded"
    """``embedded`` (on disk, exact) or ``upstash`` (``UPSTASH_VECTOR_REST_URL``/``TOKEN``)."""
    path: str | None = None
    """Folder of the embedded store; None keeps it in memory."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds one Upstash call may take."""


class ConsistencyConfig(_Strict):
    """Layer 3: nearest neighbours in a namespace of past items."""

    embedder: EmbedderConfig
    """How items are embedded."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    """Where past items live."""
    namespace: str = "transactions"
    """Namespace of comparable items."""
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Similarity a neighbour needs to count; default ``UPSTASH_VECTOR_THRESHOLD`` (0.90)."""
    top_k: int = Field(default=5, ge=1)
    """Neighbours to fetch."""
    upsert: bool = False
    """Store each scored item for later ones."""
    text_field: str | None = None
    """Embed this ``raw_output`` text field; None embeds ``raw_output`` as canonical JSON."""


class PolicyGroundingConfig(_Strict):
    """Grounding stage 3: re-query a namespace of real policies."""

    embedder: EmbedderConfig
    """How the text is embedded (the same model as the policies' vectors)."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    """Where the policies live."""
    namespace: str = "policies"
    """The policies' namespace."""
    threshold: float = Field(default=0.70, ge=-1.0, le=1.0)
    """Best similarity under which the text is flagged (``UPSTASH_VECTOR_POLICIES_THRESHOLD``)."""
    timeout_s: float = Field(default=5.0, gt=0)
    """Seconds stage 3 may take before it is given up (stages 1-2 stand)."""


class JudgeConfig(_Strict):
    """One LLM judge of the chain."""

    name: str
    """Name reported as the outcome's source (unique)."""
    provider: str
    """A provider name of ``arbiter.providers.registry`` (ollama, gemini, openai, ...)."""
    model: str
    """The model as the provider knows it."""
    timeout: float = Field(default=20.0, gt=0)
    """Seconds one verdict may take."""
    failure_threshold: int = Field(default=3, ge=1)
    """Consecutive failures that open the judge's circuit."""
    cooldown_s: float = Field(default=30.0, ge=0)
    """Seconds the circuit stays open before a trial call."""


class DisagreementConfig(_Strict):
    """Layer 2: the same input to several systems under test."""

    systems: dict[str, dict[str, Any]] = Field(min_length=1)
    """Name → system description, as ``arbiter.systems.factory.build_system`` takes it."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds each system may take."""


class OnlineConfig(_Strict):
    """What the online pipeline runs. Every expensive layer is off unless configured."""

    rules: RuleSet | str | None = None
    """A rule set (or a bare list of rules), the path of a rule file, or None for the
    bundled Synapse-style rules."""
    vocabulary: list[str] | None = None
    """Labels the judges may answer; default: the rules' ``label_in`` vocabulary."""
    grounding: GroundingConfig | None = Field(default_factory=GroundingConfig)
    """Grounding stages 1-2; None switches the layer off."""
    policy_grounding: PolicyGroundingConfig | None = None
    """Grounding stage 3 (needs ``grounding``)."""
    anomalous: list[Condition] = Field(default_factory=list)
    """An item matching any of these is escalated as anomalous (e.g. label in a set)."""
    sample_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of clean items escalated anyway, drawn from a seeded RNG."""
    seed: int = 0
    """Seed of the sampling RNG."""
    budget_s: float = Field(default=25.0, gt=0)
    """Bound on the escalated layers; raised to the longest single call + margin."""
    budget_margin_s: float = Field(default=1.0, ge=0)
    """Margin added to the longest single call to make the budget's floor."""
    disagreement: DisagreementConfig | None = None
    """Layer 2, or None."""
    consistency: ConsistencyConfig | None = None
    """Layer 3, or None."""
    judges: list[JudgeConfig] = Field(default_factory=list)
    """Layer 4: the judge chain, in order; empty switches it off."""

    @field_validator("rules", mode="before")
    @classmethod
    def _bare_list_of_rules(cls, value: Any) -> Any:
        return {"rules": value} if isinstance(value, list) else value

    @classmethod
    def load(cls, path: str | Path) -> OnlineConfig:
        """Read a JSON config; a relative ``rules`` path is taken from the file's folder.

        Raises:
            InputError: Unreadable, not JSON, or invalid; the message names file and field.
        """
        location = Path(path)
        try:
            document = json.loads(location.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"{location}: cannot read the config ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{location}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        try:
            config = cls.model_validate(document)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(root)"
            raise InputError(f"{location}: {where}: {first['msg']}") from None
        if isinstance(config.rules, str) and not Path(config.rules).is_absolute():
            config.rules = str(location.parent / config.rules)
        return config

    def rule_set(self) -> RuleSet:
        """The rules: the given set, the file read, or the bundled defaults.

        Raises:
            InputError: The rule file is unreadable or invalid.
        """
        if isinstance(self.rules, RuleSet):
            return self.rules
        if isinstance(self.rules, str):
            return load_rules(self.rules)
        return default_rules()


@dataclass(frozen=True)
class PolicyCheck:
    """Grounding stage 3 as the pipeline takes it: built objects, not descriptions."""

    embedder: Embedder
    store: VectorStore
    namespace: str = "policies"
    threshold: float = 0.70
    timeout_s: float = 5.0


@dataclass(frozen=True)
class ConsistencyCheck:
    """Layer 3 as the pipeline takes it: built objects, not descriptions."""

    embedder: Embedder
    store: VectorStore
    namespace: str = "transactions"
    threshold: float = 0.90
    top_k: int = 5
    upsert: bool = False
    text_field: str | None = None


def build_pipeline(
    config: OnlineConfig | None = None,
    settings: Settings | None = None,
    *,
    telemetry: Telemetry | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> OnlinePipeline:
    """Build the pipeline a config describes; only the configured layers are built.

    Args:
        config: What to run; None: heuristics (bundled rules) and grounding only.
        settings: Keys and URLs of providers, embedders and Upstash; built from the
            environment only when a configured layer needs it.
        telemetry: Where spans and metrics go; disabled by default.
        transport: An httpx transport for every provider, embedder and Upstash call
            (tests); systems under test take theirs from their description.

    Returns:
        A ready pipeline.

    Raises:
        InputError: A rule file, provider name, system description or embedder option
            is invalid, or the judges have no vocabulary.
    """
    from arbiter.online.pipeline import OnlinePipeline

    config = config or OnlineConfig()
    telemetry = telemetry or Telemetry.disabled()
    rules = config.rule_set()
    lazy = _Lazy(settings, transport)

    policy: PolicyCheck | None = None
    if config.policy_grounding is not None:
        stage3 = config.policy_grounding
        policy = PolicyCheck(
            embedder=lazy.embedder(stage3.embedder),
            store=lazy.store(stage3.store),
            namespace=stage3.namespace,
            threshold=stage3.threshold,
            timeout_s=stage3.timeout_s,
        )
    consistency: ConsistencyCheck | None = None
    if config.consistency is not None:
        layer = config.consistency
        threshold = layer.threshold
        if threshold is None:
            threshold = lazy.settings.upstash_vector_threshold
        consistency = ConsistencyCheck(
            embedder=lazy.embedder(layer.embedder),
            store=lazy.store(layer.store),
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
    return OnlinePipeline(
        rules=rules,
        grounding=config.grounding,
        policy=policy,
        systems=systems,
        disagreement_timeout=config.disagreement.timeout if config.disagreement else 10.0,
        consistency=consistency,
        judge_chain=_judge_chain(config, rules, lazy, telemetry),
        anomalous=config.anomalous,
        sample_rate=config.sample_rate,
        seed=config.seed,
        budget_s=config.budget_s,
        budget_margin_s=config.budget_margin_s,
        telemetry=telemetry,
    )


class _Lazy:
    """Settings read at first need; embedders and stores shared between layers."""

    def __init__(self, settings: Settings | None, transport: httpx.AsyncBaseTransport | None):
        self._settings = settings
        self.transport = transport
        self._embedders: dict[str, Embedder] = {}
        self._stores: dict[str, VectorStore] = {}

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings()
        return self._settings

    def embedder(self, config: EmbedderConfig) -> Embedder:
        key = config.model_dump_json()
        if key not in self._embedders:
            self._embedders[key] = self._build_embedder(config)
        return self._embedders[key]

    def _build_embedder(self, config: EmbedderConfig) -> Embedder:
        from arbiter.vectors import embedders

        if config.kind == "local":
            return embedders.LocalMiniLMEmbedder()
        settings = self.settings
        if config.kind == "ollama":
            return embedders.OllamaEmbedder(
                config.base_url or settings.ollama_url,
                config.model or settings.ollama_embedding_model,
                settings.ollama_embedding_prefix if config.prefix is None else config.prefix,
                dimension=config.dimension,
                timeout=config.timeout,
                transport=self.transport,
            )
        if not config.model:
            raise InputError("consistency.embedder: the openai embedder needs a 'model'")
        key = settings.openai_api_key
        return embedders.OpenAIEmbedder(
            config.base_url or settings.openai_base_url,
            key.get_secret_value() if key is not None else None,
            config.model,
            dimension=config.dimension,
            timeout=config.timeout,
            transport=self.transport,
        )

    def store(self, config: StoreConfig) -> VectorStore:
        # One store object per folder: the embedded store wants one owner per folder.
        key = config.model_dump_json(exclude={"timeout"})
        if key not in self._stores:
            self._stores[key] = self._build_store(config)
        return self._stores[key]

    def _build_store(self, config: StoreConfig) -> VectorStore:
        from arbiter.vectors import stores

        if config.kind == "embedded":
            return stores.EmbeddedVectorStore(Path(config.path) if config.path else None)
        settings = self.settings
        token = settings.upstash_vector_rest_token
        if not settings.upstash_vector_rest_url or token is None:
            raise InputError(
                "the upstash store needs UPSTASH_VECTOR_REST_URL and UPSTASH_VECTOR_REST_TOKEN"
            )
        return stores.UpstashVectorStore(
            settings.upstash_vector_rest_url,
            token.get_secret_value(),
            timeout=config.timeout,
            transport=self.transport,
        )


def _judge_chain(
    config: OnlineConfig, rules: RuleSet, lazy: _Lazy, telemetry: Telemetry
) -> JudgeChain | None:
    if not config.judges:
        return None
    from arbiter.online.judge_chain import CircuitBreaker, JudgeChain
    from arbiter.online.llm_judge import LLMJudge
    from arbiter.providers.registry import make_provider

    vocabulary = config.vocabulary or rules.vocabulary
    if not vocabulary:
        raise InputError("judges: no vocabulary; set 'vocabulary' or add a label_in rule")
    judges: list[Judge] = []
    for judge in config.judges:
        provider = make_provider(judge.provider, lazy.settings, transport=lazy.transport)
        llm = LLMJudge(
            judge.name, provider, judge.model, vocabulary=vocabulary, timeout=judge.timeout
        )
        judges.append(TracedJudge(llm, telemetry) if telemetry.enabled else llm)
    # JudgeChain asks the factory once per judge, in order: hand each its own settings.
    breakers: Iterator[CircuitBreaker] = iter(
        [CircuitBreaker(j.failure_threshold, j.cooldown_s) for j in config.judges]
    )
    try:
        return JudgeChain(judges, vocabulary=vocabulary, breaker_factory=lambda: next(breakers))
    except ValueError as exc:
        raise InputError(f"judges: {exc}") from None


class TracedJudge:
    """A judge whose every verdict is a child span ``arbiter.judge.<name>``.

    Args:
        judge: The judge to wrap.
        telemetry: Where the spans go.
    """

    def __init__(self, judge: Judge, telemetry: Telemetry) -> None:
        self._judge = judge
        self._telemetry = telemetry

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return self._judge.name

    @property
    def timeout(self) -> float:
        """The wrapped judge's timeout."""
        return self._judge.timeout

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        """The wrapped judge's verdict, inside a span (an exception is recorded on it)."""
        with self._telemetry.span(f"arbiter.judge.{self.name}", {"judge": self.name}):
            return await self._judge.verdict(prediction, context)
