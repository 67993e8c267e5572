"""The audit pack of a run: one signed zip archive an auditor verifies offline.

Members (JSON, sorted keys; ``results.jsonl`` one result per line):

- ``config.json``: the run's header: system, options, name, tags, times, status;
- ``dataset.json``: the dataset's name, version, content hash and size;
- ``report.json``: the report, recomputed from the stored results;
- ``gate.json``: the gate decisions: the run's own ``[gate]`` decided now (or why it
  could not be: ``run_gate_refused``), and every signed decision stored for the run;
- ``results.jsonl``: every per-example result: output, scores, outcome, error, latency;
- ``environment.json``: Arbiter's, Python's and the key libraries' versions, the platform;
- ``attestation.json``: the run report's own signature (made when the run ended);
- ``signature.json``: the signature of the sha256 of every other member.

The archive is written byte-for-byte as :func:`arbiter.attest.render_pack` writes it,
its members in :func:`arbiter.verify_standalone.pack_order` (by name, the signature
last), so ``arbiter verify`` (and ``verify_standalone.py``) detect a change of any byte
and a reordering of its members.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata
from typing import Any

from arbiter.attest import SigningKey, canonical_json, render_envelope, render_pack, sha256_hex
from arbiter.errors import InputError, StoreError
from arbiter.service.attestation import (
    arbiter_version,
    attest_run,
    attestation_document,
    gate_record_id,
    result_line,
)
from arbiter.service.runs import GateFloors, gate_run, load_run
from arbiter.store import Store
from arbiter.store.signature_repository import get_signature, list_signatures
from arbiter.verify_standalone import PACK_SIGNATURE, pack_order

__all__ = ["PACKAGES", "build_audit_pack", "environment"]

PACKAGES = ("cryptography", "httpx", "numpy", "pydantic", "sqlalchemy", "typer")
"""Libraries whose versions the pack records."""


def environment() -> dict[str, Any]:
    """The versions a run's figures depend on: Arbiter, Python, key libraries, platform."""
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "arbiter": arbiter_version(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": packages,
    }


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def _gate_decisions(store: Store, run_id: str, key: SigningKey) -> dict[str, Any]:
    """The run's own gate decided now (and signed), then every signed decision of the run."""
    run = load_run(store, run_id)
    gate = run.config.gate
    refused = None
    if gate is not None:
        try:
            gate_run(store, run_id, GateFloors.of(gate), baseline=gate.baseline, signer=key)
        except (InputError, StoreError) as exc:  # e.g. its baseline is gone: say so, pack on
            refused = str(exc)
    own = gate_record_id(run_id, GateFloors.of(gate), gate.baseline) if gate else None
    decisions = []
    for record_id, envelope in list_signatures(store, "gate_decision", prefix=f"{run_id}:"):
        payload = json.loads(envelope["payload"])
        decisions.append(
            {
                "record_id": record_id,
                "run_gate": record_id == own,
                "floors": payload["subject"]["floors"],
                "decision": payload["claim"],
                "signed_at": payload["signed_at"],
                "key_id": envelope["key_id"],
            }
        )
    return {"decisions": decisions, "run_gate_refused": refused}


def build_audit_pack(store: Store, run_id: str, key: SigningKey) -> bytes:
    """The audit pack of a stored run, signed with ``key``.

    A run whose report was never signed (it ran before a key was configured) is
    signed now; its attestation then binds the results as they are stored today.

    Raises:
        StoreError: No such run, or it has no result yet.
    """
    run = load_run(store, run_id)
    info = run.info
    envelope = get_signature(store, "run_report", info.id) or attest_run(store, run, signer=key)
    assert envelope is not None
    dataset = store.load_dataset(info.dataset_hash)
    results = b"".join(canonical_json(result_line(r)) + b"\n" for r in run.results)
    members = {
        "attestation.json": render_envelope(envelope),
        "config.json": _json(
            {
                "run_id": info.id,
                "name": info.name,
                "tags": info.tags,
                "system": info.system,
                "config": info.config,
                "status": info.status,
                "created_at": info.created_at.isoformat(),
                "finished_at": info.finished_at.isoformat() if info.finished_at else None,
                "n_pairs": info.n_pairs,
            }
        ),
        "dataset.json": _json(
            {
                "name": dataset.name,
                "version": dataset.version,
                "content_hash": info.dataset_hash,
                "n_examples": len(dataset.examples),
                "n_in_scope": len(run.examples),
            }
        ),
        "environment.json": _json(environment()),
        "gate.json": _json(_gate_decisions(store, info.id, key)),
        "report.json": _json(run.report.model_dump(mode="json")),
        "results.jsonl": results,
    }
    document = attestation_document(
        "audit_pack",
        info.id,
        subject={
            "run_id": info.id,
            "dataset_hash": info.dataset_hash,
            "files": {name: sha256_hex(data) for name, data in members.items()},
        },
        scorers=[spec.model_dump(mode="json") for spec in run.report.scorers],
        claim={"report_digest": envelope["digest"]},
    )
    signature = render_envelope(key.sign(document))
    members[PACK_SIGNATURE] = signature
    return render_pack([(name, members[name]) for name in pack_order(list(members))])
