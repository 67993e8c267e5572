"""Predictions, examples and datasets: what goes into a run and what comes out of a call."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from arbiter.contract.common import SCHEMA_VERSION

__all__ = ["Dataset", "Example", "Prediction"]


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
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"confidence must be within [0, 1], got {value}")
        return value


class Example(BaseModel):
    """One labelled input of a dataset."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Unique id of the example within its dataset."""
    input: dict[str, Any]
    """The input given to the system under test, passed through as is."""
    expected_label: str
    """The correct label (ground truth)."""
    cohort: str | None = None
    """Optional group the example belongs to, for per-cohort figures and floors."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (source, notes); not shown to the system under test."""

    @field_validator("id", "expected_label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


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
        """sha256 of the canonical JSON of the examples (name and version excluded)."""
        payload = [e.model_dump(mode="json") for e in self.examples]
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def labels(self) -> list[str]:
        """The distinct expected labels, sorted."""
        return sorted({e.expected_label for e in self.examples})
