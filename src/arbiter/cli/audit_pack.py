"""``arbiter audit-pack RUN_ID [--out PATH]``: one signed zip archive of a run.

The archive holds the run's config, dataset hash, report, gate decisions, per-example
results and environment, signed with the configured key; ``arbiter verify PATH`` (or
``verify_standalone.py``) checks it offline. See :mod:`arbiter.service.audit_pack`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arbiter.cli.app import app

__all__ = ["audit_pack"]


@app.command("audit-pack")
def audit_pack(
    run_id: Annotated[str, typer.Argument(help="The run to pack.", show_default=False)],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="The archive to write (default: audit-RUN_ID.zip)."),
    ] = None,
) -> None:
    """Write one signed zip of a run: config, dataset hash, report, gate, results, versions."""
    import os
    import tempfile

    from arbiter import escape
    from arbiter.cli.common import open_store, settings
    from arbiter.errors import InputError
    from arbiter.service.attestation import configured_signer
    from arbiter.service.audit_pack import build_audit_pack

    config = settings()
    key = configured_signer(config)
    if key is None:
        raise InputError(
            "audit-pack signs the archive: make a key with `arbiter keys signing init` and "
            "set ARBITER_SIGNING_KEY"
        )
    store = open_store(config)
    try:
        run = store.get_run(run_id)
        data = build_audit_pack(store, run.id, key)
    finally:
        store.close()
    target = out or Path(f"audit-{run.id}.zip")
    folder = target.parent if str(target.parent) else Path(".")
    try:  # written whole or not at all
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".audit-", suffix=".zip")
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except OSError as exc:
        raise InputError(f"{target}: cannot write the audit pack: {exc.strerror or exc}") from None
    typer.echo(
        escape.terminal(f"wrote {target} ({len(data):,} bytes, signed with key {key.key_id})")
    )
    typer.echo(escape.terminal(f"verify it with: arbiter verify {target}"))
