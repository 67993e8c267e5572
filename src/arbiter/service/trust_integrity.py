"""Checking a stored run's signature for the trust status: verified, missing or failed.

Kept apart from :mod:`arbiter.service.trust` (which ingest imports) because verifying
reads every kind of signed record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arbiter.contract.trust import SignatureCheck
from arbiter.errors import InputError, StoreError
from arbiter.service.verification import verify_stored
from arbiter.store import Store

if TYPE_CHECKING:
    from collections.abc import Callable

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["signature_checker"]


def signature_checker(store: Store, trusted: Ed25519PublicKey) -> Callable[[str], SignatureCheck]:
    """A check of one stored run's score-set signature under ``trusted``."""

    def check(run_id: str) -> SignatureCheck:
        try:
            results = verify_stored(store, run_id, trusted)
        except (InputError, StoreError):
            return "missing"
        signed = [r for r in results if r.kind == "trajectory_scores"]
        if not signed:
            return "missing"
        return "verified" if all(r.ok for r in signed) else "failed"

    return check
