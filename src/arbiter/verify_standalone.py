"""Verify an Arbiter signature offline, with nothing of Arbiter's: Python and ``cryptography``.

Copy this one file next to the artifact and run::

    python verify_standalone.py ARTIFACT PUBLIC_KEY.pem

``ARTIFACT`` is a signed record (``.json``: a registration, an exported signature), a
run's audit pack or a deployment's assurance pack (``.zip``); ``PUBLIC_KEY.pem`` is the
signer's Ed25519 public key (PEM). Exit 0: verified; 1: verification failed (every
problem is printed, one per line); 3: the artifact or key cannot be read.

A signed record is a JSON *envelope*: ``payload`` is the signed text itself (canonical
JSON: sorted keys, no spaces, ASCII), ``digest`` its sha256, ``signature`` the Ed25519
signature of the payload's bytes (base64), ``public_key`` the signer's raw key (base64).
The file is exactly :func:`render_envelope` of the envelope, so a change of any byte,
even outside the signed text, is detected. An audit pack is a zip archive written
byte-for-byte as :func:`render_pack` writes it, whose ``signature.json`` signs the
sha256 of every other member; its ``attestation.json``, the run's own signature made
when the run ended, binds each per-example result of ``results.jsonl``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "ENVELOPE_FORMAT",
    "PACK_SIGNATURE",
    "Verification",
    "canonical_json",
    "key_id",
    "load_public_key",
    "main",
    "pack_order",
    "pair_digests",
    "render_envelope",
    "render_pack",
    "sha256_hex",
    "verify_artifact",
    "verify_envelope",
]

ENVELOPE_FORMAT = "arbiter-signature/1"
"""The ``format`` of every envelope this module verifies."""
PACK_SIGNATURE = "signature.json"
"""The member of an audit pack holding its signature."""
_ENVELOPE_KEYS = ("algorithm", "digest", "format", "key_id", "payload", "public_key", "signature")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_SHOWN = 12  # hex digits of a digest shown in a message
_SHOWN_EXAMPLES = 20


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, no spaces, ASCII only."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, in hex."""
    return hashlib.sha256(data).hexdigest()


def key_id(public_key: Ed25519PublicKey) -> str:
    """A key's short name: the first 16 hex digits of the sha256 of its 32 raw bytes."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sha256_hex(raw)[:16]


def render_envelope(envelope: Mapping[str, Any]) -> bytes:
    """The bytes of an envelope's file: indented, sorted JSON and a final newline."""
    text = json.dumps(envelope, indent=2, sort_keys=True, ensure_ascii=True)
    return (text + "\n").encode("ascii")


def render_pack(members: Sequence[tuple[str, bytes]]) -> bytes:
    """The bytes of an audit pack: members stored uncompressed, in the given order, with
    fixed times and modes, so the same members always give the same archive."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def pack_order(names: Sequence[str]) -> list[str]:
    """The order of an audit pack's members: every other member by name, then
    ``signature.json`` last; a pack in any other order is not one as written."""
    return [*sorted(n for n in names if n != PACK_SIGNATURE), PACK_SIGNATURE]


def pair_digests(line: Mapping[str, Any]) -> tuple[str, str]:
    """The sha256 of one per-example result's output and of the rest of what was found.

    Args:
        line: One result as an audit pack's ``results.jsonl`` holds it (and as a run's
            attestation was computed): ``output``, ``passed``, ``scores``,
            ``error_type``, ``error_message``.

    Returns:
        ``(output_sha256, result_sha256)``.
    """
    output = sha256_hex(canonical_json(line.get("output")))
    found = {name: line.get(name) for name in ("passed", "scores", "error_type", "error_message")}
    return output, sha256_hex(canonical_json(found))


def load_public_key(data: bytes, where: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM bytes.

    Raises:
        ValueError: ``where: why`` when the bytes are not an Ed25519 public key.
    """
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{where}: not an Ed25519 public key")
    return key


@dataclass
class Verification:
    """What checking one artifact found."""

    kind: str = "?"
    """What was signed (``run_report``, ``verdict``, ``audit_pack``, ...)."""
    record_id: str = "?"
    """Which record."""
    key_id: str | None = None
    """The key the signature was checked with."""
    payload: dict[str, Any] | None = None
    """The signed document, once its signature held."""
    problems: list[str] = field(default_factory=list)
    """Every failure, one line each; empty: verified."""
    notes: list[str] = field(default_factory=list)
    """What else the verification checked or could not check."""

    @property
    def ok(self) -> bool:
        """Whether nothing failed."""
        return not self.problems


