"""Signing what Arbiter stores, and checking stored signatures against the store.

When a signing key is configured (``ARBITER_SIGNING_KEY``) the service functions that
store a run report, a jury verdict, a gate decision or a trajectory's score set call the
``attest_*`` function of that record here. Each signs a document binding the record to
what it grades::

    {"schema": "arbiter-attestation/1", "kind": "run_report", "record_id": "<run id>",
     "signed_at": "...", "arbiter_version": "...",
     "subject": {"dataset_hash": ..., "pairs": [{"example_id", "repetition",
                 "output_sha256", "result_sha256"}, ...], ...},
     "scorers": [<scorer specs with versions>],
     "claim": <the report / verdict / decision / scores>}

and keeps the envelope in the store's ``signatures`` table under ``(kind, record_id)``.
:func:`arbiter.service.verification.verify_stored` checks the signature and re-derives
the subject and claim from the store as it is now, naming each field or example that
changed.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from arbiter.attest import SigningKey, digest_of, load_signing_key, pair_digests, sha256_hex
from arbiter.contract import (
    Case,
    PairResult,
    Report,
    RunInfo,
    ScorerSpec,
    StoredTrajectory,
    Verdict,
)
from arbiter.contract.runs import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_UNDECIDED_RATE,
    DEFAULT_MIN_DECIDED,
)
from arbiter.store import Store
from arbiter.store.signature_repository import save_signature

if TYPE_CHECKING:
    from arbiter.config import Settings
    from arbiter.contract.gate import GateDecision
    from arbiter.harness.gate import GateResult

__all__ = [
    "CONFIGURED",
    "SCHEMA",
    "FloorsLike",
    "Signer",
    "StoredRunLike",
    "arbiter_version",
    "attest_gate",
    "attest_grounding_decision",
    "attest_record",
    "attest_run",
    "attest_trajectories",
    "attest_verdict",
    "attestation_document",
    "configured_signer",
    "floors_claim",
    "gate_record_id",
    "grounding_parts",
    "resolve_signer",
    "result_line",
    "run_pairs",
    "run_subject",
    "trajectory_parts",
    "verdict_parts",
    "verdict_record_id",
]

SCHEMA = "arbiter-attestation/1"
"""The ``schema`` of every signed document."""
CONFIGURED: Literal["configured"] = "configured"
"""Sign with the key the settings name (``ARBITER_SIGNING_KEY``), if any."""
Signer = SigningKey | Literal["configured"] | None
"""Who signs: a key, the configured key (:data:`CONFIGURED`), or nobody (None)."""


class StoredRunLike(Protocol):
    """A stored run as :func:`arbiter.service.runs.load_run` reads it back."""

    @property
    def info(self) -> RunInfo: ...
    @property
    def results(self) -> list[PairResult]: ...
    @property
    def report(self) -> Report: ...


class FloorsLike(Protocol):
    """A gate's floors (:class:`arbiter.service.runs.GateFloors`)."""

    @property
    def min_accuracy(self) -> float | None: ...
    @property
    def min_pass_k(self) -> float | None: ...
    @property
    def cohorts(self) -> dict[str, float]: ...
    @property
    def epsilon(self) -> float: ...


@functools.cache  # reading package metadata costs milliseconds; it cannot change in a process
def arbiter_version() -> str:
    """The installed Arbiter's version (read from its metadata, not the package root)."""
    try:
        return metadata.version("arbiter")
    except metadata.PackageNotFoundError:
        return "unknown"


def configured_signer(settings: Settings | None = None) -> SigningKey | None:
    """The key ``settings.signing_key`` names; without settings, the key the environment
    names (``ARBITER_SIGNING_KEY``, else ``.env``).

    Raises:
        InputError: A key is configured but cannot be read.
    """
    path = settings.signing_key if settings is not None else _configured_path()
    return load_signing_key(path) if path is not None else None


def _configured_path() -> Path | None:
    # Building Settings() costs milliseconds (a server judging hundreds of outputs a
    # second would feel it): the variable itself is read first, .env only if one exists.
    value = os.environ.get("ARBITER_SIGNING_KEY")
    if value is not None:
        return Path(value) if value else None
    try:
        changed = Path(".env").stat().st_mtime_ns
    except OSError:
        return None
    return _env_file_signing_key(os.getcwd(), changed)


@functools.lru_cache(maxsize=8)
def _env_file_signing_key(folder: str, changed: int) -> Path | None:
    """The key ``folder/.env`` names, read once per version of the file."""
    from arbiter.config import Settings

    return Settings().signing_key


def resolve_signer(signer: Signer) -> SigningKey | None:
    """The key to sign with: ``signer`` itself, or the configured one for :data:`CONFIGURED`."""
    if isinstance(signer, SigningKey) or signer is None:
        return signer
    return configured_signer()


