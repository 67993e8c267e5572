"""The deployment's default band thresholds: read, set, and applied to ingested runs.

A deployment picks its lines once for every run it ingests (``POST /v1/trajectories``,
``POST /v1/traces``): a preset (``strict``, ``balanced``, ``lenient``) and, over it, its
own lines for some metrics (``{metric: {healthy, danger}}``, a bare number, or ``"off"``).
A case's own assertions still win metric by metric. Every change is kept (who, when);
the newest is in force from the next run on, without a restart. Runs stored before keep
the bands they were given (``arbiter trust backtest --thresholds`` shows what a change
would have done to them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.trust_settings_repository import (
    deployment_setting,
    deployment_setting_history,
    save_deployment_setting,
)
from arbiter.trajectories.bands import default_thresholds
from arbiter.trust.thresholds import (
    PRESETS,
    Line,
    check_thresholds,
    flatten,
    higher_is_better,
    preset_lines,
    thresholds_document,
)

__all__ = [
    "MetricBands",
    "ThresholdsChange",
    "ThresholdsView",
    "deployment_lines",
    "ingest_defaults",
    "reset_thresholds",
    "set_thresholds",
    "shipped_lines",
    "thresholds_history",
    "thresholds_view",
]

log = logging.getLogger(__name__)

_KEY = "thresholds"


class MetricBands(BaseModel):
    """One metric's lines in force, beside the shipped ones."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """The metric (``max_cost_usd``): ``<key>`` in a case's assertions overrides it."""
    higher_is_better: bool
    """``min_*`` metrics: a value below the danger line fails; ``max_*``: above."""
    danger: float | None = None
    """Past it a run fails; None: no danger line."""
    healthy: float | None = None
    """On its good side a run is healthy; between the two lines, review."""
    off: bool = False
    """Reported without a verdict."""
    shipped_danger: float | None = None
    shipped_healthy: float | None = None


class ThresholdsView(BaseModel):
    """The default band thresholds in force."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["shipped", "preset", "custom"]
    """``shipped``: never set; ``preset``: a preset as it is; ``custom``: lines of the
    deployment's own over a preset."""
    preset: str = "balanced"
    """The preset underneath."""
    metrics: list[MetricBands] = Field(default_factory=list)
    set_by: str | None = None
    set_at: datetime | None = None


def shipped_lines() -> dict[str, Line]:
    """The shipped defaults of the trajectory scorers (the balanced preset)."""
    return {
        key: Line(danger=points.danger, healthy=points.healthy)
        for key, points in default_thresholds().thresholds.items()
    }


def _resolve(
    value: Mapping[str, Any], shipped: Mapping[str, Line]
) -> tuple[str, dict[str, Line], bool]:
    preset = value.get("preset", "balanced")
    lines = preset_lines(str(preset), balanced=shipped)
    own = value.get("thresholds") or {}
    lines.update(check_thresholds(own, known=shipped, where="thresholds"))
    return str(preset), lines, bool(own)


def deployment_lines(store: Store) -> dict[str, Line]:
    """The lines in force; a stored value that cannot be read (an older or a hand-made
    row) leaves the shipped lines in force, said in a log line."""
    shipped = shipped_lines()
    found = deployment_setting(store, _KEY)
    if found is None:
        return shipped
    try:
        return _resolve(found[0], shipped)[1]
    except InputError as exc:
        log.warning("stored band thresholds are unreadable, the shipped ones apply: %s", exc)
        return shipped


def thresholds_view(store: Store) -> ThresholdsView:
    """The default band thresholds in force, metric by metric."""
    shipped = shipped_lines()
    found = deployment_setting(store, _KEY)
    source: Literal["shipped", "preset", "custom"] = "shipped"
    preset, lines, by, at = "balanced", shipped, None, None
    if found is not None:
        try:
            preset, lines, custom = _resolve(found[0], shipped)
            source = "custom" if custom else "preset"
            by, at = found[1], found[2]
        except InputError as exc:
            log.warning("stored band thresholds are unreadable, the shipped ones apply: %s", exc)
    metrics = [
        MetricBands(
            key=key,
            higher_is_better=higher_is_better(key),
            danger=line.danger,
            healthy=line.healthy,
            off=line.off,
            shipped_danger=shipped[key].danger,
            shipped_healthy=shipped[key].healthy,
        )
        for key, line in sorted(lines.items())
    ]
    return ThresholdsView(source=source, preset=preset, metrics=metrics, set_by=by, set_at=at)


def set_thresholds(
    store: Store,
    *,
    preset: str | None = None,
    thresholds: Mapping[str, Any] | None = None,
    by: str,
    where: str = "thresholds",
    now: datetime | None = None,
) -> ThresholdsView:
    """Set the default band thresholds: a preset (default ``balanced``) and lines of the
    deployment's own over it.

    Raises:
        InputError: No such preset, or a line that is not one (named ``where.metric``);
            nothing is stored then.
    """
    shipped = shipped_lines()
    chosen = preset or "balanced"
    if chosen not in PRESETS:
        raise InputError(f"preset: expected one of {', '.join(PRESETS)}, got {chosen!r}")
    own = check_thresholds(thresholds or {}, known=shipped, where=where)
    value = {"preset": chosen, "thresholds": thresholds_document(own)}
    save_deployment_setting(store, _KEY, value, by=by, now=now)
    return thresholds_view(store)


def reset_thresholds(store: Store, *, by: str, now: datetime | None = None) -> ThresholdsView:
    """Back to the shipped lines (kept in the history as a change of its own)."""
    save_deployment_setting(store, _KEY, {"preset": "balanced"}, by=by, now=now)
    return thresholds_view(store)


def ingest_defaults(store: Store) -> dict[str, float | None]:
    """The deployment's lines as the lowest layer of an ingested run's assertions."""
    return flatten(deployment_lines(store))


class ThresholdsChange(BaseModel):
    """One past setting of the default band thresholds."""

    model_config = ConfigDict(extra="forbid")

    preset: str
    """The preset it chose."""
    thresholds: dict[str, Any] = Field(default_factory=dict)
    """Its own lines over the preset, as stored."""
    set_by: str
    set_at: datetime


def thresholds_history(store: Store, *, limit: int = 20) -> list[ThresholdsChange]:
    """The newest ``limit`` settings of the default band thresholds, newest first."""
    changes = []
    for value, by, at in deployment_setting_history(store, _KEY, limit=limit):
        own = value.get("thresholds")
        changes.append(
            ThresholdsChange(
                preset=str(value.get("preset", "balanced")),
                thresholds=own if isinstance(own, dict) else {},
                set_by=by,
                set_at=at,
            )
        )
    return changes
