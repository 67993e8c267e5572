"""Judges' calibration against people, watched: a drop below the kappa floor is an event.

:func:`check_calibration` calibrates every judge and dimension on the stored human
labels (annotations and votes, as ``arbiter calibrate --store`` does), applies the edge
rule of :mod:`arbiter.trust.calibration_edge` to the standings the last check left in
the store, keeps the new standings, and appends one ``calibration_drop`` trust event per
judge that just fell from gating to advisory. A later check that still finds it below
the floor appends nothing. :func:`judge_standing` answers whether a judge is gating.

The floor is ``ARBITER_TRUST_KAPPA_FLOOR``; the measurability floor is calibration's
own minimum of pairs.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from arbiter.config import Settings
from arbiter.contract.trust import TrustEvent
from arbiter.judges.calibration import MIN_PAIRS, CalibrationReport
from arbiter.store import Store
from arbiter.store.trust_repository import append_event
from arbiter.store.trust_settings_repository import deployment_setting, save_deployment_setting
from arbiter.trust.calibration_edge import CalibrationReading, Standing, calibration_edges

__all__ = [
    "STANDING_KEY",
    "check_calibration",
    "check_calibration_quietly",
    "judge_standing",
    "judge_standings",
]

log = logging.getLogger(__name__)

STANDING_KEY = "judge_calibration_standing"
"""The deployment setting holding each judge's standing, as the last check left it."""


def judge_standings(store: Store) -> dict[tuple[str, str], Standing]:
    """Each (judge, dimension)'s standing as the last check left it."""
    found = deployment_setting(store, STANDING_KEY)
    standings: dict[tuple[str, str], Standing] = {}
    if found is None:
        return standings
    for entry in found[0].get("standings", []):
        if (
            isinstance(entry, list)
            and len(entry) == 3
            and all(isinstance(part, str) for part in entry)
            and entry[2] in ("gating", "advisory")
        ):
            standings[(entry[0], entry[1])] = entry[2]
    return standings


def judge_standing(store: Store, judge: str, dimension: str) -> Standing | None:
    """A judge's standing on a dimension; None: no check has measured it yet."""
    return judge_standings(store).get((judge, dimension))


def check_calibration(
    store: Store,
    *,
    report: CalibrationReport | None = None,
    floor: float | None = None,
    settings: Settings | None = None,
    now: datetime | None = None,
) -> list[TrustEvent]:
    """Check every judge's calibration and record the drops below the floor.

    Args:
        store: The store (its annotations and votes, the standings, the inbox).
        report: A calibration over every stored label already computed (default:
            calibrated here, votes included).
        floor: The kappa floor (default: ``ARBITER_TRUST_KAPPA_FLOOR``).
        settings: Where the floor is read from (default: the environment).
        now: When (default: now).

    Returns:
        The ``calibration_drop`` events appended (none when no judge fell).
    """
    if floor is None:
        floor = (settings or Settings()).trust_kappa_floor
    if report is None:
        from arbiter.service.calibration import calibrate_store

        report = calibrate_store(store, n_resamples=1)  # kappa itself needs no resample
    now = now or datetime.now(UTC)
    readings = [
        CalibrationReading(j.judge, j.dimension, j.kappa.value, j.n_pairs) for j in report.judges
    ]
    before = judge_standings(store)
    after, drops = calibration_edges(before, readings, floor=floor, min_pairs=MIN_PAIRS)
    if after != before:
        entries = [[judge, dimension, value] for (judge, dimension), value in sorted(after.items())]
        save_deployment_setting(
            store, STANDING_KEY, {"standings": entries}, by="calibration check", now=now
        )
    events = []
    for drop in drops:
        kappa = "undefined" if drop.kappa != drop.kappa else f"{drop.kappa:.3f}"
        events.append(
            append_event(
                store,
                kind="calibration_drop",
                severity="warning",
                agent=drop.judge,
                owner=None,
                record_kind="judge",
                record_id=f"{drop.judge}/{drop.dimension}"[:200],
                message=(
                    f"judge {drop.judge[:200]} on {drop.dimension[:200] or '(any)'}: kappa "
                    f"{kappa} over {drop.n_pairs} pairs fell below the floor {drop.floor:g}; "
                    "it is advisory again"
                ),
                details={
                    "judge": drop.judge,
                    "dimension": drop.dimension,
                    "kappa": None if drop.kappa != drop.kappa else drop.kappa,
                    "n_pairs": drop.n_pairs,
                    "floor": drop.floor,
                    "standing": "advisory",
                },
                now=now,
            )
        )
    return events


def check_calibration_quietly(store: Store, *, settings: Settings | None = None) -> None:
    """:func:`check_calibration` after a new label, never raising: a failure is a log line
    and the label it follows stays recorded."""
    try:
        check_calibration(store, settings=settings)
    except Exception as exc:
        log.warning("calibration check skipped: %s", exc)
