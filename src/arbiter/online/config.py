"""Configuration of the online pipeline, as data: what to wire, loadable from JSON.

A config names what to wire (rules, grounding, judges, systems to compare, a vector
store); :func:`arbiter.online.build.build_pipeline` builds only what is named, so an
optional extra (the local embedder's torch) only matters when it is configured.
Embedder and store kinds are those of the registries of :mod:`arbiter.vectors.registry`
(built-ins and plugins). Example::

    {
      "rules": "rules.json",
      "sample_rate": 0.05,
      "anomalous": [{"field": "label", "op": "in", "value": ["critical"]}],
      "budget_s": 25,
      "judges": [{"name": "ollama", "provider": "ollama", "model": "qwen3:8b", "timeout": 20}],
      "consistency": {"embedder": {"kind": "ollama"}, "store": {"kind": "upstash"}},
      "judge_panel": {"judges": ["answer_groundedness"], "panel": ["ollama:qwen3:8b"]}
    }

``judges`` is the chain of classifier judges (a label from the vocabulary);
``judge_panel`` the decomposed LLM judges of agent runs, each with a panel of models
(built by :func:`arbiter.service.online_judges.online_pipeline`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arbiter.contract import StrictModel
from arbiter.datasets.jsonio import read_json_file
from arbiter.online.grounding import GroundingConfig
from arbiter.online.rules import Condition, HeuristicRules, Rule, default_rules, load_rules
from arbiter.online.safety_layer import SafetyLayerConfig
from arbiter.validation import validate_document

__all__ = [
    "ChainJudgeConfig",
    "ConsistencyConfig",
    "DisagreementConfig",
    "EmbedderConfig",
    "JudgePanelConfig",
    "OnlineConfig",
    "PolicyGroundingConfig",
    "StoreConfig",
]


class EmbedderConfig(BaseModel):
    """Which embedder to build; keys beyond these are options of a plugin's embedder."""

    model_config = ConfigDict(extra="allow")

    kind: str
    """``local`` (all-MiniLM-L6-v2, the ``embed`` extra), ``ollama``, ``openai``, or the
    kind of an embedder plugin."""
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


class StoreConfig(BaseModel):
    """Which vector store to build; keys beyond these are options of a plugin's store."""

    model_config = ConfigDict(extra="allow")

    kind: str = "embedded"
    """``embedded`` (on disk, exact), ``upstash`` (``UPSTASH_VECTOR_REST_URL``/``TOKEN``),
    or the kind of a vector-store plugin."""
    path: str | None = None
    """Folder of the embedded store; None keeps it in memory."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds one Upstash call may take."""


class ConsistencyConfig(StrictModel):
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


class PolicyGroundingConfig(StrictModel):
    """Grounding stage 3: re-query a namespace of real policies."""

    embedder: EmbedderConfig
    """How the text is embedded (the same model as the policies' vectors)."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    """Where the policies live."""
    namespace: str = "policies"
    """The policies' namespace."""
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Best similarity under which the text is flagged; default
    ``UPSTASH_VECTOR_POLICIES_THRESHOLD`` (0.70)."""
    timeout_s: float = Field(default=5.0, gt=0)
    """Seconds stage 3 may take before it is given up (stages 1-2 stand)."""


class ChainJudgeConfig(StrictModel):
    """One LLM judge of the chain."""

    name: str
    """Name reported as the outcome's source (unique)."""
    provider: str
    """A provider of the provider registry (ollama, gemini, openai, a plugin's, ...)."""
    model: str
    """The model as the provider knows it."""
    timeout: float = Field(default=20.0, gt=0)
    """Seconds one verdict may take."""
    failure_threshold: int = Field(default=3, ge=1)
    """Consecutive failures that open the judge's circuit."""
    cooldown_s: float = Field(default=30.0, ge=0)
    """Seconds the circuit stays open before a trial call."""


class JudgePanelConfig(StrictModel):
    """The decomposed LLM judges of agent runs, on escalated items (an expensive layer)."""

    judges: list[str] | None = Field(default=None, min_length=1)
    """The judges to ask (``groundedness``, ``scope_faithfulness``, ...); None: all eight.
    Each abstains, without a call, on a run that lacks what it reads."""
    panel: list[str | dict[str, Any]] = Field(min_length=1)
    """The models of every judge's panel: ``"provider:model"`` or a mapping of the
    fields of :class:`arbiter.judges.panel.PanelModel` (``timeout``, ``enabled``, ...)."""
    max_members: int = Field(default=3, ge=1)
    """Most models seated, one per provider family."""
    budget_s: float = Field(default=25.0, gt=0)
    """Bound on one item's judging; raised to the longest call timeout + ``margin_s``."""
    margin_s: float = Field(default=2.0, ge=0)
    """Seconds over the longest call timeout that floor allows."""


class DisagreementConfig(StrictModel):
    """Layer 2: the same input to several systems under test."""

    systems: dict[str, dict[str, Any]] = Field(min_length=1)
    """Name → system description, as ``arbiter.systems.factory.build_system`` takes it."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds each system may take."""


class OnlineConfig(StrictModel):
    """What the online pipeline runs. Every expensive layer is off unless configured."""

    rules: list[Rule] | HeuristicRules | str | None = None
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
    """Share of clean items escalated anyway (to the judges); 0: only flagged and
    anomalous items are. Drawn per item id (:mod:`arbiter.online.sampling`)."""
    seed: int = 0
    """Seed of the per-item draw."""
    budget_s: float = Field(default=25.0, gt=0)
    """Bound on the escalated layers; raised to the longest single call + margin."""
    budget_margin_s: float = Field(default=1.0, ge=0)
    """Margin added to the longest single call to make the budget's floor."""
    disagreement: DisagreementConfig | None = None
    """Layer 2, or None."""
    consistency: ConsistencyConfig | None = None
    """Layer 3, or None."""
    judges: list[ChainJudgeConfig] = Field(default_factory=list)
    """Layer 4: the judge chain, in order; empty switches it off."""
    judge_panel: JudgePanelConfig | None = None
    """The LLM judge panels of agent runs, or None."""
    safety: SafetyLayerConfig | None = None
    """The safety detectors on every item (a free layer), or None."""

    @field_validator("rules", mode="after")
    @classmethod
    def _bare_list_of_rules(cls, value: Any) -> Any:
        # Validated as a list (so an error reads rules[0].threshold), kept as a set.
        return HeuristicRules(rules=value) if isinstance(value, list) else value

    @classmethod
    def load(cls, path: str | Path) -> OnlineConfig:
        """Read a JSON config; a relative ``rules`` path is taken from the file's folder.

        Raises:
            InputError: Unreadable, not JSON, or invalid; the message names file and field.
        """
        location = Path(path)
        document = read_json_file(location, what="online config")
        config = validate_document(cls, document, where=str(location))
        if isinstance(config.rules, str) and not Path(config.rules).is_absolute():
            config.rules = str(location.parent / config.rules)
        return config

    def rule_set(self) -> HeuristicRules:
        """The rules: the given set, the file read, or the bundled defaults.

        Raises:
            InputError: The rule file is unreadable or invalid.
        """
        if isinstance(self.rules, HeuristicRules):
            return self.rules
        if isinstance(self.rules, str):
            return load_rules(self.rules)
        return default_rules()
