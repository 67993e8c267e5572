"""What every stored shape shares: the schema version, a figure with its interval, usage."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, WithJsonSchema

__all__ = ["SCHEMA_VERSION", "Bounds", "Interval", "StrictModel", "Usage", "storable_id"]

SCHEMA_VERSION = 1
"""Version of the stored shapes of this package; bumped on any incompatible change."""


Bounds = Annotated[
    tuple[float, float],
    WithJsonSchema({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}),
]
"""An interval's two ends, low then high: a JSON array of two numbers (described with
``items``, which every OpenAPI reader understands, rather than tuple ``prefixItems``)."""


class StrictModel(BaseModel):
    """A shape that refuses keys it does not define: a typo in a file or a request
    (``min_acuracy``) is an error naming the key, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class Interval(BaseModel):
    """A point estimate with a 95% interval."""

    estimate: float
    """The point estimate."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    method: Literal["wilson", "bootstrap"]
    """How the interval was computed."""
    n: int
    """Units the estimate is over: trials (Wilson) or resampled examples (bootstrap)."""


class Usage(BaseModel):
    """Tokens and cost of one provider call."""

    input_tokens: int = 0
    """Prompt tokens billed."""
    output_tokens: int = 0
    """Completion tokens billed."""
    cost_usd: float | None = None
    """Cost in US dollars, when the price of the model is known."""


def storable_id(value: str) -> str:
    """``value``, checked as an id: a key of the store, kept exactly.

    Raises:
        ValueError: It holds a NUL, which PostgreSQL text cannot.
    """
    if "\x00" in value:
        raise ValueError("must not contain a NUL character (U+0000)")
    return value
