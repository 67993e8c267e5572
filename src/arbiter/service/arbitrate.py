"""Judging one output for a caller of the server: judge, store, own, sign.

The server's ``POST /v1/arbitrate`` and ``POST /v1/replay`` are these functions. Each
arbitration is a jury run of one case (kind ``judge``, ``source: api``), stored in one
transaction with its critiques and owner (the key that asked), and signed when a
signing key is configured.
"""

from __future__ import annotations

from arbiter.contract import Case, Judgment, JuryRunInfo
from arbiter.errors import InputError
from arbiter.jury.audit import VerdictChange
from arbiter.jury.jury import Jury
from arbiter.service.attestation import CONFIGURED, attest_verdict, resolve_signer
from arbiter.service.jury import replay_run
from arbiter.store import Store
from arbiter.store.arbitration_repository import save_arbitration
from arbiter.store.browse_repository import StoredVerdict
from arbiter.store.ownership_repository import visible_id

__all__ = ["arbitrate", "replay_visible_run"]


async def arbitrate(store: Store, jury: Jury, case: Case, *, owner: str | None) -> StoredVerdict:
    """Judge ``case`` with ``jury``, store the verdict, and return it as stored.

    Args:
        store: The store.
        jury: The jury (the server keeps one for its lifetime).
        case: The output to judge, with its task and context.
        owner: The API key that asked (owns the jury run and the verdict); None: nobody.

    Returns:
        The stored verdict, with its ``id``.
    """
    roster = [spec.model_dump(mode="json") for spec in jury.critics]
    key = resolve_signer(CONFIGURED)  # a key that cannot be read fails before anything is stored
    verdict = await jury.judge_async(case)
    stored = save_arbitration(store, roster, case, verdict, owner=owner, config={"source": "api"})
    if key is not None:
        attest_verdict(store, stored.run_id, case, verdict, roster=roster, signer=key)
    return stored


def replay_visible_run(
    store: Store, run_id: str | None, *, viewer: str | None
) -> tuple[JuryRunInfo, list[Judgment], list[VerdictChange]]:
    """Re-synthesize a stored jury run (see :func:`arbiter.service.jury.replay_run`).

    Raises:
        InputError: There is no jury run yet.
        StoreError: No run matches ``run_id``, or the viewer may not see it.
    """
    if run_id is not None:
        run_id = visible_id(store, "jury_run", run_id, viewer)  # hidden answers as absent
    elif viewer is not None:
        raise InputError("give the run_id of a jury run your key made (a key replays its own runs)")
    return replay_run(store, run_id)
