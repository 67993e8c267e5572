"""Banded metrics: a value graded healthy / review / danger against up to two cut points.

A threshold-bearing trajectory scorer (cost, latency, tokens, tool calls, tasks, ...)
routes its value through :func:`banded_metric`. The *danger* cut point is the gate: a
value past it fails. The *healthy* cut point splits the passing side: a value between
the two is ``review`` (it passes, flagged for a look). One cut point is a plain
pass / fail line with no review band; none leaves the metric informational (a value,
no verdict).

The cut points come from data: :data:`DEFAULTS_FILE` holds the default pair of every
metric key (``max_cost_usd = {healthy = 0.05, danger = 0.25}``), and a case's assertions
override a key with ``<key>`` (the danger line) and ``<key>__healthy``. A case that sets
either of the two replaces the default pair as a whole, so a case's own line is never
mixed with a default split it did not choose.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from arbiter.contract import Band, Score
from arbiter.errors import InputError

__all__ = [
    "DEFAULTS_FILE",
    "HEALTHY_SUFFIX",
    "CutPoints",
    "Defaults",
    "banded_metric",
    "check_cut_points",
    "default_thresholds",
]

DEFAULTS_FILE = "defaults.toml"
"""The file in ``arbiter/trajectories/data/`` holding the default cut points."""

HEALTHY_SUFFIX = "__healthy"
"""A case assertion ``<key>__healthy`` sets the healthy cut point of metric ``<key>``."""


@dataclass(frozen=True)
class CutPoints:
    """The two lines of a banded metric; either may be absent."""

    danger: float | None = None
    """Past it the metric fails (the gate)."""
    healthy: float | None = None
    """On the good side of it the metric is healthy; between the two, review."""

    @property
    def informational(self) -> bool:
        """No line at all: the value is reported without a verdict."""
        return self.danger is None and self.healthy is None


def banded_metric(
    value: float,
    *,
    danger: float | None,
    healthy: float | None,
    higher_is_better: bool,
    unit: str = "",
) -> Score:
    """Grade ``value`` against up to two cut points.

    ``higher_is_better`` tells the direction: for a ``min_*`` metric (efficiency) a
    value below the danger line fails; for a ``max_*`` metric (cost) a value above it
    does. A value exactly on a line is on its good side. With one line the metric is
    pass / fail (healthy or danger); with none it is informational (``passed=None``).

    Args:
        value: The measured value.
        danger: The gate line; None for none.
        healthy: The healthy / review split; None for none.
        higher_is_better: The direction of the metric.
        unit: Appended to numbers in the explanation (``" ms"``, ``" USD"``).

    Returns:
        A score with ``value``, ``band`` and ``passed = band != "danger"``.

    Raises:
        ValueError: A line is not finite, or the healthy line is on the bad side of the
            danger line (the case's thresholds contradict each other).

    Examples:
        >>> banded_metric(0.12, danger=0.25, healthy=0.05, higher_is_better=False).band
        'review'
        >>> banded_metric(3, danger=None, healthy=None, higher_is_better=False).passed is None
        True
    """
    for line in (danger, healthy):
        if line is not None and not math.isfinite(line):
            raise ValueError(f"a cut point must be a finite number, got {line!r}")
    if danger is not None and healthy is not None:
        ordered = healthy >= danger if higher_is_better else healthy <= danger
        if not ordered:
            side = "below" if higher_is_better else "above"
            raise ValueError(f"the healthy line {healthy:g} is {side} the danger line {danger:g}")
    shown = f"{value:g}{unit}"
    if danger is None and healthy is None:
        return Score(value=value, explanation=f"{shown} (no threshold set: informational)")
    gate = danger if danger is not None else healthy
    assert gate is not None  # one of the two is set here

    def good(line: float) -> bool:
        return value >= line if higher_is_better else value <= line

    word = "at least" if higher_is_better else "at most"
    band: Band
    if not good(gate):
        band = "danger"
        explanation = f"{shown} is past the danger line ({word} {gate:g}{unit})"
    elif danger is not None and healthy is not None and not good(healthy):
        band = "review"
        explanation = f"{shown} passes but misses the healthy line ({word} {healthy:g}{unit})"
    else:
        band = "healthy"
        line = healthy if healthy is not None else gate
        explanation = f"{shown} is within the healthy line ({word} {line:g}{unit})"
    return Score(value=value, band=band, passed=band != "danger", explanation=explanation)


class Defaults:
    """Default cut points and the framework-internal tools, read from a TOML file.

    Args:
        thresholds: Metric key to its default cut points.
        internal_tools: Tools of the agent framework itself (logging, date lookups)
            that the tool scorers leave out.
    """

    def __init__(
        self, thresholds: Mapping[str, CutPoints], internal_tools: frozenset[str] = frozenset()
    ) -> None:
        self.thresholds = dict(thresholds)
        self.internal_tools = internal_tools

    @classmethod
    def from_file(cls, path: str | Path) -> Defaults:
        """Read a defaults file (the shape of :data:`DEFAULTS_FILE`).

        Raises:
            InputError: The file is missing, not TOML, or a value is not a number.
        """
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{where}: cannot read the thresholds file: {exc.strerror}") from None
        return cls.from_toml(text, where=where)

    @classmethod
    def from_toml(cls, text: str, *, where: str) -> Defaults:
        """Parse the TOML text of a defaults file (``where`` names it in errors)."""
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{where}: not valid TOML: {exc}") from None
        thresholds: dict[str, CutPoints] = {}
        table = document.get("thresholds", {})
        if not isinstance(table, dict):
            raise InputError(f"{where}: [thresholds] must be a table")
        for key, entry in table.items():
            if not isinstance(entry, dict) or set(entry) - {"healthy", "danger"}:
                raise InputError(f"{where}: thresholds.{key} must be a table of healthy and danger")
            thresholds[key] = CutPoints(
                danger=_number(entry.get("danger"), f"{where}: thresholds.{key}.danger"),
                healthy=_number(entry.get("healthy"), f"{where}: thresholds.{key}.healthy"),
            )
        tools = document.get("internal_tools", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise InputError(f"{where}: internal_tools must be a list of tool names")
        return cls(thresholds, frozenset(tools))

    def cut_points(self, key: str, assertions: Mapping[str, Any]) -> CutPoints:
        """The cut points of metric ``key`` for a case: its assertions, else the default.

        Raises:
            InputError: The case sets a cut point that is not a number.
        """
        healthy_key = key + HEALTHY_SUFFIX
        if key in assertions or healthy_key in assertions:
            return CutPoints(
                danger=_number(assertions.get(key), f"assertion {key!r}"),
                healthy=_number(assertions.get(healthy_key), f"assertion {healthy_key!r}"),
            )
        return self.thresholds.get(key, CutPoints())


def check_cut_points(
    assertions: Mapping[str, Any], *, where: str, defaults: Defaults | None = None
) -> None:
    """Refuse a case's cut points that no scorer could grade with, before any scoring.

    A cut point is an assertion ``<key>`` or ``<key>__healthy`` where ``<key>`` is a
    metric of the defaults or any ``min_*`` / ``max_*`` key. Each must be a finite
    number, and a pair must be ordered for the metric's direction (``min_*``: higher
    is better).

    Raises:
        InputError: ``where: assertion 'key': why``.
    """
    known = (defaults or default_thresholds()).thresholds
    for key in sorted(assertions):
        metric = key.removesuffix(HEALTHY_SUFFIX)
        if metric not in known and not metric.startswith(("min_", "max_")):
            continue
        if assertions[key] is None:
            raise InputError(f"{where}: assertion {key!r} must be a finite number, got None")
        _number(assertions[key], f"{where}: assertion {key!r}")
        if key != metric or (metric + HEALTHY_SUFFIX) not in assertions:
            continue
        danger = _number(assertions[metric], f"{where}: assertion {metric!r}")
        healthy = _number(assertions[metric + HEALTHY_SUFFIX], where)
        if danger is None or healthy is None:
            continue  # None was refused above; this narrows the types
        higher = metric.startswith("min_")
        if healthy < danger if higher else healthy > danger:
            side = "below" if higher else "above"
            raise InputError(
                f"{where}: assertion {metric + HEALTHY_SUFFIX!r}: the healthy line "
                f"{healthy:g} is {side} the danger line {danger:g}"
            )


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where} must be a finite number, got {value!r}")
    return float(value)


@cache
def default_thresholds() -> Defaults:
    """The defaults shipped with Arbiter (``arbiter/trajectories/data/defaults.toml``)."""
    text = (
        resources.files("arbiter.trajectories")
        .joinpath("data", DEFAULTS_FILE)
        .read_text(encoding="utf-8")
    )
    return Defaults.from_toml(text, where=DEFAULTS_FILE)