def attestation_document(
    kind: str,
    record_id: str,
    *,
    subject: Mapping[str, Any],
    scorers: Sequence[Mapping[str, Any]],
    claim: Any,
) -> dict[str, Any]:
    """The document signed for one record (see the module docstring)."""
    return {
        "schema": SCHEMA,
        "kind": kind,
        "record_id": record_id,
        "signed_at": datetime.now(UTC).isoformat(),
        "arbiter_version": arbiter_version(),
        "subject": dict(subject),
        "scorers": [dict(spec) for spec in scorers],
        "claim": claim,
    }


def attest_record(
    store: Store,
    kind: str,
    record_id: str,
    *,
    subject: Mapping[str, Any],
    scorers: Sequence[Mapping[str, Any]],
    claim: Any,
    signer: Signer = CONFIGURED,
) -> dict[str, str] | None:
    """Sign one record and keep the envelope in the store; nothing without a key.

    Args:
        store: Where the signature goes (``signatures``, keyed by ``(kind, record_id)``).
        kind: What the record is (``grounding_gate``, ...).
        record_id: Which record.
        subject: What it grades: content hashes (dataset, output, trajectory).
        scorers: The specs (with versions) of what graded it.
        claim: The record itself, as JSON.
        signer: Who signs (default: the configured key).

    Returns:
        The envelope, or None when no key is configured.
    """
    key = resolve_signer(signer)
    if key is None:
        return None
    document = attestation_document(kind, record_id, subject=subject, scorers=scorers, claim=claim)
    envelope = key.sign(document)
    save_signature(store, kind, record_id, envelope, claim_sha256=digest_of(document["claim"]))
    return envelope


# ------------------------------------------------------------------ run reports


def result_line(result: PairResult) -> dict[str, Any]:
    """One per-example result as JSON: what an audit pack's ``results.jsonl`` holds."""
    return {
        "example_id": result.example_id,
        "repetition": result.repetition,
        "output": result.output.model_dump(mode="json") if result.output is not None else None,
        "passed": result.passed,
        "scores": [score.model_dump(mode="json") for score in result.scores],
        "error_type": result.error_type,
        "error_message": result.error_message,
        "latency_ms": result.latency_ms,
        "attempts": result.attempts,
    }


def run_pairs(results: Sequence[PairResult]) -> list[dict[str, Any]]:
    """Each result's example id, repetition, and the sha256 of its output and findings."""
    pairs = []
    for result in results:
        output, found = pair_digests(result_line(result))
        pairs.append(
            {
                "example_id": result.example_id,
                "repetition": result.repetition,
                "output_sha256": output,
                "result_sha256": found,
            }
        )
    return pairs


def run_subject(run: StoredRunLike) -> dict[str, Any]:
    """What a run report is bound to: the run's dataset, system, options, name, tags and
    each result's digests (``name`` and ``tags``, shown with the run, joined in 0.3)."""
    return {
        "run_id": run.info.id,
        "dataset_hash": run.info.dataset_hash,
        "dataset_name": run.info.dataset_name,
        "system": run.info.system,
        "config": run.info.config,
        "name": run.info.name,
        "tags": dict(run.info.tags),
        "pairs": run_pairs(run.results),
    }


def _specs(specs: Sequence[ScorerSpec]) -> list[dict[str, Any]]:
    return [spec.model_dump(mode="json") for spec in specs]


def attest_run(
    store: Store, run: StoredRunLike, *, signer: Signer = CONFIGURED
) -> dict[str, str] | None:
    """Sign a stored run's report, bound to its dataset and every result's output."""
    return attest_record(
        store,
        "run_report",
        run.info.id,
        subject=run_subject(run),
        scorers=_specs(run.report.scorers),
        claim=run.report.model_dump(mode="json"),
        signer=signer,
    )


def gate_record_id(run_id: str, floors: FloorsLike, baseline: str | None) -> str:
    """The record id of a gate decision: the run and a digest of what it was gated on."""
    return f"{run_id}:{digest_of(floors_claim(floors, baseline))[:16]}"


def floors_claim(floors: FloorsLike, baseline: str | None) -> dict[str, Any]:
    """What a gate was decided on, as signed: its floors and baseline, and each run
    check set away from its default (so a decision or registration signed before run
    checks could be set keeps its digest)."""
    shown: dict[str, Any] = {
        "min_accuracy": floors.min_accuracy,
        "min_pass_k": floors.min_pass_k,
        "cohorts": dict(floors.cohorts),
        "epsilon": floors.epsilon,
        "baseline": baseline,
    }
    defaults: dict[str, float] = {
        "max_error_rate": DEFAULT_MAX_ERROR_RATE,
        "max_undecided_rate": DEFAULT_MAX_UNDECIDED_RATE,
        "min_decided": DEFAULT_MIN_DECIDED,
    }
    for name, default in defaults.items():
        value = getattr(floors, name, default)
        if value != default:
            shown[name] = value
    return shown


