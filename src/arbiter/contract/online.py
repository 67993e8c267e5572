"""Shapes of the online pipeline: what each layer reports and what the caller gets.

``OnlineResult.layers`` maps each layer's name to a ``LayerResult``: its status and
latency, and its payload (the built-in layers' shapes are below; a layer of one's own
brings its own model, or a plain dict). Version 1 of the result held the built-in
payloads in one field per layer; it is still read, and converted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    Field,
    PlainValidator,
    SerializeAsAny,
    model_validator,
)

from arbiter.contract.scores import ModelCalls

__all__ = [
    "ONLINE_SCHEMA_VERSION",
    "ConsistencyResult",
    "DisagreementResult",
    "GroundingResult",
    "HeuristicFinding",
    "HeuristicResult",
    "JudgeAttempt",
    "JudgeOutcome",
    "LayerName",
    "LayerPayload",
    "LayerResult",
    "LayerStatus",
    "Neighbour",
    "OnlineResult",
]

ONLINE_SCHEMA_VERSION = 2
"""Version of ``OnlineResult``: 2 since the layers' payloads moved into ``layers``."""

LayerName = Literal["heuristics", "grounding", "disagreement", "consistency", "judge"]
"""Names of the built-in layers (a pipeline may hold others)."""
LayerStatus = Literal["ran", "not_configured", "not_escalated", "abstained", "error"]

LayerPayload = BaseModel | dict[str, Any]
"""What a layer found: a Pydantic model (read back from JSON as a dict, unless it is
a built-in layer's) or a JSON-ready dict."""

P = TypeVar("P", bound=BaseModel)


def _payload(value: object) -> object:
    # A plain check instead of a validated union: the union would turn a dict into a bare
    # BaseModel, and costs twice as much on the hot path.
    if value is None or isinstance(value, BaseModel | dict):
        return value
    raise ValueError(
        f"a layer's payload must be a model, a dict or null, not {type(value).__name__}"
    )


class LayerResult(BaseModel):
    """What happened to one layer for one item, and what it found."""

    status: LayerStatus
    """ran; not_configured (its dependency was not given); not_escalated (the item was not
    escalated); abstained (cut off by the budget, or nothing to judge); error (it raised)."""
    reason: str | None = None
    """Why it did not run, the error, or a note of a run (a truncated text), one line."""
    latency_ms: float = 0.0
    """Time the layer took (0 when it did not run)."""
    cut_off: bool = False
    """Abstained because the escalation budget ran out (not for a reason of its own)."""
    payload: Annotated[
        SerializeAsAny[BaseModel] | dict[str, Any] | None, PlainValidator(_payload)
    ] = None
    """What the layer found; None unless it ran."""


class HeuristicFinding(BaseModel):
    """One rule that fired."""

    rule: str
    """The rule's name from the rule set."""
    message: str
    """What is wrong, one line."""


class HeuristicResult(BaseModel):
    """Layer 1: free, deterministic rules over the prediction."""

    flagged: bool
    """Any rule fired."""
    findings: list[HeuristicFinding] = Field(default_factory=list)
    """The rules that fired, in rule-set order."""


class GroundingResult(BaseModel):
    """Layer 1b: are citation-shaped claims of the free text backed by declared references?"""

    flagged: bool
    """Some claim is not grounded."""
    claims: list[str] = Field(default_factory=list)
    """Citation-shaped claims found (stage 1), normalised."""
    keywords: list[str] = Field(default_factory=list)
    """Regulatory keywords found (stage 2)."""
    ungrounded: list[str] = Field(default_factory=list)
    """Claims or keywords with no matching declared reference."""
    best_policy_similarity: float | None = None
    """Stage 3: best similarity in the policies namespace, when an embedder was given."""
    stages: list[int] = Field(default_factory=list)
    """Which stages ran (1, 2, 3)."""


class DisagreementResult(BaseModel):
    """Layer 2: the same input to several providers or systems."""

    labels_by_provider: dict[str, str] = Field(default_factory=dict)
    """The label each one answered."""
    errors_by_provider: dict[str, str] = Field(default_factory=dict)
    """Every failure, one line each; never dropped."""
    agreed: bool | None = None
    """True only when every one answered and all labels are equal; None if none answered."""


