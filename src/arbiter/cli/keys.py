"""``arbiter keys``: API keys of the server and, under ``keys signing``, the signing key.

Commands attach to :data:`keys_app`: API-key commands here, the signing-key commands
in :mod:`arbiter.cli.signing`.
"""

from __future__ import annotations

import typer

from arbiter.cli.app import app

__all__ = ["keys_app"]

keys_app = typer.Typer(
    name="keys",
    help="Keys: API keys of `arbiter serve`, and the Ed25519 key that signs verdicts.",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")
