"""Integrity: what Arbiter's own signatures say of an agent's scored records, and the cap
it puts on the ladder.

A signature can only hold a state down, never lift it: ``signed`` applies no cap,
``unsigned`` (some record has no signature) caps at proven, ``changed`` (some record's
signature fails, so it was altered after it was signed) caps at watch, and ``unknown``
(no signing key is configured to check against, or no record) applies no cap and says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from arbiter.contract.trust import Integrity, SignatureCheck, TrustState
from arbiter.trust.conduct import RANK, lower

__all__ = ["CAPS", "apply_cap", "integrity_of"]

CAPS: dict[Integrity, TrustState | None] = {
    "signed": None,
    "unsigned": "proven",
    "changed": "watch",
    "unknown": None,
}
"""The highest state each integrity allows (None: no cap)."""


def integrity_of(checks: Iterable[SignatureCheck], *, key_configured: bool) -> Integrity:
    """The integrity of an agent from the checks of its records' signatures."""
    if not key_configured:
        return "unknown"
    seen = set(checks)
    if not seen:
        return "unknown"
    if "failed" in seen:
        return "changed"
    if "missing" in seen:
        return "unsigned"
    return "signed"


def apply_cap(state: TrustState, integrity: Integrity) -> tuple[TrustState, bool, str | None]:
    """The state after the integrity cap, whether the cap lowered it, and a note."""
    cap = CAPS[integrity]
    if integrity == "unknown":
        return state, False, "integrity unknown: no signing key to check against, no cap applied"
    if cap is None:
        return state, False, None
    capped = lower(state, cap)
    lowered = RANK[capped] < RANK[state]
    note = f"integrity {integrity} caps the state at {cap}" if lowered else None
    return capped, lowered, note
