"""How a run is named and summarised: a system's description, its one-word label and the
headline figures a listing of runs shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arbiter.contract import Report
from arbiter.systems.base import SystemUnderTest

__all__ = ["describe_system", "describe_system_short", "run_summary"]


def describe_system(system: SystemUnderTest) -> dict[str, Any]:
    """What a system says of itself (its ``describe()``), else its kind and repr."""
    describe = getattr(system, "describe", None)
    if callable(describe):
        return dict(describe())
    return {"kind": "object", "repr": repr(system)[:200]}


def describe_system_short(description: Mapping[str, Any]) -> str:
    """A one-word summary of a system description, e.g. ``python:pkg.mod:fn``; a
    precomputed system, which has no target, names its field: ``precomputed (field output)``."""
    kind = description.get("kind", "?")
    if kind == "precomputed":
        return f"precomputed (field {description.get('field', 'output')})"
    target = description.get("target") or description.get("url") or description.get("repr", "")
    tool = description.get("tool")
    return f"{kind}:{target}" + (f"#{tool}" if tool else "")


def run_summary(report: Report) -> dict[str, Any]:
    """The headline figures a listing of runs shows."""
    return {
        "accuracy": report.accuracy.estimate,
        "pass_hat_k": report.pass_hat_k.estimate,
        "n_examples": report.n_examples,
        "scorers": [spec.label for spec in report.scorers],
    }
