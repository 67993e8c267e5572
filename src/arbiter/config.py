"""One settings object, read from ``ARBITER_*`` environment variables and ``.env``.

A real environment variable always wins over ``.env``. Nothing is read at import
time: build ``Settings()`` where it is needed and pass it in. Provider keys and URLs
keep the names the vendors and the reference systems use (``OPENAI_API_KEY``,
``OLLAMA_URL``, ...), without the ``ARBITER_`` prefix, so one value configures both.
"""

from __future__ import annotations

import json
import logging
import math
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from arbiter.errors import InputError

__all__ = ["Settings", "read_price_table"]

_log = logging.getLogger(__name__)


class Settings(BaseSettings):
    """Configuration of Arbiter. Every field maps to an ``ARBITER_<NAME>`` variable."""

    model_config = SettingsConfigDict(
        env_prefix="ARBITER_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    db_url: str | None = Field(default=None)
    """SQLAlchemy URL of the run store (``ARBITER_DB_URL``), e.g.
    ``postgresql+psycopg://user@host/arbiter``. Default: SQLite in ``home``."""
    home: Path = Path(".arbiter")
    """Folder for the default SQLite store and other local state (``ARBITER_HOME``)."""
    concurrency: int = Field(default=16, ge=1)
    """Default number of calls in flight during a run (``ARBITER_CONCURRENCY``)."""
    timeout: float = Field(default=30.0, gt=0)
    """Default per-call timeout in seconds (``ARBITER_TIMEOUT``)."""
    retries: int = Field(default=2, ge=0)
    """Retries of a retryable failure (connection, timeout, 429, 5xx), for systems under
    test and providers alike (``ARBITER_RETRIES``)."""
    provider_concurrency: int = Field(default=16, ge=1)
    """Calls in flight at once per provider, embedder or vector store
    (``ARBITER_PROVIDER_CONCURRENCY``)."""
    provider_limits: dict[str, int] = Field(default_factory=dict)
    """Per-provider overrides of ``provider_concurrency``, as JSON
    (``ARBITER_PROVIDER_LIMITS='{"llama_cpp": 2}'``); embedders and vector stores of the
    online pipeline go by ``embedder:<kind>`` and ``store:<kind>``."""
    max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest answer read from a system under test, provider, embedder or vector store;
    a larger one is an invalid response (``ARBITER_MAX_RESPONSE_BYTES``, default 16 MiB)."""

    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY")
    )
    """Bearer key of the ``openai`` provider (``OPENAI_API_KEY``); never logged."""
    openai_base_url: str = Field(
        default="https://api.openai.com/v1", validation_alias=AliasChoices("OPENAI_BASE_URL")
    )
    """API root of the ``openai`` provider (``OPENAI_BASE_URL``): OpenAI, vLLM, OpenRouter."""
    openai_dialect: Literal["openai", "llama_cpp", "ollama"] = "openai"
    """How the ``openai`` provider's server takes a schema (``ARBITER_OPENAI_DIALECT``)."""
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY")
    )
    """Key of the ``anthropic`` provider (``ANTHROPIC_API_KEY``); never logged."""
    gemini_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GEMINI_API_KEY")
    )
    """Key of the ``gemini`` provider (``GEMINI_API_KEY``); never logged."""
    ollama_url: str = Field(
        default="http://localhost:11434", validation_alias=AliasChoices("OLLAMA_URL")
    )
    """Root URL of an Ollama server, for the ``ollama`` provider and the Ollama
    embedder (``OLLAMA_URL``)."""
    ollama_embedding_model: str = Field(
        default="nomic-embed-text", validation_alias=AliasChoices("OLLAMA_EMBEDDING_MODEL")
    )
    """Embedding model of the Ollama embedder (``OLLAMA_EMBEDDING_MODEL``); use the model of
    the system whose vectors share the namespace."""
    ollama_embedding_prefix: str = "search_document: "
    """Task prefix put before every text the Ollama embedder embeds
    (``ARBITER_OLLAMA_EMBEDDING_PREFIX``); nomic-embed-text's is ``"search_document: "``."""
    upstash_vector_rest_url: str | None = Field(
        default=None, validation_alias=AliasChoices("UPSTASH_VECTOR_REST_URL")
    )
    """REST URL of an Upstash Vector index (``UPSTASH_VECTOR_REST_URL``); no default."""
    upstash_vector_rest_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("UPSTASH_VECTOR_REST_TOKEN")
    )
    """REST token of that index (``UPSTASH_VECTOR_REST_TOKEN``); never logged."""
    upstash_vector_threshold: float = Field(
        default=0.90, ge=-1.0, le=1.0, validation_alias=AliasChoices("UPSTASH_VECTOR_THRESHOLD")
    )
    """Cosine similarity a neighbour needs to count in the consistency layer
    (``UPSTASH_VECTOR_THRESHOLD``), for every vector store. Upstash itself reports
    ``(1 + cos) / 2``; its store converts that back to the cosine, so a threshold of t on
    Upstash's own scale is ``2t - 1`` here."""
    upstash_vector_policies_threshold: float = Field(
        default=0.70,
        ge=-1.0,
        le=1.0,
        validation_alias=AliasChoices("UPSTASH_VECTOR_POLICIES_THRESHOLD"),
    )
    """Best cosine similarity in the policies namespace under which grounding stage 3
    flags a text (``UPSTASH_VECTOR_POLICIES_THRESHOLD``), unless the online config sets
    ``policy_grounding.threshold``."""
    llama_cpp_url: str = "http://127.0.0.1:8089/v1"
    """OpenAI-style API root of a llama.cpp server (``ARBITER_LLAMA_CPP_URL``)."""
    model_prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """USD per million input and output tokens by model, as JSON, so calls record
    their cost (``ARBITER_MODEL_PRICES='{"gpt-4o": [2.5, 10]}'``). The entries of the
    ``prices`` file are merged in; a model named in both keeps the price given here."""
    prices: Path | None = None
    """A price table file, TOML or JSON (``ARBITER_PRICES=prices.toml``): each model
    mapped to ``{input = 2.5, output = 10}`` (USD per million tokens) or ``[2.5, 10]``.
    Read once, when the settings are built; see :func:`read_price_table`."""
    cache_dir: Path | None = None
    """Folder of the model-call cache (``ARBITER_CACHE_DIR``); default ``home/cache``."""
    signing_key: Path | None = None
    """Ed25519 private key (PEM) that signs every stored verdict, run report, gate decision
    and trajectory score set (``ARBITER_SIGNING_KEY``); made by ``arbiter keys signing
    init``. Unset: nothing is signed."""
    server_max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest request body ``arbiter serve`` reads; a larger one is answered 413
    (``ARBITER_SERVER_MAX_BODY_BYTES``, default 4 MiB)."""
    server_require_keys: bool = False
    """Whether ``arbiter serve`` requires an API key on every request but health even when
    no key exists: it then refuses them all until one is created, and never runs open
    (``ARBITER_SERVER_REQUIRE_KEYS``). ``arbiter serve`` sets it when it starts with keys,
    so revoking the last key locks the server instead of opening it."""
    server_allowed_hosts: str = ""
    """Host names ``arbiter serve`` answers to besides the address a request reached it on
    (and, on loopback, ``localhost``), comma-separated (``ARBITER_SERVER_ALLOWED_HOSTS``,
    e.g. ``arbiter.example.com``; ``*`` answers any). A request naming another ``Host``
    is refused (400): a guard against DNS rebinding. A state-changing request from a page
    of another origin is refused (403) unless that origin's host is listed here."""
    server_url: str | None = Field(default=None, pattern=r"^https?://[^\s<>()\[\]`|]+$")
    """Where users reach ``arbiter serve`` (``ARBITER_SERVER_URL``, e.g.
    ``https://arbiter.example.com``): the markdown report links its run's page there.
    Unset: no link."""

    trust_policy: Path | None = None
    """The trust policy file (``ARBITER_TRUST_POLICY``, see docs/trust.md); unset: the
    shipped policy. A malformed file is an error naming the key, never a silent default."""
    trust_webhook_urls: str = ""
    """Where trust events (breaker trips) are POSTed, comma-separated
    (``ARBITER_TRUST_WEBHOOK_URLS``); empty: nowhere."""
    trust_webhook_secret: SecretStr | None = None
    """Shared secret of the webhooks' HMAC-SHA256 signature
    (``ARBITER_TRUST_WEBHOOK_SECRET``); never logged. Unset: deliveries are unsigned."""
    trust_webhook_retries: int = Field(default=2, ge=0, le=10)
    """Retries of a failed webhook delivery (``ARBITER_TRUST_WEBHOOK_RETRIES``)."""
    trust_webhook_timeout_s: float = Field(default=5.0, gt=0, le=60)
    """Seconds one webhook delivery may take, retries included
    (``ARBITER_TRUST_WEBHOOK_TIMEOUT_S``)."""
    trust_kappa_floor: float = Field(default=0.6, ge=-1.0, le=1.0)
    """Cohen's kappa against people (annotations and votes) a judge needs on a dimension
    to stay gating (``ARBITER_TRUST_KAPPA_FLOOR``); falling below it is one
    ``calibration_drop`` trust event and the judge is advisory again."""
    trust_gate_judges: str = "mock"
    """The scope judge panel of the server's ``POST /v1/gate``, ``provider:model``
    comma-separated (``ARBITER_TRUST_GATE_JUDGES``); ``mock`` abstains on every answer."""
    trust_judges: Literal["on", "off"] = "off"
    """Whether the judge panels run on ingested traces by default
    (``ARBITER_TRUST_JUDGES``); an agent's own setting (inherit, on, off) wins. A value
    that is neither falls back to ``off`` with a log line."""
    trust_judge_panel: str = ""
    """The models of the ingest judges' panel, ``provider:model`` comma-separated
    (``ARBITER_TRUST_JUDGE_PANEL``); empty: no judge runs on ingest."""
    trust_judge_names: str = ""
    """The judges asked about ingested runs, comma-separated
    (``ARBITER_TRUST_JUDGE_NAMES``, e.g. ``groundedness,answer_groundedness``); empty: all."""
    trust_judge_sample_rate: float = 0.0
    """Share of clean ingested runs the judges also see, drawn per run id as
    ``arbiter online score`` draws (``ARBITER_TRUST_JUDGE_SAMPLE_RATE``); a run a
    deterministic scorer failed is always judged. Clamped to [0, 1]; a value that is not
    a number falls back to 0 with a log line."""
    trust_judge_seed: int = 0
    """Seed of that draw (``ARBITER_TRUST_JUDGE_SEED``)."""
    trust_judge_budget_s: float = Field(default=25.0, gt=0, le=600)
    """Bound in seconds on judging one ingested run, raised to one full judge call
    (``ARBITER_TRUST_JUDGE_BUDGET_S``); it runs after the ingest's answer is sent."""
    trust_judge_concurrency: int = Field(default=4, ge=1, le=256)
    """Ingested runs judged at once (``ARBITER_TRUST_JUDGE_CONCURRENCY``); runs past
    ``trust_judge_queue`` waiting are not judged, and counted."""
    trust_judge_queue: int = Field(default=1000, ge=1)
    """Most ingested runs waiting for the judges (``ARBITER_TRUST_JUDGE_QUEUE``)."""
    trust_review_ttl_days: float = Field(default=90.0, gt=0)
    """Days a settled review (a parked answer released or discarded) stays in the review
    queue (``ARBITER_TRUST_REVIEW_TTL_DAYS``); a pending one never expires."""

    @field_validator("trust_judges", mode="wrap")
    @classmethod
    def _judges_or_off(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # A typo must not switch judging on or off by accident: it falls back, said so.
        try:
            return handler(value.strip().lower() if isinstance(value, str) else value)
        except ValidationError:
            _log.warning("ARBITER_TRUST_JUDGES=%r is not on or off; judges stay off", value)
            return "off"

    @field_validator("trust_judge_sample_rate", mode="wrap")
    @classmethod
    def _rate_in_unit(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            rate = float(handler(value))
        except ValidationError:
            rate = math.nan
        if math.isnan(rate):
            _log.warning("ARBITER_TRUST_JUDGE_SAMPLE_RATE=%r is not a number; using 0", value)
            return 0.0
        return min(1.0, max(0.0, rate))

    def trust_webhooks(self) -> list[str]:
        """``trust_webhook_urls`` as a list, blanks left out."""
        return [url.strip() for url in self.trust_webhook_urls.split(",") if url.strip()]

    @model_validator(mode="after")
    def _merge_price_table(self) -> Settings:
        if self.prices is not None:
            self.model_prices = {**read_price_table(self.prices), **self.model_prices}
        return self

    def allowed_hosts(self) -> list[str]:
        """``server_allowed_hosts`` as lower-case names, without ports or blanks."""
        return [
            name.strip().lower().rstrip(".")
            for name in self.server_allowed_hosts.split(",")
            if name.strip()
        ]

    def model_cache_path(self) -> Path:
        """The SQLite file of the model-call cache: ``cache_dir/models.sqlite3``."""
        return (self.cache_dir or self.home / "cache") / "models.sqlite3"

    def database_url(self) -> str:
        """The store URL: ``db_url`` if set, else SQLite at ``home/arbiter.db``."""
        if self.db_url:
            return self.db_url
        return f"sqlite:///{(self.home / 'arbiter.db').as_posix()}"


def read_price_table(path: Path) -> dict[str, tuple[float, float]]:
    """USD per million input and output tokens by model, from a TOML or JSON file.

    A ``.json`` file is read as JSON, any other as TOML. Each model maps to a table
    ``{input = 2.5, output = 10}`` or a pair ``[2.5, 10]``; prices are finite and >= 0.

    Raises:
        InputError: The file is missing, unreadable, not TOML / JSON, or a price is not
            a pair of non-negative numbers (one line naming the file and the model).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read the price table: {reason}") from None
    try:
        table: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError both are
        raise InputError(f"{path}: the price table is not valid: {exc}") from None
    if not isinstance(table, dict):
        raise InputError(f"{path}: the price table must map model names to prices")
    return {str(model): _price(price, path, model) for model, price in table.items()}


def _price(value: Any, path: Path, model: str) -> tuple[float, float]:
    if isinstance(value, dict) and set(value) == {"input", "output"}:
        pair = [value["input"], value["output"]]
    elif isinstance(value, list) and len(value) == 2:
        pair = list(value)
    else:
        pair = []
    if len(pair) != 2 or not all(_is_price(p) for p in pair):
        raise InputError(
            f"{path}: model {model!r}: a price is {{input = USD, output = USD}} per million "
            f"tokens (or [input, output]), each a number >= 0; got {value!r}"[:300]
        )
    return float(pair[0]), float(pair[1])


def _is_price(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
