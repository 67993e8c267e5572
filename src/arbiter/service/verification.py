"""Checking stored signatures: the signature itself, then what it signed against the store.

:func:`verify_stored` finds every signature of a run (its report and gate decisions), a
jury run or one verdict, checks each envelope, and re-derives the signed subject and
claim from the store as it is now: a changed output, score, report figure or verdict is
named by its example and field.

It also compares every stored copy a page or endpoint shows beside a signed record
with the record it repeats (:mod:`arbiter.store.signature_views`): a run's kept report,
outcome counts and ``summary``, the index of its dataset's examples, a stored agent
run's verdict, band and other columns and its per-scorer rows, and the claim digest kept
beside each signature. :func:`signed_kept_reports` is the pages' side of it: a kept
report that differs from its run's signed report is not shown (it is recomputed).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from arbiter.attest import Verification, digest_of, verify_envelope
from arbiter.contract import Case, StoredTrajectory, Verdict
from arbiter.contract.trajectory_records import run_hash
from arbiter.errors import InputError, StoreError
from arbiter.service.attestation import (
    grounding_parts,
    run_pairs,
    run_subject,
    trajectory_parts,
    verdict_parts,
    verdict_record_id,
)
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from arbiter.store.failures_repository import OutcomeCounts, count_outcomes
from arbiter.store.gate_repository import load_gate_decision
from arbiter.store.jury_repository import (
    get_jury_run,
    load_judged_cases,
    load_judgments,
)
from arbiter.store.report_repository import KeptReport
from arbiter.store.signature_repository import (
    claim_digest_of,
    claim_digests,
    find_signatures,
    get_signature,
    list_signatures,
    save_claim_digest,
    verdict_key,
)
from arbiter.store.signature_views import (
    dataset_index,
    kept_report_row,
    run_summary_column,
    trajectory_columns,
)
from arbiter.store.trajectory_repository import get_trajectory

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["signed_kept_reports", "verify_stored"]

log = logging.getLogger("arbiter.verification")
_RUN_SUBJECT_KEYS = ("run_id", "dataset_hash", "dataset_name", "system", "config")

_SHOWN_DIFFERENCES = 8
_SHOWN_EXAMPLES = 20


def _differences(signed: Any, now: Any, path: str, out: list[str]) -> None:
    if isinstance(signed, dict) and isinstance(now, dict):
        for name in sorted(set(signed) | set(now), key=str):
            _differences(signed.get(name), now.get(name), f"{path}.{name}", out)
    elif isinstance(signed, list) and isinstance(now, list) and len(signed) == len(now):
        for i, (a, b) in enumerate(zip(signed, now, strict=True)):
            _differences(a, b, f"{path}[{i}]", out)
    elif digest_of(signed) != digest_of(now):
        out.append(f"{path.lstrip('.')}: signed {_short(signed)}, now {_short(now)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _compare(what: str, signed: Any, now: Any, problems: list[str]) -> None:
    found: list[str] = []
    _differences(signed, now, "", found)
    for line in found[:_SHOWN_DIFFERENCES]:
        problems.append(f"{what} field {line}")
    if len(found) > _SHOWN_DIFFERENCES:
        problems.append(f"{what}: and {len(found) - _SHOWN_DIFFERENCES} more differing fields")


def _compare_pairs(
    signed: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]
) -> list[str]:
    problems = []
    by_pair = {(p["example_id"], p["repetition"]): p for p in now}
    seen = set()
    for pair in signed:
        key = (pair["example_id"], pair["repetition"])
        seen.add(key)
        where = f"example {key[0]!r} repetition {key[1]}"
        current = by_pair.get(key)
        if current is None:
            problems.append(f"{where}: signed, but no longer in the store")
        elif current["output_sha256"] != pair["output_sha256"]:
            problems.append(f"{where}: the stored output differs from the signed one")
        elif current["result_sha256"] != pair["result_sha256"]:
            problems.append(f"{where}: the stored scores or outcome differ from the signed ones")
    for key in sorted(set(by_pair) - seen, key=str):
        problems.append(f"example {key[0]!r} repetition {key[1]}: stored, but not signed")
    if len(problems) > _SHOWN_EXAMPLES:  # a run of 100,000 edited results is not 100,000 lines
        hidden = len(problems) - _SHOWN_EXAMPLES
        problems = [*problems[:_SHOWN_EXAMPLES], f"and {hidden} more examples that differ"]
    return problems


def _recheck(store: Store, kind: str, payload: Mapping[str, Any], problems: list[str]) -> str:
    """Compare a signed document with the store as it is now; returns what was compared."""
    subject = payload.get("subject", {})
    if kind == "run_report":
        run = load_run(store, payload["record_id"])
        now = run_subject(run)
        problems.extend(_compare_pairs(subject.get("pairs", []), now["pairs"]))
        # Keys joined later (name, tags) are compared where the signature has them.
        keys = (set(subject) | set(_RUN_SUBJECT_KEYS)) - {"pairs"}
        _compare(
            "subject",
            {k: subject.get(k) for k in keys},
            {k: now.get(k) for k in keys},
            problems,
        )
        _compare("report", payload.get("claim"), run.report.model_dump(mode="json"), problems)
        problems.extend(_run_copies(store, run))
        return f"{len(now['pairs'])} results and the report match the store"
    if kind == "gate_decision":
        run = load_run(store, subject.get("run_id", ""))
        if digest_of(run_pairs(run.results)) != subject.get("results_sha256"):
            problems.append("the run's stored results differ from those the gate decided on")
        return "the run's results match the store"
    if kind == "verdict":
        case, verdict = _stored_verdict(store, payload["record_id"])
        signed_subject = {k: v for k, v in subject.items() if k != "jury_run_id"}
        now_subject, now_claim = verdict_parts(case, verdict)
        _compare("case", signed_subject, now_subject, problems)
        _compare("verdict", payload.get("claim"), now_claim, problems)
        return "the case, output and verdict match the store"
    if kind == "trajectory_scores":
        record = get_trajectory(store, payload["record_id"])
        if record is None:
            raise StoreError(f"agent run {payload['record_id']}: signed, but no longer stored")
        now_subject, now_claim = trajectory_parts(record)
        subject_run = record.trajectory or record.flow
        if subject_run is not None and run_hash(subject_run) != record.trajectory_hash:
            problems.append("the stored trajectory no longer has the hash it was scored with")
        _compare("run", subject, now_subject, problems)
        _compare("scores", payload.get("claim"), now_claim, problems)
        problems.extend(_trajectory_copies(store, record))
        return "the trajectory's hash, scores and verdict match the store"
    if kind == "grounding_gate":
        decision = load_gate_decision(store, payload["record_id"])
        if decision is None:
            raise StoreError(f"gate decision {payload['record_id']}: signed, but not stored")
        now_subject, now_claim = grounding_parts(decision)
        _compare(
            "decision",
            {"subject": subject, "claim": payload.get("claim")},
            {"subject": now_subject, "claim": now_claim},
            problems,
        )
        return "the decision and the text it delivered match the store"
    return "signature only (this kind of record is not re-read from the store)"


def _run_copies(store: Store, run: StoredRun) -> list[str]:
    """What differs between a run and the copies pages show of it: its kept report (for
    the run's current state), outcome counts, ``summary`` and dataset index."""
    from arbiter.harness.describe import run_summary
    from arbiter.harness.figures import binary_valued

    problems: list[str] = []
    info = run.info
    report = run.report.model_dump(mode="json")
    if run.report.dataset_hash != info.dataset_hash:
        problems.append("the stored dataset no longer has the hash the run was made on")
    kept = kept_report_row(store, info.id)
    if kept is not None and kept.n_done == info.n_done and kept.status == info.status:
        _compare("kept report", report, kept.report, problems)
        binary = sorted(binary_valued(run.results))
        if sorted(kept.binary_scorers) != binary:
            problems.append(
                f"kept report: its 0/1-valued scorers {kept.binary_scorers!r} are not the "
                f"results' {binary!r}"
            )
        if None not in kept.counts:
            counted = count_outcomes(store, info.id)
            now = (counted.failed, counted.undecided, counted.passed)
            if tuple(kept.counts) != now:
                problems.append(
                    f"kept report: its counts (failed, undecided, passed) {kept.counts} "
                    f"are not the results' {now}"
                )
    summary = run_summary_column(store, info.id)
    if summary is not None:
        _compare("summary", json.loads(json.dumps(run_summary(run.report))), summary, problems)
    examples, index = dataset_index(store, info.dataset_hash)
    differing = [
        example_id
        for example_id, position, example in index
        if position >= len(examples)
        or digest_of(examples[position]) != digest_of(example)
        or not isinstance(example, dict)
        or example.get("id") != example_id
    ]
    for example_id in differing[:_SHOWN_EXAMPLES]:
        problems.append(
            f"dataset index: example {example_id!r} differs from the stored dataset it indexes"
        )
    if len(differing) > _SHOWN_EXAMPLES:
        problems.append(f"dataset index: and {len(differing) - _SHOWN_EXAMPLES} more examples")
    return problems


def _utc(moment: Any) -> Any:
    if isinstance(moment, datetime):
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat()
    return moment


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _trajectory_copies(store: Store, record: StoredTrajectory) -> list[str]:
    """What differs between a stored agent run's record and the columns and per-scorer
    rows its pages count, filter and band by."""
    stored = trajectory_columns(store, record.id)
    if stored is None:
        return ["the stored agent run's row is gone"]
    expected = {
        "kind": record.kind,
        "agent": record.agent,
        "agent_class": record.agent_class,
        "source_format": record.source_format,
        "trace_id": record.trace_id,
        "trajectory_hash": record.trajectory_hash,
        "status": record.status,
        "passed": record.passed,
        "band": record.band,
        "cost_usd": _finite(record.cost_usd),
        "duration_ms": _finite(record.duration_ms),
        "created_at": _utc(record.created_at),
    }
    problems: list[str] = []
    _compare(
        "column",
        expected,
        {**stored.columns, "created_at": _utc(stored.columns["created_at"])},
        problems,
    )
    rows = [
        {
            "agent": record.agent,
            "name": score.name,
            "passed": score.passed if score.error is None else None,
            "band": score.band,
            "errored": score.error is not None,
            "value": _finite(score.value),
        }
        for score in record.scores
    ]
    _compare("score row", rows, stored.scores, problems)
    if len(rows) != len(stored.scores):
        problems.append(
            f"score rows: {len(stored.scores)} stored for the record's {len(rows)} scores"
        )
    return problems


def signed_kept_reports(store: Store, kept: Mapping[str, KeptReport]) -> dict[str, KeptReport]:
    """The kept reports that may be shown: those of unsigned runs, and those equal to their
    run's signed report; one that differs is left out (the page recomputes it from the
    results), and its outcome counts are kept only when the report implies them.

    A signature made before claim digests were kept has its digest read from the payload
    once and kept.
    """
    digests = claim_digests(store, "run_report", list(kept))
    shown: dict[str, KeptReport] = {}
    for run_id, found in kept.items():
        if run_id not in digests:  # not signed: nothing to check it against
            shown[run_id] = found
            continue
        signed = digests[run_id] or _backfill_claim_digest(store, run_id)
        if signed is not None and digest_of(found.report.model_dump(mode="json")) != signed:
            log.warning("run %s: its kept report differs from the signed one; recomputed", run_id)
            continue
        report = found.report
        decided = report.accuracy.n
        implied = OutcomeCounts(
            failed=decided - round(report.accuracy.estimate * decided),
            undecided=report.undecided,
            passed=round(report.accuracy.estimate * decided),
        )
        shown[run_id] = found if found.counts == implied else replace(found, counts=None)
    return shown


def _backfill_claim_digest(store: Store, run_id: str) -> str | None:
    envelope = get_signature(store, "run_report", run_id)
    if envelope is None:
        return None
    try:
        claim = json.loads(envelope["payload"])["claim"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    digest = digest_of(claim)
    save_claim_digest(store, "run_report", run_id, digest)
    return digest


def _stored_verdict(store: Store, record_id: str) -> tuple[Case, Verdict]:
    run_id, _, case_id = record_id.partition("/")
    judgment = next((j for j in load_judgments(store, run_id) if j.case_id == case_id), None)
    case = next((c for c in load_judged_cases(store, run_id) if c.id == case_id), None)
    if judgment is None or case is None:
        raise StoreError(f"verdict {record_id}: signed, but no longer in the store")
    return case, judgment.verdict


def _check(
    store: Store, kind: str, record_id: str, envelope: Mapping[str, str] | None, trusted: Any
) -> Verification:
    if envelope is None:
        return Verification(
            kind=kind,
            record_id=record_id,
            problems=[f"{kind} {record_id} is not signed (was a signing key configured then?)"],
        )
    result = verify_envelope(envelope, trusted)
    result.kind, result.record_id = kind, record_id
    if result.payload is not None:
        if result.payload.get("kind") != kind or result.payload.get("record_id") != record_id:
            result.problems.append("the signature was made for another record")
            return result
        kept_digest = claim_digest_of(store, kind, record_id)
        if kept_digest is not None and kept_digest != digest_of(result.payload.get("claim")):
            result.problems.append(
                "the claim digest kept beside the signature is not the signed claim's "
                "(pages check their kept copies against it)"
            )
        before = len(result.problems)
        try:
            checked = _recheck(store, kind, result.payload, result.problems)
        except StoreError as exc:
            result.problems.append(str(exc))
        else:
            if len(result.problems) == before:
                result.notes.append(checked)
    return result


def _run_checks(store: Store, run_id: str, trusted: Ed25519PublicKey | None) -> list[Verification]:
    envelope = get_signature(store, "run_report", run_id)
    checks = [_check(store, "run_report", run_id, envelope, trusted)]
    for record_id, signed in list_signatures(store, "gate_decision", prefix=f"{run_id}:"):
        checks.append(_check(store, "gate_decision", record_id, signed, trusted))
    return checks


def _verdict_exists(store: Store, record_id: str) -> bool:
    """Whether ``<jury run>/<case id>`` names a stored verdict (a case id may hold ``/``)."""
    jury_run_id, _, case_id = record_id.partition("/")
    try:
        jury_run = get_jury_run(store, jury_run_id)
    except StoreError:
        return False
    return any(j.case_id == case_id for j in load_judgments(store, jury_run.id))


def verify_stored(
    store: Store, target: str, trusted: Ed25519PublicKey | None
) -> list[Verification]:
    """Check every signature of ``target`` and re-derive what it signed from the store.

    Args:
        store: The store.
        target: A run id (its report and gate decisions), a jury run id (its verdicts),
            a verdict (its number, or ``<jury run>/<case id>``), or the record id of any
            signed record; a unique prefix of a run id is enough. A number is a verdict's
            when such a verdict exists, else a prefix of a run id.
        trusted: The key the signatures must be made with; None: their embedded keys.

    Raises:
        InputError: Nothing in the store matches ``target``.
    """
    if target.isdigit() and len(target) < 19 and (key := verdict_key(store, int(target))):
        target = verdict_record_id(*key)
    elif "/" not in target:  # a number that is no verdict may still begin a run id
        try:
            run_id: str | None = store.get_run(target).id
        except StoreError:
            run_id = None
        if run_id is not None:
            return _run_checks(store, run_id, trusted)
    if "/" in target:
        envelope = get_signature(store, "verdict", target)
        if envelope is None and not _verdict_exists(store, target):
            # Often a path mistyped: a verdict that is not there is not "unsigned".
            raise InputError(
                f"{target!r} is no file and names no verdict (<jury run>/<case id>) "
                f"in {store.describe()}"
            )
        return [_check(store, "verdict", target, envelope, trusted)]
    try:
        jury_run = get_jury_run(store, target)
    except StoreError:
        jury_run = None
    if jury_run is not None:
        return [
            _check(store, "verdict", rid, get_signature(store, "verdict", rid), trusted)
            for rid in (
                verdict_record_id(jury_run.id, j.case_id)
                for j in load_judgments(store, jury_run.id)
            )
        ]
    found = [
        _check(store, kind, target, envelope, trusted)
        for kind, envelope in find_signatures(store, target)
    ]
    if not found:
        raise InputError(
            f"{target!r} names no run, jury run, verdict or signed record in {store.describe()}"
        )
    return found
