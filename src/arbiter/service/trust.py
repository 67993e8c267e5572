"""Trust per agent as library calls: status, the breaker on ingest, freezes, history.

An agent is a name *of an owner* (the API key that stored its runs; None for runs
stored at the terminal): two keys' agents of one name are judged apart and never merge.
The pure rules live in :mod:`arbiter.trust`; this module reads the evidence from the
store, keeps the breaker's memory there (so a restart does not trip again), records
events and freezes, and sends webhooks.

Its settings are the ``trust_*`` fields of :class:`~arbiter.config.Settings`
(``ARBITER_TRUST_*`` variables): the policy file, the webhook URLs and their secret.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from arbiter.config import Settings
from arbiter.contract import StoredTrajectory
from arbiter.contract.trust import (
    Freeze,
    Integrity,
    RunEvidence,
    SignatureCheck,
    TrustEvent,
    TrustStatus,
)
from arbiter.errors import InputError, StoreError
from arbiter.service import webhooks
from arbiter.store import Store
from arbiter.store.trust_repository import (
    AgentKey,
    WindowRow,
    add_freeze,
    agent_window,
    append_event,
    breaker_inputs,
    latest_freeze,
    list_events,
    list_freezes,
    save_breaker,
    standing_freezes,
    trust_evidence,
    window_evidence,
)
from arbiter.store.trust_summary import AgentSummary, agent_summaries, run_ids
from arbiter.trust import TrustPolicy, assess, breaker_decision, default_policy, load_policy
from arbiter.trust.assess import status_of
from arbiter.trust.conduct import conduct_of_columns, window_state
from arbiter.trust.integrity import integrity_of

if TYPE_CHECKING:
    import httpx
    from numpy.typing import NDArray

    from arbiter.telemetry import Telemetry

__all__ = [
    "HistoryItem",
    "agent_trust",
    "current_settings",
    "evaluate_breaker",
    "is_frozen",
    "statuses_of",
    "summary_status",
    "trust_history",
    "trust_policy",
    "trust_statuses",
    "unfreeze_agent",
]

log = logging.getLogger(__name__)


_CURRENT: tuple[tuple[object, ...], Settings] | None = None


def _environment() -> tuple[object, ...]:
    """What :class:`Settings` are read from: the working directory, its ``.env`` file
    (size and time of change) and the ``ARBITER_*`` variables (any case)."""
    folder = os.getcwd()
    try:
        found = os.stat(os.path.join(folder, ".env"))
        dotenv: tuple[int, int] | None = (found.st_size, found.st_mtime_ns)
    except OSError:
        dotenv = None
    names = sorted((k, v) for k, v in os.environ.items() if k.upper().startswith("ARBITER_"))
    return folder, dotenv, tuple(names)


def current_settings() -> Settings:
    """``Settings()`` as the environment gives them now, built again only when what they
    are read from changed (building them reads the ``.env`` file and every variable, a
    cost the ingest path would otherwise pay on every request)."""
    global _CURRENT
    key = _environment()
    held = _CURRENT
    if held is not None and held[0] == key:
        return held[1]
    built = Settings()
    _CURRENT = (key, built)
    return built


def trust_policy(settings: Settings | None = None) -> TrustPolicy:
    """The policy in force: the configured file, else the shipped one.

    Raises:
        InputError: The configured file is not a valid policy.
    """
    path = (settings or Settings()).trust_policy
    return load_policy(path) if path is not None else default_policy()


def is_frozen(store: Store, agent: str, *, owner: str | None) -> Freeze | None:
    """The agent's standing freeze, or None when it is not frozen."""
    found = latest_freeze(store, owner, agent)
    return found if found is not None and found.frozen else None


SignatureChecker = Callable[[str], SignatureCheck]
"""Checks one stored run's signature (see :mod:`arbiter.service.trust_integrity`)."""


def _integrity(run_ids: Sequence[str], checker: SignatureChecker | None) -> Integrity:
    if checker is None:
        return "unknown"
    return integrity_of([checker(run_id) for run_id in run_ids], key_configured=True)


