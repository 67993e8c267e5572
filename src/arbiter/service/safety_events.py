"""Safety events in the assurance inbox: red-team failures and tool-result firewall flags.

- :func:`record_redteam_failures`: one ``redteam_failure`` event (danger) per breached
  run of a live red-team, pointing at the red-team run (``record_kind="redteam_run"``)
  with the case, the breaches and the run's trajectory in its details.
- :func:`record_firewall_events`: one ``firewall_flag`` event (warning) per stored run
  with a tool result that carries an injection, pointing at the stored run
  (``record_kind="trajectory"``); the firewall only observes, so the run itself is
  stored and scored unchanged. A run stored again under its id (a trace exported
  again) adds no second event.

Messages and details hold untrusted text (agent and tool names, previews): whoever
shows them escapes them, as the inbox's page and terminal do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from arbiter.contract import StoredTrajectory, Trajectory, run_hash
from arbiter.contract.redteam import LiveRun
from arbiter.safety.firewall import firewall_flags
from arbiter.store import Store
from arbiter.store.trust_judging_repository import event_recorded
from arbiter.store.trust_repository import append_event

__all__ = ["MAX_ATTACHED_CHARS", "record_firewall_events", "record_redteam_failures"]

MAX_ATTACHED_CHARS = 200_000
"""Longest trajectory (as JSON) attached to an event whole; a longer one is referred to
by its hash only."""

_log = logging.getLogger(__name__)
_SHOWN = 200


def _attached(trajectory: Trajectory | None) -> dict[str, object]:
    if trajectory is None:
        return {"trajectory": None}
    document = trajectory.model_dump(mode="json")
    size = len(json.dumps(document, ensure_ascii=False))
    attached: dict[str, object] = {"trajectory_sha256": run_hash(trajectory)}
    if size <= MAX_ATTACHED_CHARS:
        attached["trajectory"] = document
    else:
        attached["trajectory"] = None
        attached["trajectory_note"] = (
            f"not attached: {size} characters of JSON, over {MAX_ATTACHED_CHARS}"
        )
    return attached


def record_redteam_failures(
    store: Store, runs: Sequence[LiveRun], *, run_id: str, agent: str, owner: str | None
) -> list[LiveRun]:
    """Record each breached run as a ``redteam_failure`` event; the runs, each breached
    one with its ``event_id`` set (failed runs are returned as they were: they say
    nothing of the guards).

    Raises:
        StoreUnavailable: The database refused the write.
    """
    recorded: list[LiveRun] = []
    for run in runs:
        if run.status != "breached":
            recorded.append(run)
            continue
        checks = ", ".join(dict.fromkeys(breach.check for breach in run.breaches))
        name = run.agent or agent
        event = append_event(
            store,
            kind="redteam_failure",
            severity="danger",
            agent=name,
            owner=owner,
            message=(
                f"red-team case {run.case_id} ({run.category}) run {run.repetition + 1}: "
                f"{checks}; {run.breaches[0].detail[:_SHOWN]}"
            ),
            record_kind="redteam_run",
            record_id=run_id,
            details={
                "case": run.case_id,
                "category": run.category,
                "repetition": run.repetition,
                "breaches": [breach.model_dump(mode="json") for breach in run.breaches],
                **_attached(run.trajectory),
            },
        )
        recorded.append(run.model_copy(update={"event_id": event.id}))
    return recorded


def record_firewall_events(
    store: Store, records: Sequence[StoredTrajectory], *, owner: str | None
) -> list[int]:
    """Record a ``firewall_flag`` event for each stored run a tool result of which
    carries an injection; the events' ids. Never raises: storing the runs stands
    whatever happens here (a failure is logged).
    """
    ids: list[int] = []
    for record in records:
        trajectory = record.trajectory
        if trajectory is None:
            continue
        try:
            flags, _ = firewall_flags(trajectory)
            if not flags or event_recorded(store, "firewall_flag", record.id, owner=owner):
                continue
            first = flags[0]
            categories = ", ".join(dict.fromkeys(c for flag in flags for c in flag.categories))
            event = append_event(
                store,
                kind="firewall_flag",
                severity="warning",
                agent=record.agent,
                owner=owner,
                message=(
                    f"{len(flags)} tool result{'' if len(flags) == 1 else 's'} of run {record.id} "
                    f"{'carries' if len(flags) == 1 else 'carry'} an injection "
                    f"(observe only): {first.where} of {(first.tool or 'a tool')[:_SHOWN]}; "
                    f"{categories[:_SHOWN]}"
                ),
                record_kind="trajectory",
                record_id=record.id,
                details={"flags": [flag.model_dump(mode="json") for flag in flags]},
            )
            ids.append(event.id)
        except Exception as exc:  # the ingest stands: the event is what is lost
            _log.warning("could not record the firewall event of run %s: %s", record.id, exc)
    return ids