class Neighbour(BaseModel):
    """One nearest neighbour from the vector store."""

    id: str
    """Id of the stored item."""
    similarity: float
    """Cosine similarity to the item."""
    label: str | None = None
    """Its label, from the stored metadata."""


class ConsistencyResult(BaseModel):
    """Layer 3: does the label agree with similar past items?"""

    neighbours: list[Neighbour] = Field(default_factory=list)
    """Nearest neighbours, most similar first."""
    threshold: float
    """Similarity above which a neighbour counts."""
    agrees: bool | None = None
    """Whether the label equals the majority label of neighbours above threshold; None if none."""


class JudgeAttempt(BaseModel):
    """One judge tried in the chain."""

    source: str
    """The judge's name."""
    outcome: Literal["ok", "failed", "skipped_open_circuit"]
    """What happened."""
    error: str | None = None
    """Why it failed."""
    latency_ms: float = 0.0
    """Time spent."""
    model: ModelCalls | None = None
    """What the attempt's model call cost; None when skipped, or from a judge that does
    not report its calls."""


class JudgeOutcome(BaseModel):
    """Layer 4: an LLM judge's label, or the fallback's."""

    label: str | None
    """The judge's label, within the vocabulary; None when only the fallback answered."""
    source: str
    """Which source resolved it: a judge's name or ``heuristics_fallback``."""
    agrees: bool | None = None
    """Whether the judge's label equals the prediction's."""
    attempts: list[JudgeAttempt] = Field(default_factory=list)
    """Every judge tried, in order."""
    model: ModelCalls = Field(default_factory=ModelCalls)
    """Every attempt's model calls, summed."""


_BUILT_IN_PAYLOADS: dict[str, type[BaseModel]] = {
    "heuristics": HeuristicResult,
    "grounding": GroundingResult,
    "disagreement": DisagreementResult,
    "consistency": ConsistencyResult,
    "judge": JudgeOutcome,
}
"""The built-in layers' payload shapes: a payload read back as a dict becomes one."""
_VERSION_1_FIELDS = frozenset(_BUILT_IN_PAYLOADS)


