"""Pre-registration: sign a gate's floors, the dataset's hash and the scorers before a run.

``arbiter gate --preregister eval.toml`` writes a signed registration file; a gate given
it afterwards (``arbiter gate RUN_ID --registration FILE``) gates with the registered
floors and refuses, as invalid input (exit 3), a run or floors that differ from the
registration: another dataset, other scorers (names, arguments, versions), other
floors, a run started before the registration was signed, or a registration whose
signature does not hold.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.attest import SigningKey, digest_of, render_envelope, verify_artifact
from arbiter.contract import Dataset, ScorerSpec
from arbiter.errors import InputError
from arbiter.service.attestation import attestation_document, floors_claim
from arbiter.service.runs import GateFloors

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from arbiter.contract import RunInfo
    from arbiter.service.eval_file import EvalPlan

__all__ = ["Registration", "check_registration", "default_registration_path", "preregister"]

KIND = "preregistration"


def default_registration_path(spec: Path) -> Path:
    """A registration's default file beside the spec: ``qa.eval.toml`` and ``qa.toml`` ->
    ``qa.registration.json``."""
    stem = spec.name.removesuffix(".toml").removesuffix(".eval")
    return spec.with_name(f"{stem}.registration.json")


def preregister(plan: EvalPlan, dataset: Dataset, key: SigningKey, *, out: Path) -> dict[str, str]:
    """Sign the gate of an eval file, its dataset's hash and its scorers; write the file.

    Args:
        plan: The eval file, resolved (it must have a ``[gate]``).
        dataset: Its dataset, loaded.
        key: The signing key.
        out: The registration file to write; it must not exist yet.

    Returns:
        The envelope written.

    Raises:
        InputError: The file has no gate, or ``out`` exists or cannot be written.
    """
    if plan.floors is None:
        raise InputError(f"{plan.source}: no [gate] table: there are no floors to pre-register")
    if out.exists():
        raise InputError(
            f"{out} already exists: a registration is written once (remove it to register anew)"
        )
    document = attestation_document(
        KIND,
        f"{plan.source.name if plan.source else 'eval'}:{dataset.content_hash[:12]}",
        subject={
            "eval_file": plan.source.name if plan.source else None,
            "dataset_name": dataset.name,
            "dataset_hash": dataset.content_hash,
            "n_examples": len(dataset.examples),
            "limit": plan.config.limit,
        },
        scorers=[spec.model_dump(mode="json") for spec in plan.scorers],
        claim={"floors": floors_claim(plan.floors, plan.baseline)},
    )
    envelope = key.sign(document)
    try:
        out.write_bytes(render_envelope(envelope))
    except OSError as exc:
        raise InputError(f"{out}: cannot write the registration: {exc.strerror or exc}") from None
    return envelope


def _shown(floors: dict[str, Any]) -> str:
    set_ = [
        f"{name}={value}"
        for name, value in floors.items()
        if value is not None and value != {} and not (name == "epsilon" and value == 0.0)
    ]
    return ", ".join(set_) or "no floor"


def _scorer_differences(used: list[dict[str, Any]], signed: list[dict[str, Any]]) -> list[str]:
    if len(used) != len(signed):
        names = ", ".join(str(s.get("name")) for s in used)
        registered = ", ".join(str(s.get("name")) for s in signed)
        return [f"scorers [{names}] (registered [{registered}])"]
    found = []
    for i, (now, then) in enumerate(zip(used, signed, strict=True)):
        for name in sorted(set(now) | set(then)):
            if digest_of(now.get(name)) != digest_of(then.get(name)):
                found.append(
                    f"scorers[{i}] {then.get('name')}: {name} {now.get(name)!r} "
                    f"(registered {then.get(name)!r})"
                )
    return found


class Registration:
    """A registration file read and verified: what the gate must equal."""

    def __init__(self, path: Path, payload: dict[str, Any]) -> None:
        self.path = path
        self.payload = payload
        floors = payload["claim"]["floors"]
        defaults = GateFloors()
        self.floors = GateFloors(
            min_accuracy=floors["min_accuracy"],
            min_pass_k=floors["min_pass_k"],
            cohorts=dict(floors["cohorts"]),
            epsilon=floors["epsilon"],
            # Run checks are signed only when set away from their defaults.
            max_error_rate=floors.get("max_error_rate", defaults.max_error_rate),
            max_undecided_rate=floors.get("max_undecided_rate", defaults.max_undecided_rate),
            min_decided=floors.get("min_decided", defaults.min_decided),
        )
        self.baseline: str | None = floors["baseline"]
        self.signed_at = datetime.fromisoformat(payload["signed_at"])
        self.dataset_hash: str = payload["subject"]["dataset_hash"]
        self.scorers: list[dict[str, Any]] = payload["scorers"]


def read_registration(path: Path, trusted: Ed25519PublicKey | None) -> Registration:
    """Read and verify a registration file.

    Raises:
        InputError: It cannot be read, its signature or digest does not hold, or it is
            not a registration.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the registration: {exc.strerror or exc}") from None
    result = verify_artifact(data, trusted)
    if not result.ok or result.payload is None:
        raise InputError(f"{path}: the registration does not verify: {'; '.join(result.problems)}")
    if result.payload.get("kind") != KIND:
        raise InputError(f"{path}: a signed {result.payload.get('kind')}, not a registration")
    try:
        return Registration(path, result.payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: the registration lacks {exc}") from None


def check_registration(
    registration: Registration,
    info: RunInfo,
    scorers: list[ScorerSpec],
    given: GateFloors | None,
    baseline: str | None,
) -> tuple[GateFloors, str | None]:
    """The floors to gate ``info`` with, once it is shown to match the registration.

    Args:
        registration: The verified registration.
        info: The run to gate.
        scorers: The run's scorer specs.
        given: Floors given on the command line, if any: they must equal the registered.
        baseline: The baseline given, if any: it must equal the registered one.

    Raises:
        InputError: Every way the run or the floors differ from the registration.
    """
    where = registration.path
    differences = []
    started = info.created_at
    if started.tzinfo is None:  # SQLite hands back naive datetimes, written in UTC
        started = started.replace(tzinfo=UTC)
    if started < registration.signed_at:
        differences.append(
            f"the run started at {started.isoformat()}, before the registration was "
            f"signed at {registration.signed_at.isoformat()}"
        )
    if info.dataset_hash != registration.dataset_hash:
        differences.append(
            f"dataset hash {info.dataset_hash[:12]} (registered {registration.dataset_hash[:12]})"
        )
    used = [spec.model_dump(mode="json") for spec in scorers]
    differences.extend(_scorer_differences(used, registration.scorers))
    registered = floors_claim(registration.floors, registration.baseline)
    own = info.run_config.gate
    if own is not None and floors_claim(GateFloors.of(own), own.baseline) != registered:
        shown = _shown(floors_claim(GateFloors.of(own), own.baseline))
        differences.append(f"the run's own [gate] {shown} (registered {_shown(registered)})")
    if given is not None and floors_claim(given, None) != floors_claim(registration.floors, None):
        differences.append(
            f"floors {_shown(floors_claim(given, None))} "
            f"(registered {_shown(floors_claim(registration.floors, None))})"
        )
    if differences:
        raise InputError(
            f"{where}: refusing to gate run {info.id}: it differs from the registration: "
            + "; ".join(differences)
        )
    return registration.floors, registration.baseline
