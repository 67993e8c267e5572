"""``arbiter keys signing init``: make the Ed25519 key that signs what Arbiter stores.

The key is written with mode 0600 and its public key beside it; an existing key is kept
unless ``--force`` is given. Signing starts once ``ARBITER_SIGNING_KEY`` names the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.keys import keys_app

if TYPE_CHECKING:
    from arbiter.service.runs import GateFloors
    from arbiter.store import Store

__all__ = ["preregister_spec", "registered_floors", "signing_app"]

signing_app = typer.Typer(
    name="signing",
    help="The Ed25519 key that signs verdicts, run reports and gate decisions.",
    no_args_is_help=True,
)
keys_app.add_typer(signing_app, name="signing")


@signing_app.command("init")
def init(
    path: Annotated[
        Path | None,
        typer.Option(
            "--path", help="Where to write the key (default: ARBITER_HOME/signing-key.pem)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key.")] = False,
) -> None:
    """Make an Ed25519 signing key (mode 0600) and its public key beside it."""
    from arbiter import escape
    from arbiter.attest import create_signing_key, public_key_path
    from arbiter.cli.common import settings

    target = path or settings().home / "signing-key.pem"
    key = create_signing_key(target, force=force)
    where = target.resolve()
    for line in (
        f"signing key: {where} (mode 0600, key id {key.key_id})",
        f"public key:  {public_key_path(where)} (give it to whoever verifies)",
        f"to sign with it, set: ARBITER_SIGNING_KEY={where}",
    ):
        typer.echo(escape.terminal(line))


def preregister_spec(spec: Path, out: Path | None, *, run_id: str | None) -> None:
    """``arbiter gate --preregister SPEC``: sign the eval file's gate, dataset hash and
    scorers into a registration file, before any run.

    Raises:
        InputError: A run id is given, no signing key is configured, or the eval file,
            its dataset or the registration file is refused.
    """
    from arbiter import escape
    from arbiter.cli.run_steps import plan_from_file
    from arbiter.datasets import load_dataset
    from arbiter.errors import InputError
    from arbiter.service.attestation import configured_signer
    from arbiter.service.preregistration import default_registration_path, preregister

    if run_id is not None:
        raise InputError("--preregister registers a gate before the run: give no run id")
    key = configured_signer()
    if key is None:
        raise InputError(
            "--preregister signs the registration: make a key with `arbiter keys signing "
            "init` and set ARBITER_SIGNING_KEY"
        )
    plan = plan_from_file(spec)
    dataset = load_dataset(plan.dataset_path, output_field=plan.output_field)
    target = out or default_registration_path(spec)
    envelope = preregister(plan, dataset, key, out=target)
    for line in (
        f"registered: {target} (digest {envelope['digest'][:16]}, key {key.key_id})",
        f"  dataset {dataset.name} {dataset.content_hash[:12]}, {len(plan.scorers)} scorer(s), "
        f"floors from {spec.name} [gate]",
        f"gate the run with: arbiter gate RUN_ID --registration {target}",
    ):
        typer.echo(escape.terminal(line))


def registered_floors(
    store: Store,
    run_id: str,
    registration: Path,
    given: GateFloors | None,
    baseline: str | None,
) -> tuple[GateFloors, str | None]:
    """The floors and baseline of a verified registration that ``run_id`` matches.

    Raises:
        InputError: The registration does not verify, or the run or the given floors
            differ from it (each difference named).
    """
    from arbiter.cli.common import note, settings
    from arbiter.cli.verify import trusted_key
    from arbiter.service.preregistration import check_registration, read_registration
    from arbiter.service.runs import load_run

    trusted = trusted_key(None, settings())
    if trusted is None:
        note(
            "warning: no signing key configured: the registration is checked against the "
            "key embedded in it, which anyone could have made",
            style="yellow",
        )
    found = read_registration(registration, trusted)
    run = load_run(store, run_id)
    return check_registration(found, run.info, run.report.scorers, given, baseline)
