"""Predictions, examples and datasets: what goes into a run and what comes out of a call."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from arbiter.contract.common import SCHEMA_VERSION, storable_id
from arbiter.contract.trajectory import FlowRun, Trajectory

__all__ = ["Dataset", "Example", "Output", "Prediction"]


def unit_confidence(value: float | None) -> float | None:
    """``value``, checked as a confidence: None, or within [0, 1]."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"confidence must be within [0, 1], got {value}")
    return value


class Prediction(BaseModel):
    """What a system under test returns for one input."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: str = ""
    """The system's own id for this answer (a correlation token); empty if it has none."""
    raw_output: dict[str, Any] = Field(default_factory=dict)
    """The untouched domain payload the system answered with, kept for debugging."""
    label: str
    """The normalised outcome, in the system's own vocabulary (e.g. a risk level)."""
    confidence: float | None = None
    """The system's confidence in ``label`` in [0, 1], or None if it gives none."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else worth keeping with the prediction."""

    @field_validator("confidence")
    @classmethod
    def _confidence_in_unit_interval(cls, value: float | None) -> float | None:
        return unit_confidence(value)


class Output(BaseModel):
    """What any system under test produced for one input: a label, a text, JSON, a trajectory.

    ``Prediction`` is its classifier form; ``Output.coerce`` reads either, a bare string
    (both the label and the text) or any other JSON (kept as ``raw``).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: str = ""
    """The system's own id for this answer (a correlation token); empty if it has none."""
    label: str | None = None
    """A label in the system's vocabulary, for classifier-style systems."""
    text: str | None = None
    """The free text answered, for LLM-style systems."""
    raw: JsonValue = Field(default=None, validation_alias=AliasChoices("raw", "raw_output"))
    """The untouched payload the system answered with (any JSON)."""
    confidence: float | None = None
    """The system's confidence in its answer in [0, 1], or None if it gives none."""
    trajectory: Trajectory | None = None
    """What an agent did to produce the answer, for agent-style systems."""
    flow: FlowRun | None = None
    """The nodes a flow executed, for flow-style systems."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else worth keeping with the output."""

    @field_validator("confidence")
    @classmethod
    def _confidence_in_unit_interval(cls, value: float | None) -> float | None:
        return unit_confidence(value)

    @property
    def answer_text(self) -> str | None:
        """The text a text scorer reads: ``text``, else the label, else an agent's final answer."""
        if self.text is not None:
            return self.text
        if self.label is not None:
            return self.label
        if self.trajectory is not None:
            return self.trajectory.final_answer
        return self.flow.output if self.flow is not None else None

    @classmethod
    def from_prediction(cls, prediction: Prediction) -> Output:
        """The general form of a classifier's prediction."""
        return cls.model_construct(
            id=prediction.id,
            label=prediction.label,
            text=None,
            raw=prediction.raw_output or None,
            confidence=prediction.confidence,
            metadata=prediction.metadata,
        )

    @classmethod
    def coerce(cls, value: Any) -> Output:
        """Read what a system answered as an ``Output``.

        An ``Output`` or ``Prediction`` is taken as is; a string is both label and text; a
        JSON object whose keys are all fields of ``Output`` (or ``Prediction``) is read as
        one; any other JSON value is kept as ``raw``.

        Raises:
            ValueError: An object shaped as an output is not a valid one (a confidence
                outside [0, 1], a label that is not a string, ...).
        """
        if isinstance(value, Output):
            return value
        if isinstance(value, Prediction):
            return cls.from_prediction(value)
        if isinstance(value, str):
            return cls.model_construct(label=value, text=value, raw=None, metadata={})
        if isinstance(value, dict) and value and set(value) <= _OUTPUT_KEYS:
            return cls.model_validate(value)
        try:
            return cls.model_validate({"raw": value})
        except ValidationError:
            raise ValueError(
                f"{type(value).__name__} is not JSON; expected a string, an object or "
                "another JSON value"
            ) from None


