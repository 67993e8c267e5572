"""Default band thresholds as a deployment setting: presets, checking, and how they meet a
case's own assertions.

A threshold-bearing trajectory metric (``max_cost_usd``, ``min_grounded_overlap``, ...)
has two lines: past ``danger`` a run fails; between ``healthy`` and ``danger`` it passes,
flagged for review. A deployment picks its lines for every run it ingests: a preset
(``strict``, ``balanced`` or ``lenient``; balanced is the shipped defaults) or its own
table, in which a metric may be ``"off"`` (reported, never graded).

They are the lowest layer of a run's assertions: a case's own ``<key>`` or
``<key>__healthy`` replaces the deployment's pair for that metric as a whole (a case's
line is never mixed with a default split it did not choose), as it replaces the shipped
default.

Pure: the shipped defaults come in as arguments (:class:`Line` per metric key), so the
caller decides where they are read from.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from arbiter.errors import InputError

__all__ = [
    "HEALTHY_SUFFIX",
    "PRESETS",
    "Line",
    "Preset",
    "check_thresholds",
    "flatten",
    "higher_is_better",
    "preset_lines",
    "thresholds_document",
    "under_case",
]

HEALTHY_SUFFIX = "__healthy"
"""A case assertion ``<key>__healthy`` sets the healthy line of metric ``<key>``."""
Preset = Literal["strict", "balanced", "lenient"]
PRESETS: tuple[Preset, ...] = ("strict", "balanced", "lenient")


@dataclass(frozen=True)
class Line:
    """One metric's lines; ``off``: the metric is reported without a verdict."""

    danger: float | None = None
    healthy: float | None = None
    off: bool = False


def higher_is_better(key: str) -> bool:
    """Whether a metric's good side is up (``min_*``) or down (``max_*``)."""
    return key.startswith("min_")


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def check_thresholds(
    document: Mapping[str, Any], *, known: Mapping[str, Line], where: str = "thresholds"
) -> dict[str, Line]:
    """A deployment's thresholds table, checked: ``{metric: {healthy, danger}}``, a bare
    number (the danger line alone) or ``"off"``.

    Args:
        document: The table.
        known: The metrics there are (the shipped defaults).
        where: Names the table in errors.

    Raises:
        InputError: An unknown metric, a line that is not a finite number, a table with
            other keys or no line, or a healthy line on the wrong side of the danger
            line; the message names ``where.metric``.
    """
    if not isinstance(document, Mapping):
        raise InputError(f"{where}: expected a table of metrics")
    lines: dict[str, Line] = {}
    for key, value in document.items():
        at = f"{where}.{key}"
        if key not in known:
            listed = ", ".join(sorted(known))
            raise InputError(f"{at}: no such metric (metrics: {listed})")
        if value == "off":
            lines[key] = Line(off=True)
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            lines[key] = Line(danger=_number(value, at))
            continue
        if not isinstance(value, Mapping) or not value or set(value) - {"healthy", "danger"}:
            raise InputError(f'{at}: expected {{healthy, danger}}, a number or "off"')
        danger = _number(value.get("danger"), f"{at}.danger")
        healthy = _number(value.get("healthy"), f"{at}.healthy")
        if danger is not None and healthy is not None:
            up = higher_is_better(key)
            if healthy < danger if up else healthy > danger:
                side = "below" if up else "above"
                raise InputError(f"{at}.healthy: {healthy:g} is {side} the danger line {danger:g}")
        lines[key] = Line(danger=danger, healthy=healthy)
    return lines


@cache
def _presets() -> dict[str, dict[str, Any]]:
    text = resources.files("arbiter.trust").joinpath("data", "thresholds.toml").read_text("utf-8")
    return dict(tomllib.loads(text))


def preset_lines(name: str, *, balanced: Mapping[str, Line]) -> dict[str, Line]:
    """The lines of a preset; ``balanced`` is the shipped defaults themselves.

    Raises:
        InputError: No such preset.
    """
    if name not in PRESETS:
        raise InputError(f"preset: expected one of {', '.join(PRESETS)}, got {name!r}")
    if name == "balanced":
        return dict(balanced)
    table = _presets()[name]
    return check_thresholds(table, known=balanced, where=f"preset {name}")


def thresholds_document(lines: Mapping[str, Line]) -> dict[str, Any]:
    """The lines as a table :func:`check_thresholds` reads back to the same lines."""
    document: dict[str, Any] = {}
    for key, line in sorted(lines.items()):
        if line.off:
            document[key] = "off"
            continue
        entry = {
            k: v for k, v in (("healthy", line.healthy), ("danger", line.danger)) if v is not None
        }
        document[key] = entry
    return document


def flatten(lines: Mapping[str, Line]) -> dict[str, float | None]:
    """The lines as assertions: ``<key>`` the danger line, ``<key>__healthy`` the healthy
    one; an ``off`` metric is ``<key>: None`` (no line: informational)."""
    flat: dict[str, float | None] = {}
    for key, line in lines.items():
        if line.off:
            flat[key] = None
            continue
        if line.danger is None and line.healthy is None:
            continue
        flat[key] = line.danger
        if line.healthy is not None:
            flat[key + HEALTHY_SUFFIX] = line.healthy
    return flat


def under_case(case: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A case's assertions over the deployment's (as :func:`flatten` gives them): a metric
    the case sets (either of its two keys) keeps the case's pair alone.

    Examples:
        >>> defaults = flatten({"max_cost_usd": Line(danger=0.25, healthy=0.05)})
        >>> under_case({"max_cost_usd": 1.0}, defaults)
        {'max_cost_usd': 1.0}
        >>> under_case({}, defaults)
        {'max_cost_usd': 0.25, 'max_cost_usd__healthy': 0.05}
    """
    merged: dict[str, Any] = {}
    for key, value in defaults.items():
        metric = key.removesuffix(HEALTHY_SUFFIX)
        if metric in case or metric + HEALTHY_SUFFIX in case:
            continue
        merged[key] = value
    merged.update(case)
    return merged
