"""Ed25519 signatures over canonical JSON digests: the key file, signing, verifying.

A signed record is an *envelope* (see :mod:`arbiter.verify_standalone`, which verifies
it with nothing of Arbiter's): the signed document as canonical JSON text, its sha256,
the Ed25519 signature of that text, and the signer's public key. The key is a PEM file
(PKCS#8, mode 0600) named by ``ARBITER_SIGNING_KEY``; its public key sits beside it
(``key.pem`` -> ``key.pub.pem``), readable by ``openssl`` as well.

Example::

    key = create_signing_key(Path("signing-key.pem"))
    envelope = key.sign({"kind": "verdict", "record_id": "r1", "claim": {...}})
    assert verify_envelope(envelope, key.public_key).ok
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from arbiter.errors import InputError
from arbiter.verify_standalone import (
    ENVELOPE_FORMAT,
    Verification,
    canonical_json,
    key_id,
    load_public_key,
    pair_digests,
    render_envelope,
    render_pack,
    sha256_hex,
    verify_artifact,
    verify_envelope,
)

__all__ = [
    "ENVELOPE_FORMAT",
    "SigningKey",
    "Verification",
    "canonical_json",
    "create_signing_key",
    "digest_of",
    "key_id",
    "load_signing_key",
    "load_verify_key",
    "pair_digests",
    "public_key_path",
    "render_envelope",
    "render_pack",
    "sha256_hex",
    "verify_artifact",
    "verify_envelope",
]


def digest_of(value: Any) -> str:
    """The sha256 (hex) of a JSON value's canonical bytes."""
    return sha256_hex(canonical_json(value))


def public_key_path(path: Path) -> Path:
    """Where a signing key's public key is written: ``key.pem`` -> ``key.pub.pem``."""
    return path.with_name(path.name.removesuffix(".pem") + ".pub.pem")


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key read from (or written to) its file."""

    private_key: Ed25519PrivateKey
    """The key."""
    path: Path
    """Its file."""

    @property
    def public_key(self) -> Ed25519PublicKey:
        """The public half."""
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        """The key's short name (16 hex digits of the sha256 of its public bytes)."""
        return key_id(self.public_key)

    def public_pem(self) -> bytes:
        """The public key as PEM (SubjectPublicKeyInfo), as ``openssl`` reads it."""
        return self.public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, document: Mapping[str, Any]) -> dict[str, str]:
        """The envelope of ``document``: its canonical text, digest, signature and key.

        Raises:
            ValueError: ``document`` is not JSON (a set, an object, ...).
        """
        payload = canonical_json(dict(document))
        raw = self.public_key.public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return {
            "algorithm": "Ed25519",
            "digest": sha256_hex(payload),
            "format": ENVELOPE_FORMAT,
            "key_id": self.key_id,
            "payload": payload.decode("ascii"),
            "public_key": base64.b64encode(raw).decode("ascii"),
            "signature": base64.b64encode(self.private_key.sign(payload)).decode("ascii"),
        }


def _write(path: Path, data: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(descriptor, mode)  # an existing file keeps its mode otherwise
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def create_signing_key(path: Path, *, force: bool = False) -> SigningKey:
    """Make a new Ed25519 key at ``path`` (mode 0600) and its public key beside it.

    Args:
        path: The private key's file; its folder is created.
        force: Replace a key that is already there.

    Raises:
        InputError: A key (or its public file) exists and ``force`` is not given, or
            the files cannot be written.
    """
    public = public_key_path(path)
    if not force and (path.exists() or public.exists()):
        there = path if path.exists() else public
        raise InputError(
            f"{there} already exists; refusing to replace a signing key (records signed "
            "with it could no longer be verified by its owner): give --force to replace it"
        )
    key = SigningKey(Ed25519PrivateKey.generate(), path)
    private_pem = key.private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, private_pem, 0o600)
        _write(public, key.public_pem(), 0o644)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the signing key: {exc.strerror or exc}") from None
    return key


def load_signing_key(path: Path) -> SigningKey:
    """The Ed25519 private key in ``path`` (PEM, unencrypted).

    Raises:
        InputError: The file is missing, unreadable, or not an Ed25519 private key.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read the signing key (ARBITER_SIGNING_KEY): {exc.strerror or exc}; "
            "make one with: arbiter keys signing init"
        ) from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise InputError(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(f"{path}: the signing key is not an Ed25519 key")
    return SigningKey(key, path)


def load_verify_key(path: Path) -> Ed25519PublicKey:
    """The public key to verify with: a PEM public key, or the public half of a private one.

    Raises:
        InputError: The file is missing, unreadable, or holds no Ed25519 key.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the public key: {exc.strerror or exc}") from None
    if b"PRIVATE KEY" in data:
        return load_signing_key(path).public_key
    try:
        return load_public_key(data, str(path))
    except ValueError as exc:
        raise InputError(str(exc)) from None
