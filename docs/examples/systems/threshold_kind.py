"""A kind of system under test of your own: ``arbiter run --system threshold --target 0.95``.

The package that holds this module publishes ``KIND`` in the entry-point group
``arbiter.systems`` (see docs/systems.md); Arbiter then builds, stores and resumes its
runs like those of a built-in kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arbiter import Prediction
from arbiter.errors import InputError
from arbiter.systems.registry import SystemKind, SystemOptions


class ThresholdSystem:
    """Critical when a reading's value reaches ``critical_at`` of its limit, else nominal."""

    def __init__(self, critical_at: float) -> None:
        self.critical_at = critical_at

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        ratio = input["value"] / input["limit"]
        label = "critical" if ratio >= self.critical_at else "nominal"
        return Prediction(label=label, raw_output={"ratio": ratio})

    def describe(self) -> dict[str, Any]:
        return {"kind": "threshold", "target": str(self.critical_at)}


def describe(options: SystemOptions) -> dict[str, Any]:
    """The stored description of a run's system, from its options (checked here)."""
    try:
        critical_at = float(options.target or "")
    except ValueError:
        raise InputError(
            f"--system threshold: --target is a ratio such as 0.95, not {options.target!r}"
        ) from None
    return ThresholdSystem(critical_at).describe()


def build(description: Mapping[str, Any], headers: Mapping[str, str]) -> ThresholdSystem:
    """The system a stored description names (a start, a --resume)."""
    return ThresholdSystem(float(description["target"]))


KIND = SystemKind(
    name="threshold",
    summary="critical when a reading reaches --target of its limit",
    target="the ratio of the limit at which a reading is critical, such as 0.95",
    describe=describe,
    build=build,
)
