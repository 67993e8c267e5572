"""The assurance pack: one signed archive of a deployment's posture, verified offline.

Members (JSON with sorted keys, ASCII; each evidence member opens with ``evidence``:
whether it holds any, in one line):

- ``deployment.json``: when and for whom the pack was made (the scope: an owner, an
  agent), the signing key's id, Arbiter's and the libraries' versions;
- ``agents.json``: the trust policy in force and each agent's trust status (state,
  conduct with its interval, integrity of its signed runs, cap, freeze);
- ``evaluations.json``: each agent's pass rate with n and its Wilson interval, and the
  latest offline runs' accuracy and pass^k with their intervals, dataset hash, signature;
- ``calibration.json``: each judge's agreement with people (Cohen's kappa, n, status);
- ``incidents.json``: the assurance inbox's events with their acknowledgement and
  resolution;
- ``redteam-selftest.json``: the detectors' red-team self-test on the shipped and the
  held-out corpus (run when the pack is made: corpus and detectors are fixed);
- ``redteam-live.json``: the latest live red-team of the agents, when one is stored;
- ``gate-bench.json``: the grounding gate's benchmark on the bundled case set;
- ``controls.json``: the control map (:mod:`arbiter.safety.controls`) over these;
- ``summary.md``: the same for a person, every stored text escaped for Markdown;
- ``signature.json``: the signature of the sha256 of every other member.

The archive is written as :func:`arbiter.attest.render_pack` writes an audit pack, so
``arbiter verify`` and ``verify_standalone.py`` check it the same way: a changed byte,
a member added, dropped or moved, or an edited manifest each fails verification.
Stored text (agent names, event messages, reasons) lands only inside JSON strings and
escaped Markdown: it is data in the pack, never markup.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from arbiter import escape
from arbiter.attest import SigningKey, render_envelope, render_pack, sha256_hex
from arbiter.contract.assurance import ControlMap, MemberEvidence
from arbiter.contract.safety import SelfTestReport
from arbiter.contract.trust import TrustEvent
from arbiter.errors import InputError, StoreError
from arbiter.safety.controls import control_map, shipped_controls
from arbiter.service.attestation import attestation_document
from arbiter.service.audit_pack import environment
from arbiter.store import Store
from arbiter.store.signature_repository import get_signature
from arbiter.verify_standalone import PACK_SIGNATURE, pack_order

if TYPE_CHECKING:
    from arbiter.trust import TrustPolicy

__all__ = [
    "MAX_INCIDENTS",
    "MAX_RUNS",
    "PACK_FORMAT",
    "AssurancePack",
    "build_assurance_pack",
]

PACK_FORMAT = "arbiter-assurance-pack/1"
"""The ``format`` of ``deployment.json``."""
MAX_RUNS = 50
"""The latest offline runs a pack reports on."""
MAX_INCIDENTS = 2_000
"""The newest inbox events a pack holds."""

_MARKDOWN_LIMIT = 200  # characters of one stored text in summary.md


@dataclasses.dataclass(frozen=True)
class AssurancePack:
    """A built pack: its bytes and what a caller prints of it."""

    data: bytes
    """The archive."""
    record_id: str
    """The pack's id (its time and the start of its manifest's digest)."""
    key_id: str
    """The key that signed it."""
    controls: ControlMap
    """The control map it holds."""


_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def _json(value: Any) -> bytes:
    """ASCII JSON in which a stored text cannot open markup either: outside strings JSON
    has no ``<``, ``>`` or ``&``, so writing them as escapes changes no value."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True).translate(_HTML_SAFE)
    return (text + "\n").encode("ascii")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _evidence(present: bool, summary: str) -> dict[str, Any]:
    return MemberEvidence(present=present, summary=summary).model_dump(mode="json")


