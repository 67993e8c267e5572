"""``arbiter keys``: API keys of the server and, under ``keys signing``, the signing key.

Commands attach to :data:`keys_app`: API-key commands here, the signing-key commands
in :mod:`arbiter.cli.signing`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, open_store

__all__ = ["keys_app"]

keys_app = typer.Typer(
    name="keys",
    help="Keys: API keys of `arbiter serve`, and the Ed25519 key that signs verdicts.",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", help="What the key is for (shown in listings).")],
    admin: Annotated[
        bool, typer.Option("--admin", help="The key sees every record, not only its own.")
    ] = False,
) -> None:
    """Make an API key of `arbiter serve`; the key is printed once, on stdout."""
    from arbiter.errors import InputError
    from arbiter.store.api_key_repository import create_api_key

    if not name.strip() or len(name) > 200:
        raise InputError("The '--name' option must be 1 to 200 characters. Got an empty name.")
    store = open_store()
    try:
        info, key = create_api_key(store, name, admin=admin)
    finally:
        store.close()
    kind = "admin key" if info.admin else "key"
    note(f"created {kind} {info.id} ({name}); store it now, it is not shown again:")
    typer.echo(key)


@keys_app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (arbiter keys list).")],
) -> None:
    """Revoke an API key: requests with it are refused from now on."""
    from arbiter.errors import InputError
    from arbiter.store.api_key_repository import count_api_keys, revoke_api_key

    store = open_store()
    try:
        gone = revoke_api_key(store, key_id)
        left = count_api_keys(store)
    finally:
        store.close()
    if gone is None:
        raise InputError(f"no API key with id {key_id!r}; see arbiter keys list")
    note(f"revoked key {gone.id} ({gone.name})")
    if left == 0:
        note(
            "no API keys left: a running `arbiter serve` that started with keys is locked "
            "(it refuses every request but health until a key is created); one started "
            "now is open and binds loopback only"
        )


@keys_app.command("list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="Print the keys as JSON.")] = False,
) -> None:
    """List the API keys (their ids, names and flags; never the keys)."""
    from arbiter.store.api_key_repository import list_api_keys

    store = open_store()
    try:
        keys = list_api_keys(store)
    finally:
        store.close()
    if as_json:
        echo_json(
            [
                {
                    "id": k.id,
                    "name": k.name,
                    "admin": k.admin,
                    "created_at": k.created_at.isoformat(),
                }
                for k in keys
            ]
        )
        return
    if not keys:
        note("no API keys: `arbiter serve` is open and binds loopback only")
        return
    from arbiter import escape

    for k in keys:
        role = "admin" if k.admin else "key"
        shown = escape.terminal(k.name, single_line=True)
        typer.echo(f"{k.id}  {role:<5}  {k.created_at:%Y-%m-%d %H:%M:%S}  {shown}")
