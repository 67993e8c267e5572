"""What a scorer says of one output, and how a stored run names the scorers it used."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = ["Band", "Evidence", "ModelCalls", "Score", "ScorerKind", "ScorerSpec"]

Band = Literal["healthy", "review", "danger"]
"""A banded metric's verdict: healthy passes, review passes but is flagged, danger fails."""

ScorerKind = Literal["deterministic", "model"]
"""``deterministic``: code only, reproducible; ``model``: asks an LLM."""


class Evidence(BaseModel):
    """One piece of evidence behind a score: a quote, and whether it was found verbatim."""

    model_config = ConfigDict(extra="forbid")

    quote: str
    """The text quoted (from the output unless ``note`` says otherwise)."""
    verified: bool | None = None
    """True when the quote was found verbatim where it claims to be; False when it was
    not (the finding is then an opinion); None when nothing was checked."""
    note: str = ""
    """What the quote shows, one line."""


class ModelCalls(BaseModel):
    """The model calls behind one score (or summed over many): count, cache, tokens, time."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    """Requests made, cached ones included."""
    cached: int = 0
    """Requests answered from the cache."""
    input_tokens: int = 0
    """Prompt tokens of the requests that reached a model."""
    output_tokens: int = 0
    """Completion tokens of the requests that reached a model."""
    latency_ms: float = 0.0
    """Time spent in the requests."""
    cost_usd: float | None = None
    """Cost in US dollars when every priced model is in the price table; else None."""

    def __add__(self, other: ModelCalls) -> ModelCalls:
        costs = (self._billed_cost(), other._billed_cost())
        return ModelCalls(
            calls=self.calls + other.calls,
            cached=self.cached + other.cached,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
            cost_usd=None if None in costs else sum(c for c in costs if c is not None),
        )

    def _billed_cost(self) -> float | None:
        # Cached calls cost nothing, so a side with no billed call is known to cost 0.
        return 0.0 if self.calls == self.cached else self.cost_usd


class Score(BaseModel):
    """What one scorer says of one output.

    ``passed`` is True, False or None: None is an abstention (the scorer had nothing to
    judge, e.g. no reference), reported apart and never counted as a pass or a fail. A
    scorer that raised gives ``passed=None`` with ``error`` set: an errored score.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    """The scorer's name in the run (unique within it); filled in by the scorer wrapper."""
    value: float | None = None
    """A number when the scorer measures one (token F1, a parsed number, 1.0 / 0.0)."""
    answer: str | None = None
    """A category when the scorer reads one (the mapped label, the jury's decision), so
    its section can show a classification report against ``expected``."""
    expected: str | None = None
    """The category ``answer`` should have been, when the example says."""
    passed: bool | None = None
    """Whether the output passes this scorer; None: abstained (or errored)."""
    band: Band | None = None
    """healthy / review / danger for banded metrics; None otherwise."""
    explanation: str = ""
    """Why, in one or two lines."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Quotes behind the score, verified where they could be."""
    error: str | None = None
    """``Type: message`` when the scorer raised; the score is then an abstention."""
    model: ModelCalls | None = None
    """The model calls this score cost, for model scorers."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Anything else the scorer reports (the jury's ESCALATE flag and confidence)."""

    @property
    def abstained(self) -> bool:
        """No verdict: the scorer abstained or errored."""
        return self.passed is None


class ScorerSpec(BaseModel):
    """How to rebuild a scorer exactly: its registered name, arguments and version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The name it is registered under (``casefold``, ``jury``, a plugin's name)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments it was built with, as JSON."""
    version: str = "1"
    """The scorer's version: a change of what it computes bumps it."""
    kind: ScorerKind = "deterministic"
    """Whether it asks a model."""
    alias: str | None = None
    """The name its scores carry in the run when the same scorer is used twice."""
    gating: bool = True
    """Whether it takes part in pass / fail of a repetition (and so in pass^k and gates)."""

    @property
    def label(self) -> str:
        """The name its scores carry: the alias, else the registered name."""
        return self.alias or self.name