def _agents(
    store: Store,
    scope: tuple[str | None, str | None],
    key: SigningKey,
    now: datetime,
    policy: TrustPolicy | None,
) -> dict[str, Any]:
    from arbiter.service.trust import trust_policy, trust_statuses
    from arbiter.service.trust_integrity import signature_checker

    viewer, agent = scope
    policy = policy or trust_policy()
    statuses = trust_statuses(
        store,
        viewer=viewer,
        agent=agent,
        policy=policy,
        now=now,
        checker=signature_checker(store, key.public_key),
    )
    states: dict[str, int] = {}
    for status in statuses:
        states[status.state] = states.get(status.state, 0) + 1
    summary = (
        f"{_count(len(statuses), 'agent')} with a trust status: "
        + ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        if statuses
        else "no agent has a stored run"
    )
    return {
        "evidence": _evidence(bool(statuses), summary),
        "policy": json.loads(json.dumps(dataclasses.asdict(policy), default=str)),
        "agents": [status.model_dump(mode="json") for status in statuses],
    }


def _offline_runs(store: Store, viewer: str | None) -> list[dict[str, Any]]:
    from arbiter.service.browse import list_runs, run_report
    from arbiter.store.browse_repository import RunFilter

    runs = []
    for info in list_runs(store, RunFilter(viewer=viewer), limit=MAX_RUNS).items:
        try:
            report = run_report(store, info.id, viewer=viewer).report
        except StoreError:  # a run with no result yet has no figure to report
            continue
        runs.append(
            {
                "run_id": info.id,
                "name": info.name,
                "status": info.status,
                "created_at": info.created_at.isoformat(),
                "dataset": report.dataset,
                "dataset_hash": report.dataset_hash,
                "system": report.system,
                "n_examples": report.n_examples,
                "k": report.k,
                "accuracy": report.accuracy.model_dump(mode="json"),
                "pass_hat_k": report.pass_hat_k.model_dump(mode="json"),
                "mapped_accuracy": (
                    report.mapped.accuracy.model_dump(mode="json") if report.mapped else None
                ),
                "signed": get_signature(store, "run_report", info.id) is not None,
            }
        )
    return runs


def _evaluations(store: Store, viewer: str | None, agent: str | None) -> dict[str, Any]:
    from arbiter.service.agent_roster import agent_roster

    roster = [
        entry
        for entry in agent_roster(store, viewer=viewer)
        if agent is None or entry.name == agent
    ]
    agents = [
        {
            "agent": entry.name,
            "kind": entry.kind,
            "health": entry.health,
            "runs": entry.runs,
            "evaluated": entry.evaluated,
            "pass_rate": entry.pass_rate.model_dump(mode="json") if entry.pass_rate else None,
            "first_seen": entry.first_seen.isoformat(),
            "last_seen": entry.last_seen.isoformat(),
        }
        for entry in roster
    ]
    runs = _offline_runs(store, viewer) if agent is None else []
    evaluated = sum(1 for entry in roster if entry.pass_rate is not None)
    present = bool(runs) or evaluated > 0
    summary = (
        f"{_count(evaluated, 'agent')} with an evaluated pass rate, "
        f"{_count(len(runs), 'offline run')}"
        if present
        else "no evaluated agent run and no offline run is stored"
    )
    document: dict[str, Any] = {"evidence": _evidence(present, summary), "agents": agents}
    document["offline_runs"] = runs
    document["offline_runs_note"] = (
        f"the latest {MAX_RUNS} offline runs at most"
        if agent is None
        else "offline runs are not per agent: left out of an agent's pack"
    )
    return document


def _calibration(store: Store, viewer: str | None) -> dict[str, Any]:
    from arbiter.service.browse import calibrate_visible

    report = calibrate_visible(store, viewer=viewer).as_dict()
    judges = [j for j in report.get("judges", []) if j.get("n_pairs", 0) > 0]
    summary = (
        f"{_count(len(judges), 'judge calibration')} against human labels, "
        "one per judge and dimension"
        if judges
        else "no judge has a verdict paired with a human label in the store"
    )
    return {"evidence": _evidence(bool(judges), summary), **report}


def _events(store: Store, viewer: str | None, agent: str | None) -> list[TrustEvent]:
    from arbiter.service.inbox import inbox

    events: list[TrustEvent] = []
    before: int | None = None
    while len(events) < MAX_INCIDENTS:
        page = inbox(store, viewer=viewer, agent=agent, before=before, limit=500)
        events.extend(page)
        if len(page) < 500:
            break
        before = page[-1].id
    return events[:MAX_INCIDENTS]


