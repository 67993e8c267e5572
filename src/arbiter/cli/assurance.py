"""``arbiter assurance pack [--agent A] [--out PATH] [--key PATH]``: the deployment's
posture in one signed archive.

The archive holds the agents' trust states and integrity, evaluation figures with their
intervals, every judge's calibration, the inbox's incidents, the red-team self-test, any
stored live red-team, the grounding gate's benchmark and a control map tying the EU AI
Act's and the NIST AI RMF's requirements to those files; ``arbiter verify PATH`` (or
``verify_standalone.py``) checks it offline. See :mod:`arbiter.service.assurance_pack`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arbiter.cli.app import app

__all__ = ["assurance_app"]

assurance_app = typer.Typer(
    name="assurance",
    help="The deployment's assurance evidence: a signed pack an auditor verifies offline.",
    no_args_is_help=True,
)
app.add_typer(assurance_app, name="assurance")


@assurance_app.command("pack")
def pack(
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only this agent's trust, pass rate and incidents."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="The archive to write (default: assurance-PACK_ID.zip)."),
    ] = None,
    key: Annotated[
        Path | None,
        typer.Option("--key", help="The signing key (default: ARBITER_SIGNING_KEY)."),
    ] = None,
) -> None:
    """Write one signed zip of the deployment's posture and its control map."""
    import asyncio
    import os
    import tempfile

    from arbiter import escape
    from arbiter.attest import load_signing_key
    from arbiter.cli.common import open_store, settings
    from arbiter.errors import InputError
    from arbiter.service.assurance_pack import build_assurance_pack
    from arbiter.service.attestation import configured_signer

    config = settings()
    signer = load_signing_key(key) if key is not None else configured_signer(config)
    if signer is None:
        raise InputError(
            "assurance pack signs the archive: make a key with `arbiter keys signing init` "
            "and set ARBITER_SIGNING_KEY (or give --key)"
        )
    store = open_store(config)
    try:
        built = asyncio.run(build_assurance_pack(store, signer, agent=agent))
    finally:
        store.close()
    target = out or Path(f"assurance-{built.record_id}.zip")
    folder = target.parent if str(target.parent) else Path(".")
    try:  # written whole or not at all
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".assurance-", suffix=".zip")
        with os.fdopen(descriptor, "wb") as file:
            file.write(built.data)
        os.replace(temporary, target)
    except OSError as exc:
        raise InputError(
            f"{target}: cannot write the assurance pack: {exc.strerror or exc}"
        ) from None
    counts: dict[str, int] = {}
    for entry in built.controls.controls:
        counts[entry.status] = counts.get(entry.status, 0) + 1
    statuses = ", ".join(
        f"{counts[s]} {s}" for s in ("evidence", "partial evidence", "no evidence") if s in counts
    )
    for line in (
        f"wrote {target} ({len(built.data):,} bytes, signed with key {built.key_id})",
        f"pack {built.record_id}: {len(built.controls.controls)} controls: {statuses}",
        *(
            f"  {entry.framework} {entry.reference} ({entry.title}): {entry.status}"
            for entry in built.controls.controls
        ),
        f"verify it with: arbiter verify {target}",
    ):
        typer.echo(escape.terminal(line))
