"""Writing and reading signatures through a :class:`~arbiter.store.Store`.

An envelope goes in and comes out as a plain mapping of strings (``format``,
``algorithm``, ``key_id``, ``public_key``, ``digest``, ``signature``, ``payload``): the
store keeps it verbatim and knows nothing of keys or cryptography.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, update

from arbiter.store.jury_models import VerdictRow
from arbiter.store.repository import Store
from arbiter.store.signature_models import SignatureRow

__all__ = [
    "claim_digest_of",
    "claim_digests",
    "find_signatures",
    "get_signature",
    "list_signatures",
    "save_claim_digest",
    "save_signature",
    "verdict_key",
]

_FORMAT = "arbiter-signature/1"


def save_signature(
    store: Store,
    kind: str,
    record_id: str,
    envelope: Mapping[str, str],
    *,
    claim_sha256: str | None = None,
) -> None:
    """Keep the envelope signing ``(kind, record_id)``, replacing an earlier one.

    Args:
        store: The store.
        kind: What was signed.
        record_id: Which record.
        envelope: The signature.
        claim_sha256: The sha256 of the signed claim's canonical JSON, kept beside it.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    row = {
        "kind": kind,
        "record_id": record_id,
        "key_id": envelope["key_id"],
        "public_key": envelope["public_key"],
        "digest": envelope["digest"],
        "signature": envelope["signature"],
        "payload": envelope["payload"],
        "created_at": datetime.now(UTC),
        "claim_sha256": claim_sha256,
    }
    # Core statements on one connection: a signature rides along every stored verdict, so
    # it costs one short transaction, not an ORM session.
    with store.guard(f"store the signature of {kind} {record_id}"), store.engine.begin() as c:
        c.execute(
            delete(SignatureRow).where(
                SignatureRow.kind == kind, SignatureRow.record_id == record_id
            )
        )
        c.execute(insert(SignatureRow), [row])


def _envelope(row: SignatureRow) -> dict[str, str]:
    return {
        "algorithm": "Ed25519",
        "digest": row.digest,
        "format": _FORMAT,
        "key_id": row.key_id,
        "payload": row.payload,
        "public_key": row.public_key,
        "signature": row.signature,
    }


def get_signature(store: Store, kind: str, record_id: str) -> dict[str, str] | None:
    """The envelope signing ``(kind, record_id)``, or None when it was never signed."""
    with store.guard("read a signature"), store.session() as session:
        row = session.get(SignatureRow, (kind, record_id))
        return _envelope(row) if row is not None else None


def list_signatures(
    store: Store, kind: str, *, prefix: str = ""
) -> list[tuple[str, dict[str, str]]]:
    """Every ``(record_id, envelope)`` of ``kind`` whose record id starts with ``prefix``,
    ordered by record id."""
    query = select(SignatureRow).where(SignatureRow.kind == kind)
    if prefix:
        query = query.where(SignatureRow.record_id.startswith(prefix, autoescape=True))
    with store.guard("read signatures"), store.session() as session:
        rows = session.scalars(query.order_by(SignatureRow.record_id)).all()
        return [(row.record_id, _envelope(row)) for row in rows]


def find_signatures(store: Store, record_id: str) -> list[tuple[str, dict[str, str]]]:
    """Every ``(kind, envelope)`` signing a record with id ``record_id``, of any kind."""
    query = select(SignatureRow).where(SignatureRow.record_id == record_id)
    with store.guard("read signatures"), store.session() as session:
        rows = session.scalars(query.order_by(SignatureRow.kind)).all()
        return [(row.kind, _envelope(row)) for row in rows]


def verdict_key(store: Store, verdict_id: int) -> tuple[str, str] | None:
    """The ``(jury run id, case id)`` of the stored verdict ``verdict_id``, or None."""
    with store.guard("read a verdict"), store.session() as session:
        row = session.get(VerdictRow, verdict_id)
        return (row.run_id, row.case_id) if row is not None else None


def claim_digests(store: Store, kind: str, record_ids: Collection[str]) -> dict[str, str | None]:
    """The kept claim digest of each of ``record_ids`` signed as ``kind`` (None: a
    signature made before the digest was kept); unsigned records are left out."""
    if not record_ids:
        return {}
    query = select(SignatureRow.record_id, SignatureRow.claim_sha256).where(
        SignatureRow.kind == kind, SignatureRow.record_id.in_(list(record_ids))
    )
    with store.guard("read signatures"), store.session() as session:
        return {record_id: digest for record_id, digest in session.execute(query).all()}


def claim_digest_of(store: Store, kind: str, record_id: str) -> str | None:
    """The kept claim digest of one signed record (None: none kept, or not signed)."""
    return claim_digests(store, kind, [record_id]).get(record_id)


def save_claim_digest(store: Store, kind: str, record_id: str, claim_sha256: str) -> None:
    """Keep the claim digest of a signature made before digests were kept."""
    with store.guard("store a claim digest"), store.engine.begin() as connection:
        connection.execute(
            update(SignatureRow)
            .where(SignatureRow.kind == kind, SignatureRow.record_id == record_id)
            .values(claim_sha256=claim_sha256)
        )