_OUTPUT_KEYS = frozenset(
    {
        "schema_version",
        "id",
        "label",
        "text",
        "raw",
        "raw_output",
        "confidence",
        "trajectory",
        "flow",
        "metadata",
    }
)


class Example(BaseModel):
    """One input of a dataset, with what a right answer looks like when that is known."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Unique id of the example within its dataset."""
    input: dict[str, Any]
    """The input given to the system under test, passed through as is."""
    expected_label: str | None = None
    """The correct label (ground truth) for classifier-style systems; None when unknown."""
    expected: JsonValue = None
    """A reference any scorer may read: a label, a reference text, a number, any JSON."""
    output: JsonValue = None
    """An output recorded with the example, for the ``precomputed`` system to answer."""
    cohort: str | None = None
    """Optional group the example belongs to, for per-cohort figures and floors."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (source, notes); not shown to the system under test."""

    @field_validator("id", "expected_label")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("id")
    @classmethod
    def _storable_id(cls, value: str) -> str:
        return storable_id(value)

    def canonical_dump(self) -> dict[str, Any]:
        """The example as JSON the way it is hashed and written: fields added in 0.3 only
        when set, so a dataset written before them keeps its content hash."""
        dumped = self.model_dump(mode="json")
        for key in _ADDED_IN_0_3:
            if dumped.get(key) is None:
                dumped.pop(key, None)
        if dumped.get("expected_label") is None:
            # 0.2 required a label: a dataset without one has no older hash to keep.
            dumped.pop("expected_label", None)
        return dumped

    @property
    def reference_label(self) -> str | None:
        """What a label scorer compares with: ``expected_label``, else a string ``expected``."""
        if self.expected_label is not None:
            return self.expected_label
        return self.expected if isinstance(self.expected, str) else None


class Dataset(BaseModel):
    """A named, versioned list of labelled examples with unique ids."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    name: str = "dataset"
    """Human-readable name, usually the file stem."""
    version: str = "1"
    """Version string chosen by the dataset's author."""
    examples: list[Example]
    """The examples, in file order."""

    @model_validator(mode="after")
    def _ids_unique_and_nonempty(self) -> Dataset:
        if not self.examples:
            raise ValueError("the dataset has no examples")
        seen: set[str] = set()
        for example in self.examples:
            if example.id in seen:
                raise ValueError(f"duplicate example id {example.id!r}")
            seen.add(example.id)
        return self

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the canonical JSON of the examples (name and version excluded).

        Fields added in 0.3 (``expected``, ``output``) enter the hash only when set, so a
        dataset written before them keeps its hash and its stored runs stay resumable.
        """
        # The digest of the JSON array of the examples, fed one example at a time: the
        # array's text is "[" + ",".join(each example's text) + "]", so the digest is the
        # one of the whole text without that text (100 MB for a million examples) or a
        # list of every example's dict in memory at once.
        digest = hashlib.sha256(b"[")
        pending: list[str] = []
        size = 0
        for number, example in enumerate(self.examples):
            if number:
                pending.append(",")
            piece = _canonical_text(example.canonical_dump())
            pending.append(piece)
            size += len(piece)
            if size >= _HASH_BUFFER_CHARS:  # one update per ~64 KB, not one per example
                digest.update("".join(pending).encode("utf-8"))
                pending, size = [], 0
        pending.append("]")
        digest.update("".join(pending).encode("utf-8"))
        return digest.hexdigest()

    @property
    def labels(self) -> list[str]:
        """The distinct expected labels, sorted (examples without one are left out)."""
        return sorted({e.expected_label for e in self.examples if e.expected_label is not None})


_ADDED_IN_0_3 = ("expected", "output")
_HASH_BUFFER_CHARS = 1 << 16


def _canonical_text(value: Any) -> str:
    """The canonical JSON of one value: sorted keys, compact, unicode kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