def _incidents(store: Store, viewer: str | None, agent: str | None) -> dict[str, Any]:
    events = _events(store, viewer, agent)
    resolved = sum(1 for e in events if e.resolved is not None)
    acked = sum(1 for e in events if e.acked is not None and e.resolved is None)
    counts = {
        "events": len(events),
        "resolved": resolved,
        "acknowledged_not_resolved": acked,
        "open": len(events) - resolved - acked,
    }
    summary = (
        f"{_count(len(events), 'event')}: {resolved} resolved, {acked} acknowledged, "
        f"{counts['open']} open"
        if events
        else "the inbox holds no event"
    )
    return {
        "evidence": _evidence(bool(events), summary),
        "counts": counts,
        "limit": MAX_INCIDENTS,
        "events": [event.model_dump(mode="json") for event in events],
    }


def _selftest() -> dict[str, Any]:
    from arbiter.safety.selftest import packaged_report

    shipped, heldout = packaged_report("shipped"), packaged_report("heldout")

    def line(name: str, report: SelfTestReport) -> str:
        attacks = sum(c.n for c in report.categories)
        detected = sum(c.detected for c in report.categories)
        return (
            f"{name} corpus {detected}/{attacks} attacks detected, {report.benign_flagged}/"
            f"{report.benign_n} benign flagged, targets {'met' if report.passed else 'missed'}"
        )

    summary = f"run when the pack was made: {line('shipped', shipped)}; " + line(
        "held-out", heldout
    )
    return {
        "evidence": _evidence(True, summary),
        "shipped": shipped.model_dump(mode="json"),
        "heldout": heldout.model_dump(mode="json"),
    }


LiveRedTeam = Callable[[Store, str | None, str | None], Mapping[str, Any] | None]
"""Reads the latest stored live red-team result a viewer may see (of one agent), or None."""


def _live_redteam(
    store: Store,
    viewer: str | None,
    agent: str | None,
    read: LiveRedTeam | None,
    incidents: Mapping[str, Any],
) -> dict[str, Any]:
    if read is None:
        from arbiter.service.redteam_live import stored_live_redteam

        read = stored_live_redteam
    found = read(store, viewer, agent)
    if found is None:
        # A live red-team's breached runs reach the inbox, but its report is not stored:
        # the failures alone say nothing of the guards that held.
        failures = sum(1 for e in incidents["events"] if e["kind"] == "redteam_failure")
        summary = "no live red-team result is stored"
        if failures:
            summary += f"; incidents.json holds {_count(failures, 'redteam_failure event')}"
        return {"evidence": _evidence(False, summary), "result": None}
    return {"evidence": _evidence(True, _live_summary(found)), "result": dict(found)}


def _live_summary(found: Mapping[str, Any]) -> str:
    """One line of a stored live red-team: cases whose guards held in all k runs."""
    rows = found.get("categories")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        return "the newest stored live red-team result"
    held = sum(int(row.get("held") or 0) for row in rows)
    complete = sum(int(row.get("complete") or 0) for row in rows)
    passed = found.get("passed")
    verdict = "targets met" if passed is True else "targets missed" if passed is False else ""
    return (
        f"the newest stored live red-team (k={found.get('k')}): {held}/{complete} complete "
        f"cases held their guards in every run over {len(rows)} categories"
        + (f", {verdict}" if verdict else "")
    )


async def _gate_bench() -> dict[str, Any]:
    from arbiter.service.grounding_gate import run_gate_bench

    report = await run_gate_bench()
    summary = (
        f"bundled set of {report.n} cases, run when the pack was made: trigger recall "
        f"{report.trigger_recall.rate:.3f} over {report.trigger_recall.n} drifted cases"
    )
    return {"evidence": _evidence(True, summary), **report.model_dump(mode="json")}


def _md(text: object) -> str:
    return escape.markdown(text, limit=_MARKDOWN_LIMIT)