def trust_statuses(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    owner: str | bool | None = False,
    policy: TrustPolicy | None = None,
    now: datetime | None = None,
    checker: SignatureChecker | None = None,
    from_rows: bool = False,
) -> list[TrustStatus]:
    """The trust status of every agent (of every owner) ``viewer`` may see, by name.

    It is computed from the agents' summaries (kept on ingest), or from the stored runs
    when ``from_rows`` or when the policy's window is larger than a summary keeps: the
    same statuses either way.

    Args:
        store: The store.
        viewer: Only agents of this owner; None: every owner's.
        agent: Only agents of this name.
        owner: Only this owner's agents (None: runs nobody owns); False: any owner.
        policy: The policy (default: the one in force).
        now: When they are judged (default: now).
        checker: Checks a run's signature under the configured key; None (no key):
            integrity unknown.
        from_rows: Read the stored runs, not the summaries.
    """
    policy = policy or trust_policy()
    now = now or datetime.now(UTC)
    if not from_rows:
        summaries = agent_summaries(store, viewer=viewer, agent=agent, owner=owner)
        if all(s.covers(policy.window_runs) for s in summaries.values()):
            return _statuses_of_summaries(store, summaries, policy, now, checker)
    evidence = trust_evidence(
        store,
        names=policy.trust_critical,
        viewer=viewer,
        agent=agent,
        owner=owner,
        window=policy.window_runs,
    )
    return statuses_of(store, evidence, policy=policy, now=now, checker=checker)


def summary_status(
    summary: AgentSummary,
    policy: TrustPolicy,
    now: datetime,
    integrity: Integrity = "unknown",
) -> TrustStatus:
    """The status of one agent from its summary (which must cover the policy's window):
    the status :func:`~arbiter.trust.assess` gives for its rows."""
    window = policy.window_runs
    columns = summary.columns(window, frozenset(policy.trust_critical))
    conduct = conduct_of_columns(
        *columns, summary.abstained, summary.newest_at(window), policy, now=now
    )
    return status_of(
        summary.agent, conduct, policy, now=now, integrity=integrity, owner=summary.owner
    )


def _statuses_of_summaries(
    store: Store,
    summaries: Mapping[AgentKey, AgentSummary],
    policy: TrustPolicy,
    now: datetime,
    checker: SignatureChecker | None,
) -> list[TrustStatus]:
    freezes = standing_freezes(store)
    statuses: list[TrustStatus] = []
    for key in sorted(summaries, key=lambda k: (k[1], k[0] or "")):
        summary = summaries[key]
        integrity: Integrity = "unknown"
        if checker is not None:
            ids = run_ids(store, summary.window_seqs(policy.window_runs))
            integrity = _integrity(ids, checker)
        status = summary_status(summary, policy, now, integrity)
        standing = freezes.get(key)
        statuses.append(_with_freeze(status, standing if standing and standing.frozen else None))
    return statuses


def statuses_of(
    store: Store,
    evidence: Mapping[AgentKey, Sequence[RunEvidence]],
    *,
    policy: TrustPolicy,
    now: datetime,
    checker: SignatureChecker | None = None,
) -> list[TrustStatus]:
    """The trust status of each agent of ``evidence`` (as :func:`trust_evidence` reads it
    for ``policy``), with its standing freeze, by name: what :func:`trust_statuses` gives,
    for a caller that reads the evidence itself (the fleet page reads it once for the
    statuses and the dimensions)."""
    freezes = standing_freezes(store)
    statuses: list[TrustStatus] = []
    for (run_owner, name), items in sorted(
        evidence.items(), key=lambda kv: (kv[0][1], kv[0][0] or "")
    ):
        integrity: Integrity = "unknown"
        if checker is not None:
            window = sorted(
                (e for e in items if e.passed is not None),
                key=lambda e: (e.at, e.run_id),
                reverse=True,
            )[: policy.window_runs]
            integrity = _integrity([e.run_id for e in window], checker)
        status = assess(name, items, policy, now=now, integrity=integrity, owner=run_owner)
        standing = freezes.get((run_owner, name))
        statuses.append(_with_freeze(status, standing if standing and standing.frozen else None))
    return statuses


def _with_freeze(status: TrustStatus, frozen: Freeze | None) -> TrustStatus:
    if frozen is None:
        return status
    reasons = [*status.reasons, f"frozen by {frozen.by}: {frozen.reason}"]
    return status.model_copy(update={"frozen": True, "autonomous": False, "reasons": reasons})


def agent_trust(
    store: Store,
    name: str,
    *,
    owner: str | None,
    policy: TrustPolicy | None = None,
    now: datetime | None = None,
    checker: SignatureChecker | None = None,
) -> TrustStatus | None:
    """One agent's trust status (of ``owner``), or None when it has no run and no freeze."""
    found = trust_statuses(store, agent=name, owner=owner, policy=policy, now=now, checker=checker)
    if found:
        return found[0]
    if latest_freeze(store, owner, name) is None:
        return None
    empty = assess(name, [], policy or trust_policy(), now=now or datetime.now(UTC), owner=owner)
    return _with_freeze(empty, is_frozen(store, name, owner=owner))