def attest_gate(
    store: Store,
    run: StoredRunLike,
    floors: FloorsLike,
    baseline: str | None,
    result: GateResult,
    *,
    signer: Signer = CONFIGURED,
) -> dict[str, str] | None:
    """Sign a gate decision, bound to the run's dataset, results and the floors used."""
    return attest_record(
        store,
        "gate_decision",
        gate_record_id(run.info.id, floors, baseline),
        subject={
            "run_id": run.info.id,
            "dataset_hash": run.info.dataset_hash,
            "results_sha256": digest_of(run_pairs(run.results)),
            "floors": floors_claim(floors, baseline),
        },
        scorers=_specs(run.report.scorers),
        claim=result.model_dump(mode="json"),
        signer=signer,
    )


# --------------------------------------------------------------------- verdicts


def verdict_record_id(jury_run_id: str, case_id: str) -> str:
    """The record id of a verdict: ``<jury run id>/<case id>``."""
    return f"{jury_run_id}/{case_id}"


def verdict_parts(case: Case, verdict: Verdict) -> tuple[dict[str, Any], Any]:
    critiques = [
        {
            "critic": o.critic,
            "status": o.status,
            "critique": o.critique.model_dump(mode="json") if o.critique is not None else None,
        }
        for o in verdict.critiques
    ]
    subject = {
        "case_id": case.id,
        "case_sha256": digest_of(case.model_dump(mode="json")),
        "output_sha256": sha256_hex(case.output.encode("utf-8", "surrogatepass")),
        "critiques_sha256": digest_of(critiques),
    }
    return subject, verdict.model_dump(mode="json", exclude={"critiques"})


def attest_verdict(
    store: Store,
    jury_run_id: str,
    case: Case,
    verdict: Verdict,
    *,
    roster: Sequence[Mapping[str, Any]],
    signer: Signer = CONFIGURED,
) -> dict[str, str] | None:
    """Sign a jury verdict, bound to the case and output it judged and the critics' roster."""
    subject, claim = verdict_parts(case, verdict)
    return attest_record(
        store,
        "verdict",
        verdict_record_id(jury_run_id, case.id),
        subject={"jury_run_id": jury_run_id, **subject},
        scorers=[{"jury": "synthesis", "version": arbiter_version()}, *roster],
        claim=claim,
        signer=signer,
    )


def trajectory_parts(record: StoredTrajectory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The subject (the run's hash) and claim (its scores and verdict) of a stored agent run."""
    subject = {
        "run_id": record.id,
        "agent": record.agent,
        "source_format": record.source_format,
        "trajectory_sha256": record.trajectory_hash,
    }
    claim = {
        "scores": [score.model_dump(mode="json") for score in record.scores],
        "not_applicable": record.not_applicable,
        "passed": record.passed,
        "band": record.band,
        "convicted_by": record.convicted_by,
    }
    return subject, claim


def attest_trajectories(
    store: Store, records: Sequence[StoredTrajectory], *, signer: Signer = CONFIGURED
) -> None:
    """Sign each stored agent run's score set, bound to the run's hash and its scorers."""
    key = resolve_signer(signer)
    if key is None:
        return
    for record in records:
        subject, claim = trajectory_parts(record)
        attest_record(
            store,
            "trajectory_scores",
            record.id,
            subject=subject,
            scorers=_specs(record.scorers),
            claim=claim,
            signer=key,
        )


def grounding_parts(decision: GateDecision) -> tuple[dict[str, Any], dict[str, Any]]:
    """The subject (the delivered text, the parked answer) and claim of a gate decision."""
    parked = decision.parked
    subject = {
        "decision_id": decision.id,
        "delivered_sha256": sha256_hex(decision.delivered.encode("utf-8", "surrogatepass")),
        "parked_answer_sha256": sha256_hex(parked.answer.encode("utf-8", "surrogatepass"))
        if parked is not None
        else None,
    }
    return subject, decision.model_dump(mode="json")


def attest_grounding_decision(
    store: Store, decision: GateDecision, *, signer: Signer = CONFIGURED
) -> dict[str, str] | None:
    """Sign a stored grounding-gate decision, bound to the text it delivered (or parked)."""
    subject, claim = grounding_parts(decision)
    return attest_record(
        store,
        "grounding_gate",
        decision.id,
        subject=subject,
        scorers=[{"name": "grounding_gate", "mode": decision.mode, "version": arbiter_version()}],
        claim=claim,
        signer=signer,
    )