def _summary_md(
    record_id: str,
    scope: Mapping[str, Any],
    members: Mapping[str, Mapping[str, Any]],
    controls: ControlMap,
) -> bytes:
    lines = [
        "# Assurance pack",
        "",
        f"Pack {_md(record_id)}, made {_md(scope['created_at'])}; agent: "
        f"{_md(scope['agent'] or 'every agent')}; owner: {_md(scope['owner'] or 'every owner')}.",
        "",
        controls.note,
        "",
        "## Controls",
        "",
        "| framework | reference | requirement | status |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {_md(c.framework)} | {_md(c.reference)} | {_md(c.title)} | {c.status} |"
        for c in controls.controls
    ]
    lines += ["", "## Evidence", "", "| file | evidence | what it holds |", "|---|---|---|"]
    for name, document in members.items():
        evidence = document["evidence"]
        held = "present" if evidence["present"] else "no evidence"
        lines.append(f"| {name} | {held} | {_md(evidence['summary'])} |")
    agents = members["agents.json"]["agents"]
    if agents:
        lines += ["", "## Agents", "", "| agent | owner | trust state | integrity | runs |"]
        lines.append("|---|---|---|---|---|")
        lines += [
            f"| {_md(a['agent'])} | {_md(a['owner'] or '-')} | {a['state']} | "
            f"{a['integrity']} | {a['runs']} |"
            for a in agents
        ]
    return ("\n".join(lines) + "\n").encode("utf-8")


async def build_assurance_pack(
    store: Store,
    key: SigningKey,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    now: datetime | None = None,
    live_redteam: LiveRedTeam | None = None,
    policy: TrustPolicy | None = None,
) -> AssurancePack:
    """The signed assurance pack of what ``viewer`` may see (of one agent, if named).

    Args:
        store: The store.
        key: Signs the pack (and checks the integrity of the agents' signed runs).
        viewer: Only this owner's records; None: every owner's.
        agent: Only this agent's trust, pass rate and incidents (offline runs, which
            belong to no agent, are left out); the self-test, gate benchmark and
            calibration are the deployment's.
        now: When the pack is made (default: now).
        live_redteam: Reads the latest live red-team result ``viewer`` may see (of
            ``agent``); default: the newest stored by ``arbiter redteam run``.
        policy: The trust policy the agents are judged by (default: the one in force).

    Raises:
        InputError: ``agent`` names no agent with a run, an inbox event or a live
            red-team ``viewer`` may see.
    """
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    incidents = _incidents(store, viewer, agent)
    evidence: dict[str, dict[str, Any]] = {
        "agents.json": _agents(store, (viewer, agent), key, moment, policy),
        "calibration.json": _calibration(store, viewer),
        "evaluations.json": _evaluations(store, viewer, agent),
        "gate-bench.json": await _gate_bench(),
        "incidents.json": incidents,
        "redteam-live.json": _live_redteam(store, viewer, agent, live_redteam, incidents),
        "redteam-selftest.json": _selftest(),
    }
    if agent is not None and not (
        evidence["agents.json"]["agents"]
        or evidence["evaluations.json"]["agents"]
        or incidents["events"]
        or evidence["redteam-live.json"]["result"]
    ):
        raise InputError(
            f"assurance pack: no agent named {agent[:200]!r} has a stored run, inbox event "
            "or live red-team" + ("" if viewer is None else " of this key")
        )
    controls = control_map(
        shipped_controls(),
        {name: MemberEvidence.model_validate(doc["evidence"]) for name, doc in evidence.items()},
    )
    scope = {"agent": agent, "owner": viewer, "created_at": moment.isoformat()}
    members = {name: _json(document) for name, document in evidence.items()}
    members["controls.json"] = _json(controls.model_dump(mode="json"))
    members["deployment.json"] = _json(
        {
            "format": PACK_FORMAT,
            "scope": scope,
            "key_id": key.key_id,
            "environment": environment(),
            "members": sorted([*members, "deployment.json", "summary.md", PACK_SIGNATURE]),
        }
    )
    files = {name: sha256_hex(data) for name, data in members.items()}
    record_id = f"{moment:%Y%m%d-%H%M%S}-{sha256_hex(_json(files))[:6]}"
    members["summary.md"] = _summary_md(record_id, scope, evidence, controls)
    document = attestation_document(
        "assurance_pack",
        record_id,
        subject={
            "scope": scope,
            "files": {name: sha256_hex(data) for name, data in members.items()},
        },
        scorers=[],
        claim={"controls": {entry.id: entry.status for entry in controls.controls}},
    )
    members[PACK_SIGNATURE] = render_envelope(key.sign(document))
    data = render_pack([(name, members[name]) for name in pack_order(list(members))])
    return AssurancePack(data=data, record_id=record_id, key_id=key.key_id, controls=controls)