class OnlineResult(BaseModel):
    """Everything the pipeline found about one prediction. Never raised, always returned."""

    schema_version: int = ONLINE_SCHEMA_VERSION
    """Version of this shape."""
    prediction_id: str
    """The prediction's id (or a content hash when it had none)."""
    label: str | None
    """The prediction's label, if it had a usable one."""
    escalated: bool = False
    """Whether the expensive layers were called for."""
    escalation_reasons: list[str] = Field(default_factory=list)
    """Why: heuristic flags, grounding flags, anomalous, sampled."""
    layers: dict[str, LayerResult] = Field(default_factory=dict)
    """Per layer, in pipeline order: ran or why not, its latency and its payload."""
    errors: list[str] = Field(default_factory=list)
    """Every failure inside the pipeline, recorded instead of raised."""
    total_ms: float = 0.0
    """Wall time of the whole evaluation."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything the caller attached."""

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        """Version 1 into this shape, and built-in payloads read as dicts into their models.

        Version 1 (and keyword arguments of its fields) held one field per built-in layer.
        One validator for both, cheap when there is nothing to do: the pipeline builds a
        result per item.
        """
        if type(data) is not dict:
            return data
        if not _VERSION_1_FIELDS.isdisjoint(data):
            data = _from_version_1(data)
        layers = data.get("layers")
        if type(layers) is dict:
            for report in layers.values():
                if type(report) is dict:
                    return {**data, "layers": _typed_payloads(layers)}
        return data

    def payload(self, name: str, kind: type[P]) -> P | None:
        """The payload of layer ``name`` as a ``kind``, or None when it has none.

        A payload read back from JSON as a dict (a layer of one's own) is validated
        into ``kind``.

        Raises:
            TypeError: The payload is a model of another type.
            pydantic.ValidationError: The dict is not a ``kind``.

        Examples:
            >>> OnlineResult(prediction_id="p", label=None).payload("judge", JudgeOutcome)
        """
        report = self.layers.get(name)
        value = None if report is None else report.payload
        if value is None:
            return None
        if isinstance(value, kind):
            return value
        if isinstance(value, dict):
            return kind.model_validate(value)
        raise TypeError(f"layer {name!r} holds a {type(value).__name__}, not a {kind.__name__}")

    @property
    def heuristics(self) -> HeuristicResult | None:
        """The heuristics layer's payload (it ran unless the prediction was unreadable)."""
        return self.payload("heuristics", HeuristicResult)

    @property
    def grounding(self) -> GroundingResult | None:
        """The grounding layer's payload, when it is configured and ran."""
        return self.payload("grounding", GroundingResult)

    @property
    def disagreement(self) -> DisagreementResult | None:
        """The disagreement layer's payload, when escalated, configured and it ran."""
        return self.payload("disagreement", DisagreementResult)

    @property
    def consistency(self) -> ConsistencyResult | None:
        """The consistency layer's payload, when escalated, configured and it ran."""
        return self.payload("consistency", ConsistencyResult)

    @property
    def judge(self) -> JudgeOutcome | None:
        """The judge chain's outcome, when escalated, configured and it ran."""
        return self.payload("judge", JudgeOutcome)

    @property
    def flagged(self) -> bool:
        """Whether a free layer flagged the item: a payload says ``flagged`` (heuristics,
        grounding, or a layer of one's own with such a field)."""
        for report in self.layers.values():
            payload = report.payload
            if payload is None:
                continue
            found = (
                payload.get("flagged")
                if isinstance(payload, dict)
                else getattr(payload, "flagged", None)
            )
            if found is True:
                return True
        return False

    def error_kinds(self) -> list[str]:
        """What went wrong with the item, as short kinds (empty when nothing did).

        An unreadable input line carries its kind in ``metadata["error_kind"]``
        (``invalid_json``, ...). Otherwise each recorded failure is named by where it
        happened, the prefix of its line: ``invalid_prediction`` for a prediction that
        failed validation (a NaN confidence, a missing label), else the layer
        (``judge``, ``disagreement``, ``grounding_stage_3``, ``pipeline``, ...).
        """
        kind = self.metadata.get("error_kind")
        if isinstance(kind, str):
            return [kind]
        kinds: dict[str, None] = {}
        for line in self.errors:
            prefix, found, _ = line.partition(":")
            where = "_".join(prefix.split()) if found and prefix.strip() else "error"
            kinds["invalid_prediction" if where == "prediction" else where] = None
        for name, report in self.layers.items():
            if report.status == "error" and not any(k.startswith(name) for k in kinds):
                kinds[name] = None
        return list(kinds)


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """Move version 1's per-layer fields into ``layers`` (unless this is a later version)."""
    version = data.get("schema_version")
    if isinstance(version, int) and version >= 2:
        return data
    data = dict(data)
    layers: dict[str, Any] = dict(data.get("layers") or {})
    for name in _BUILT_IN_PAYLOADS:
        payload = data.pop(name, None)
        if payload is None:
            continue
        report = layers.get(name)
        if isinstance(report, LayerResult):
            layers[name] = report.model_copy(update={"payload": payload})
        elif isinstance(report, Mapping):
            layers[name] = {**report, "payload": payload}
        else:
            layers[name] = {"status": "ran", "payload": payload}
    data["layers"] = layers
    data["schema_version"] = ONLINE_SCHEMA_VERSION
    return data


def _typed_payloads(layers: dict[str, Any]) -> dict[str, Any]:
    """Each built-in layer's payload given as a dict, validated into its model."""
    typed: dict[str, Any] = {}
    for name, report in layers.items():
        kind = _BUILT_IN_PAYLOADS.get(name)
        if kind is not None and type(report) is dict and type(report.get("payload")) is dict:
            report = {**report, "payload": kind.model_validate(report["payload"])}
        typed[name] = report
    return typed