class BreakerOutcome(BaseModel):
    """What the breaker did for one agent after an ingest."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    owner: str | None = None
    state: str
    tripped: bool = False
    action: str = "none"
    event_id: int | None = None
    elapsed_ms: float = 0.0


async def evaluate_breaker(
    store: Store,
    records: Sequence[StoredTrajectory],
    *,
    owner: str | None,
    policy: TrustPolicy | None = None,
    settings: Settings | None = None,
    now: datetime | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    telemetry: Telemetry | None = None,
) -> list[BreakerOutcome]:
    """Run the breaker for the agents of just-stored runs; never raises.

    Any failure is a log line: ingest is never touched by the breaker. A trip is an
    OpenTelemetry event (on a span of ``telemetry``'s, else on the current span).
    """
    try:
        settings = settings or current_settings()
        policy = policy or trust_policy(settings)
    except Exception as exc:
        log.warning("trust breaker skipped: %s", exc)
        return []
    outcomes: list[BreakerOutcome] = []
    for name in dict.fromkeys(r.agent for r in records):
        try:
            outcomes.append(
                _breaker_for(
                    store,
                    name,
                    owner,
                    policy,
                    settings,
                    now or datetime.now(UTC),
                    transport,
                    telemetry,
                )
            )
        except Exception as exc:
            log.warning("trust breaker failed for agent %r: %s", name[:200], exc)
    return outcomes


def window_columns(
    rows: Sequence[WindowRow], critical: frozenset[str]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The columns (:func:`~arbiter.trust.conduct.columns_of`) of a window read by
    :func:`~arbiter.store.trust_repository.agent_window`, without building its evidence."""
    times: dict[int, float] = {}
    passes: dict[int, float] = {}
    dim_passes: dict[int, float] = {}
    dim_decided: dict[int, float] = {}
    for seq, _run_id, at, passed, name, verdict in rows:
        if seq not in times:
            aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
            times[seq] = aware.timestamp()
            passes[seq] = 1.0 if passed else 0.0
            dim_passes[seq] = dim_decided[seq] = 0.0
        if name is not None and verdict is not None and name in critical:
            dim_decided[seq] += 1.0
            if verdict:
                dim_passes[seq] += 1.0
    count = len(times)
    return (
        np.fromiter(times.values(), np.float64, count),
        np.fromiter(passes.values(), np.float64, count),
        np.fromiter(dim_passes.values(), np.float64, count),
        np.fromiter(dim_decided.values(), np.float64, count),
    )


def _breaker_for(
    store: Store,
    name: str,
    owner: str | None,
    policy: TrustPolicy,
    settings: Settings,
    now: datetime,
    transport: httpx.AsyncBaseTransport | None,
    telemetry: Telemetry | None = None,
) -> BreakerOutcome:
    started = time.perf_counter()
    summary, memory = breaker_inputs(store, owner, name)
    if summary is not None and summary.covers(policy.window_runs):
        # The state alone decides; the full status is only built for a trip's event.
        window = policy.window_runs
        columns = summary.columns(window, frozenset(policy.trust_critical))
        state = window_state(*columns, policy, now)
        rows = None
    else:
        rows = agent_window(
            store, agent=name, owner=owner, names=policy.trust_critical, size=policy.window_runs
        )
        state = window_state(*window_columns(rows, frozenset(policy.trust_critical)), policy, now)
    mode = policy.mode_for(name)
    decision = breaker_decision(memory, state, mode)
    if decision.memory != memory:
        save_breaker(store, owner, name, decision.memory, state, now=now)
    outcome = BreakerOutcome(agent=name, owner=owner, state=state)
    if decision.trip:
        if rows is None and summary is not None:
            status = summary_status(summary, policy, now)
        else:
            status = assess(name, window_evidence(rows or []), policy, now=now, owner=owner)
        shown = f"{status.conduct:.3f}" if status.conduct is not None else "n/a"
        event = append_event(
            store,
            kind="breaker_trip",
            severity="danger",
            agent=name,
            owner=owner,
            message=(
                f"agent {name[:200]} fell to at_risk (conduct {shown} over "
                f"{status.runs} runs); breaker: {mode}"
            ),
            details={
                "mode": mode,
                "state": status.state,
                "conduct": status.conduct,
                "runs": status.runs,
                "interval": list(status.interval),
                "trips": decision.memory.trips,
            },
            now=now,
        )
        if decision.action == "freeze":
            add_freeze(
                store,
                Freeze(
                    agent=name,
                    owner=owner,
                    frozen=True,
                    by="breaker",
                    reason=f"fell to at_risk (trust event {event.id})",
                    at=now,
                ),
            )
        _telemetry_event(event, telemetry)
        secret = settings.trust_webhook_secret
        webhooks.dispatch(
            store,
            event,
            settings.trust_webhooks(),
            secret=secret.get_secret_value() if secret is not None else None,
            retries=settings.trust_webhook_retries,
            timeout=settings.trust_webhook_timeout_s,
            transport=transport,
        )
        outcome = outcome.model_copy(
            update={"tripped": True, "action": decision.action, "event_id": event.id}
        )
    elapsed = (time.perf_counter() - started) * 1000
    return outcome.model_copy(update={"elapsed_ms": elapsed})


def _telemetry_event(event: TrustEvent, telemetry: Telemetry | None) -> None:
    """Report the trip to OpenTelemetry: an ``arbiter.trust.breaker_trip`` event on a span
    of its own when ``telemetry`` is given, else on the current span when one records."""
    attributes: dict[str, str | int | float | bool] = {
        "arbiter.agent": event.agent[:200],
        "arbiter.trust_event.id": event.id,
        "arbiter.trust_event.kind": event.kind,
        "arbiter.trust_event.severity": event.severity,
        "arbiter.trust.reason": event.message[:500],
    }
    for key in ("mode", "state", "conduct", "runs"):
        value = event.details.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            attributes[f"arbiter.trust.{key}"] = value
    if event.owner is not None:
        attributes["arbiter.owner"] = event.owner
    if telemetry is not None and telemetry.enabled:
        with telemetry.span("arbiter.trust.breaker", {"arbiter.agent": event.agent[:200]}) as span:
            telemetry.event(span, "arbiter.trust.breaker_trip", attributes)
        return
    try:
        from opentelemetry import trace
    except ImportError:  # the telemetry extra is not installed
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event("arbiter.trust.breaker_trip", attributes)


def unfreeze_agent(
    store: Store, name: str, *, owner: str | None, by: str, reason: str, now: datetime | None = None
) -> Freeze:
    """Lift an agent's freeze, recorded with who and why.

    Raises:
        InputError: No reason given.
        StoreError: The agent is not frozen.
    """
    if not reason.strip():
        raise InputError("unfreeze needs a reason (--reason)")
    if is_frozen(store, name, owner=owner) is None:
        raise StoreError(f"agent {name[:200]!r} is not frozen")
    lifted = Freeze(
        agent=name, owner=owner, frozen=False, by=by, reason=reason, at=now or datetime.now(UTC)
    )
    add_freeze(store, lifted)
    append_event(
        store,
        kind="unfreeze",
        severity="info",
        agent=name,
        owner=owner,
        message=f"agent {name[:200]} unfrozen by {by[:200]}: {reason[:500]}",
        details={"by": by, "reason": reason},
        now=lifted.at,
    )
    return lifted


class HistoryItem(BaseModel):
    """One entry of an agent's trust history."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    """When."""
    kind: str
    """``event:<kind>``, ``freeze``, ``unfreeze``, ``review`` or ``state``."""
    summary: str
    """One line."""
    record_id: str | None = None
    """The record it points at."""


def trust_history(
    store: Store, name: str, *, owner: str | None, limit: int = 500
) -> list[HistoryItem]:
    """An agent's trust history in time order: events (state changes, trips, gate
    parks, webhook failures), freezes and unfreezes, and reviews of its parked answers."""
    items: list[HistoryItem] = []
    for event in list_events(store, viewer=None, agent=name, limit=limit):
        if event.owner != owner:
            continue
        items.append(
            HistoryItem(
                at=event.created_at,
                kind=f"event:{event.kind}",
                summary=event.message,
                record_id=event.record_id,
            )
        )
        if event.acked is not None:
            items.append(
                HistoryItem(
                    at=event.acked.at,
                    kind="ack",
                    summary=f"event {event.id} acknowledged by {event.acked.by}",
                    record_id=str(event.id),
                )
            )
    for freeze in list_freezes(store, owner, name):
        word = "frozen" if freeze.frozen else "unfrozen"
        items.append(
            HistoryItem(
                at=freeze.at,
                kind="freeze" if freeze.frozen else "unfreeze",
                summary=f"{word} by {freeze.by}: {freeze.reason}",
            )
        )
    parked_ids = {
        e.record_id
        for e in list_events(store, agent=name, kind="gate_park", limit=limit)
        if e.owner == owner and e.record_id
    }
    if parked_ids:
        from arbiter.store.gate_repository import load_gate_review

        for decision_id in sorted(parked_ids):
            review = load_gate_review(store, decision_id)
            if review is not None:
                items.append(
                    HistoryItem(
                        at=review.created_at,
                        kind="review",
                        summary=f"parked answer {review.resolution}d by {review.reviewer}",
                        record_id=decision_id,
                    )
                )
    items.sort(key=lambda item: item.at)
    return items[-limit:]