def _clip(value: Any) -> str:
    """``repr(value)``, at most 60 characters: an artifact's text is untrusted."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _b64(value: Any, what: str, size: int, problems: list[str]) -> bytes | None:
    if not isinstance(value, str):
        problems.append(f"{what}: not a base64 string")
        return None
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        problems.append(f"{what}: not valid base64")
        return None
    if len(raw) != size or base64.b64encode(raw).decode("ascii") != value:
        problems.append(f"{what}: not {size} bytes in canonical base64")
        return None
    return raw


def verify_envelope(
    envelope: Any, trusted: Ed25519PublicKey | None, *, what: str = "signature"
) -> Verification:
    """Check an envelope: shape, digest, key and signature, then read its payload.

    Args:
        envelope: The parsed envelope.
        trusted: The key it must be signed with; None: the key embedded in it (the
            result then says it was not checked against a trusted key).
        what: What the envelope is, for messages.
    """
    result = Verification()
    problems = result.problems
    if not isinstance(envelope, dict) or tuple(sorted(envelope)) != _ENVELOPE_KEYS:
        got = sorted(envelope)[:10] if isinstance(envelope, dict) else type(envelope).__name__
        problems.append(
            f"{what}: not an envelope with fields {', '.join(_ENVELOPE_KEYS)} ({_clip(got)})"
        )
        return result
    if envelope["format"] != ENVELOPE_FORMAT or envelope["algorithm"] != "Ed25519":
        problems.append(
            f"{what}: format {_clip(envelope['format'])} / algorithm "
            f"{_clip(envelope['algorithm'])}; expected {ENVELOPE_FORMAT!r} / 'Ed25519'"
        )
    payload = envelope["payload"]
    if not isinstance(payload, str) or not payload.isascii():
        problems.append(f"{what}: field 'payload' is not an ASCII string")
        return result
    data = payload.encode("ascii")
    digest = sha256_hex(data)
    if envelope["digest"] != digest:
        problems.append(
            f"{what}: field 'digest': the payload's sha256 is {digest[:_SHOWN]}..., "
            f"the envelope says {str(envelope['digest'])[:_SHOWN]}... (payload or digest altered)"
        )
    raw_key = _b64(envelope["public_key"], f"{what}: field 'public_key'", 32, problems)
    signature = _b64(envelope["signature"], f"{what}: field 'signature'", 64, problems)
    embedded = None
    if raw_key is not None:
        try:
            embedded = Ed25519PublicKey.from_public_bytes(raw_key)
        except ValueError:
            problems.append(f"{what}: field 'public_key' is not an Ed25519 public key")
    if embedded is not None and envelope["key_id"] != key_id(embedded):
        problems.append(f"{what}: field 'key_id' does not name the embedded public key")
    if embedded is not None and trusted is not None and key_id(trusted) != key_id(embedded):
        problems.append(
            f"{what}: wrong key: signed with key {key_id(embedded)}, expected key {key_id(trusted)}"
        )
    key = trusted or embedded
    if key is not None:
        result.key_id = key_id(key)
        if trusted is None:
            result.notes.append(
                f"checked with the key embedded in the artifact ({result.key_id}), not a "
                "trusted one: give the signer's public key to know who signed it"
            )
    if key is not None and signature is not None:
        try:
            key.verify(signature, data)
        except InvalidSignature:
            problems.append(
                f"{what}: bad signature: the payload was not signed by key {key_id(key)}"
            )
    try:
        document = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        problems.append(f"{what}: the payload is not JSON ({_clip(str(exc))})")
        return result
    if not isinstance(document, dict) or canonical_json(document) != data:
        problems.append(f"{what}: the payload is not a canonical JSON object")
        return result
    result.kind = str(document.get("kind", "?"))
    result.record_id = str(document.get("record_id", "?"))
    if not problems:
        result.payload = document
    return result


def verify_artifact(data: bytes, trusted: Ed25519PublicKey | None) -> Verification:
    """Check a signed file: an envelope (JSON) or an audit pack (zip)."""
    if data.startswith(b"PK"):
        return _verify_pack(data, trusted)
    try:
        envelope = json.loads(data.decode("ascii"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return Verification(
            problems=[f"the file is not an ASCII JSON envelope ({_clip(str(exc))})"]
        )
    result = verify_envelope(envelope, trusted)
    if isinstance(envelope, dict) and render_envelope(envelope) != data:
        rendered = render_envelope(envelope)
        at = next((i for i, (a, b) in enumerate(zip(rendered, data, strict=False)) if a != b), None)
        at = min(len(rendered), len(data)) if at is None else at
        result.problems.append(
            f"the file was altered outside the signed fields (from byte {at}): it is not "
            "exactly the envelope as written"
        )
        result.payload = None
    return result


def _verify_pack(data: bytes, trusted: Ed25519PublicKey | None) -> Verification:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if any(info.compress_type != zipfile.ZIP_STORED for info in infos):
                # Arbiter stores members uncompressed: nothing is inflated beyond the file's
                # own size (no zip bomb), and the archive can be rebuilt byte for byte.
                return Verification(
                    kind="audit_pack",
                    problems=["the archive has compressed members: it is not a pack as written"],
                )
            members = [(info.filename, archive.read(info)) for info in infos]
    except Exception as exc:  # a damaged archive fails in many ways (CRC, flags, sizes)
        return Verification(kind="audit_pack", problems=[f"the archive cannot be read ({exc})"])
    contents = dict(members)
    if PACK_SIGNATURE not in contents or len(contents) != len(members):
        return Verification(
            kind="audit_pack",
            problems=[f"the archive has no {PACK_SIGNATURE}, or a member appears twice"],
        )
    try:
        envelope = json.loads(contents[PACK_SIGNATURE].decode("ascii"))
    except (ValueError, RecursionError) as exc:
        return Verification(kind="audit_pack", problems=[f"{PACK_SIGNATURE}: not JSON ({exc})"])
    result = verify_envelope(envelope, trusted, what=PACK_SIGNATURE)
    names = [name for name, _ in members]
    if names != pack_order(names):
        result.problems.append(
            "the archive's members are not in the order written (each by name, "
            f"{PACK_SIGNATURE} last): {_clip(names)}"
        )
    if render_pack(members) != data:
        result.problems.append(
            "the archive was altered outside its members' contents (headers, times, order)"
        )
    if isinstance(envelope, dict) and render_envelope(envelope) != contents[PACK_SIGNATURE]:
        result.problems.append(f"{PACK_SIGNATURE}: not exactly the envelope as written")
    payload = result.payload
    if payload is None:
        return result
    subject = payload.get("subject")
    listed = subject.get("files") if isinstance(subject, dict) else None
    # A run's audit pack and a deployment's assurance pack share the format.
    if payload.get("kind") not in ("audit_pack", "assurance_pack") or not isinstance(listed, dict):
        result.problems.append(f"{PACK_SIGNATURE}: the payload is not a pack's manifest")
        return result
    for name in sorted(set(contents) - {PACK_SIGNATURE}):
        if name not in listed:
            result.problems.append(f"member {name}: not covered by the signature")
        elif sha256_hex(contents[name]) != listed[name]:
            result.problems.append(
                f"member {name}: its sha256 differs from the signed one (altered)"
            )
    for name in sorted(set(listed) - set(contents)):
        result.problems.append(f"member {name}: signed but missing from the archive")
    if not result.problems and payload.get("kind") == "assurance_pack":
        result.notes.append(f"{len(listed)} members match the signed manifest")
    if not result.problems and "attestation.json" in contents:
        try:
            _check_results(contents, trusted, result)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            result.problems.append(f"attestation.json / results.jsonl: malformed ({_clip(exc)})")
    return result


def _check_results(
    contents: Mapping[str, bytes], trusted: Ed25519PublicKey | None, result: Verification
) -> None:
    """Each per-example result of the pack against the run's own signature."""
    attestation = verify_envelope(
        json.loads(contents["attestation.json"]), trusted, what="attestation.json"
    )
    result.problems.extend(attestation.problems)
    if attestation.payload is None:
        return
    signed = attestation.payload.get("subject", {}).get("pairs", [])
    by_pair = {(p["example_id"], p["repetition"]): p for p in signed}
    seen = set()
    for number, text in enumerate(contents.get("results.jsonl", b"").splitlines(), 1):
        line = json.loads(text)
        pair = (line.get("example_id"), line.get("repetition"))
        seen.add(pair)
        where = f"results.jsonl:{number}: example {pair[0]!r} repetition {pair[1]}"
        if pair not in by_pair:
            result.problems.append(f"{where}: not in the run's signed results")
            continue
        output, found = pair_digests(line)
        if output != by_pair[pair]["output_sha256"]:
            result.problems.append(f"{where}: output differs from the signed one")
        if found != by_pair[pair]["result_sha256"]:
            result.problems.append(f"{where}: scores or outcome differ from the signed ones")
    for pair in sorted(set(by_pair) - seen):
        result.problems.append(f"example {pair[0]!r} repetition {pair[1]}: signed but missing")
    if len(result.problems) > _SHOWN_EXAMPLES:  # one line per example, up to a point
        hidden = len(result.problems) - _SHOWN_EXAMPLES
        del result.problems[_SHOWN_EXAMPLES:]
        result.problems.append(f"and {hidden} more examples that differ")
    result.notes.append(f"{len(seen)} per-example results match the run's signature")


def _printable(text: str) -> str:
    """``text`` with what a terminal would obey (escapes, controls) shown as ``\\xNN``."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def main(argv: Sequence[str] | None = None) -> int:
    """``python verify_standalone.py ARTIFACT PUBLIC_KEY``: 0 verified, 1 failed, 3 bad input."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python verify_standalone.py ARTIFACT PUBLIC_KEY.pem", file=sys.stderr)
        return 3
    try:
        with open(args[0], "rb") as artifact, open(args[1], "rb") as pem:
            data, key_pem = artifact.read(), pem.read()
        trusted = load_public_key(key_pem, args[1])
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    result = verify_artifact(data, trusted)
    for problem in result.problems:
        print(f"FAILED: {_printable(problem)}")
    if result.ok:
        print(
            f"verified: {_printable(result.kind)} {_printable(result.record_id)}, "
            f"signed with key {result.key_id}"
        )
        for line in result.notes:
            print(f"note: {_printable(line)}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
