"""``arbiter verify FILE|RUN_ID|VERDICT_ID``: check signatures offline, saying what fails.

A file is a signed artifact (an audit pack, a registration, an exported envelope); an
id names stored records, whose signatures are checked and whose signed contents are
re-derived from the store. Exit 0 when everything verifies against a trusted key, 1
when anything fails (each failure on its own line), 3 when the input cannot be read, and
4 when every signature holds but only against the key embedded in the artifact: with no
``--public-key`` and no configured signing key nothing says who that key belongs to, so
the answer is "signature valid, signer not trusted" unless ``--trust-embedded-key`` says
to accept it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from arbiter.attest import Verification
    from arbiter.config import Settings
    from arbiter.store import Store

__all__ = ["UNTRUSTED_SIGNER", "trusted_key", "verify"]

UNTRUSTED_SIGNER = 4
"""The exit code of signatures that hold against a key nobody vouched for."""


def trusted_key(public_key: Path | None, config: Settings) -> Ed25519PublicKey | None:
    """The key signatures must be made with: ``--public-key``, else the configured
    signing key's (its private file, or the ``.pub.pem`` beside it), else None.

    Raises:
        InputError: A key is named but cannot be read.
    """
    from arbiter.attest import load_verify_key, public_key_path

    if public_key is not None:
        return load_verify_key(public_key)
    configured = config.signing_key
    if configured is None:
        return None
    if not configured.exists() and public_key_path(configured).exists():
        return load_verify_key(public_key_path(configured))
    return load_verify_key(configured)


@app.command()
def verify(
    target: Annotated[
        str,
        typer.Argument(
            help="A signed file (audit pack .zip, registration or envelope .json), a run id "
            "(its report and gate decisions), a jury run id, or a verdict id.",
            show_default=False,
        ),
    ],
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="The signer's public key (PEM); default: the configured signing key's.",
        ),
    ] = None,
    trust_embedded_key: Annotated[
        bool,
        typer.Option(
            "--trust-embedded-key",
            help="With no --public-key and no configured key, accept the key embedded in "
            "the artifact (exit 0 instead of 4).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            help="Also write each stored record's signature into this folder, one envelope "
            "file each, for verify_standalone.py or openssl.",
        ),
    ] = None,
) -> None:
    """Check signatures and digests offline: exit 0 verified, 1 failed, 3 bad input, 4 valid
    but signed by a key nobody vouched for."""
    from arbiter.cli.common import echo_json, note, open_store, settings

    config = settings()
    trusted = trusted_key(public_key, config)
    path = Path(target)
    if path.is_file():
        checks = [_verify_file(path, trusted)]
    else:
        from arbiter.service.verification import verify_stored

        store = open_store(config)
        try:
            checks = verify_stored(store, target, trusted)
            if export is not None:
                _export(store, checks, export)
        finally:
            store.close()
    trusted_signer = trusted is not None or trust_embedded_key
    if as_json:
        echo_json([_json(check, trusted_signer) for check in checks])
    else:
        for check in checks:
            _print(check, trusted_signer)
    failed = [check for check in checks if not check.ok]
    if failed:
        problems = sum(len(check.problems) for check in failed)
        note(f"arbiter: verification failed: {problems} problem(s) in {len(failed)} record(s)")
        raise typer.Exit(1)
    if not trusted_signer:
        signers = ", ".join(sorted({str(check.key_id) for check in checks}))
        note(
            f"arbiter: signature valid, signer not trusted: signed with key {signers}, which "
            "nothing vouches for; give the signer's public key (--public-key), configure "
            "ARBITER_SIGNING_KEY, or accept it with --trust-embedded-key"
        )
        raise typer.Exit(UNTRUSTED_SIGNER)


def _export(store: Store, checks: list[Verification], folder: Path) -> None:
    """Write each checked record's envelope as ``<kind>-<digest>.json`` (a record id is
    untrusted text, never a file name)."""
    from arbiter.attest import render_envelope
    from arbiter.cli.common import note
    from arbiter.errors import InputError
    from arbiter.store.signature_repository import get_signature

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for check in checks:
            envelope = get_signature(store, check.kind, check.record_id)
            if envelope is None:
                continue
            path = folder / f"{check.kind}-{envelope['digest'][:16]}.json"
            path.write_bytes(render_envelope(envelope))
            note(f"exported {check.kind} {check.record_id} to {path}")
    except OSError as exc:
        raise InputError(f"{folder}: cannot export the signatures: {exc.strerror or exc}") from None


def _verify_file(path: Path, trusted: Ed25519PublicKey | None) -> Verification:
    from arbiter.attest import verify_artifact
    from arbiter.errors import InputError

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the artifact: {exc.strerror or exc}") from None
    return verify_artifact(data, trusted)


def _print(check: Verification, trusted_signer: bool) -> None:
    from arbiter import escape

    name = f"{check.kind} {check.record_id}"
    if check.ok and trusted_signer:
        typer.echo(escape.terminal(f"verified: {name}, signed with key {check.key_id}"))
    elif check.ok:
        typer.echo(
            escape.terminal(
                f"signature valid, signer not trusted: {name}, signed with key {check.key_id}"
            )
        )
    for problem in check.problems:
        typer.echo(escape.terminal(f"FAILED: {name}: {problem}"))
    for line in check.notes:
        typer.echo(escape.terminal(f"  {line}"))


def _json(check: Verification, trusted_signer: bool) -> dict[str, object]:
    return {
        "kind": check.kind,
        "record_id": check.record_id,
        "ok": check.ok,
        "signer_trusted": trusted_signer,
        "key_id": check.key_id,
        "problems": check.problems,
        "notes": check.notes,
    }
