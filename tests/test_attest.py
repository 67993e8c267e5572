"""Ed25519 envelopes: the key file, signing, and verification that names what fails.

The standalone verifier is run as a script in an isolated interpreter (nothing of
Arbiter's importable), and the openssl recipe of docs/signing.md is run as written.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from arbiter.attest import (
    SigningKey,
    canonical_json,
    create_signing_key,
    load_signing_key,
    load_verify_key,
    public_key_path,
    render_envelope,
    sha256_hex,
    verify_artifact,
    verify_envelope,
)
from arbiter.errors import InputError

STANDALONE = Path(__file__).resolve().parents[1] / "src" / "arbiter" / "verify_standalone.py"

DOCUMENT: dict[str, Any] = {
    "schema": "arbiter-attestation/1",
    "kind": "verdict",
    "record_id": "run-1/case \u00e9 <script>",
    "subject": {"output_sha256": sha256_hex(b"an answer"), "case_id": "case"},
    "scorers": [{"name": "label", "version": "1", "args": {}}],
    "claim": {"decision": "ACCEPT", "confidence": 0.8125, "callouts": []},
}


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return create_signing_key(tmp_path / "keys" / "signing-key.pem")


@pytest.fixture
def artifact(key: SigningKey) -> bytes:
    return render_envelope(key.sign(DOCUMENT))


def test_a_new_key_is_private_to_its_owner_and_its_public_key_sits_beside_it(
    key: SigningKey,
) -> None:
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    public = public_key_path(key.path)
    assert public.name == "signing-key.pub.pem"
    assert load_verify_key(public) == key.public_key
    assert load_signing_key(key.path).key_id == key.key_id


def test_an_existing_key_is_never_replaced_without_force(key: SigningKey) -> None:
    with pytest.raises(InputError, match=r"already exists.*--force"):
        create_signing_key(key.path)
    replaced = create_signing_key(key.path, force=True)
    assert replaced.key_id != key.key_id
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    assert load_verify_key(public_key_path(key.path)) == replaced.public_key


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"", "not an unencrypted PEM private key"), (None, "cannot read the signing key")],
)
def test_an_unreadable_key_is_one_input_error(
    tmp_path: Path, content: bytes | None, needle: str
) -> None:
    path = tmp_path / "key.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=needle):
        load_signing_key(path)


def test_the_envelope_signs_the_canonical_text_and_verifies(key: SigningKey) -> None:
    envelope = key.sign(DOCUMENT)
    assert envelope["payload"].encode("ascii") == canonical_json(DOCUMENT)
    assert envelope["digest"] == sha256_hex(canonical_json(DOCUMENT))
    result = verify_envelope(envelope, key.public_key)
    assert result.ok, result.problems
    assert result.payload == DOCUMENT
    assert (result.kind, result.record_id) == ("verdict", DOCUMENT["record_id"])


def test_another_key_is_named_as_the_wrong_key(tmp_path: Path, artifact: bytes) -> None:
    other = create_signing_key(tmp_path / "other.pem")
    result = verify_artifact(artifact, other.public_key)
    assert not result.ok
    assert any("wrong key" in p and other.key_id in p for p in result.problems)


def test_without_a_trusted_key_the_embedded_key_is_used_and_said(
    key: SigningKey, artifact: bytes
) -> None:
    result = verify_artifact(artifact, None)
    assert result.ok
    assert result.key_id == key.key_id
    assert any("not a trusted one" in note for note in result.notes)


def test_a_resigned_payload_with_a_forged_digest_is_a_bad_signature(
    key: SigningKey, tmp_path: Path
) -> None:
    envelope = key.sign(DOCUMENT)
    forged_document = {**DOCUMENT, "claim": {**DOCUMENT["claim"], "decision": "REJECT"}}
    payload = canonical_json(forged_document)
    envelope = {**envelope, "payload": payload.decode(), "digest": sha256_hex(payload)}
    result = verify_envelope(envelope, key.public_key)
    assert [p for p in result.problems if "bad signature" in p]
    assert result.payload is None


def test_every_single_byte_changed_is_detected(key: SigningKey, artifact: bytes) -> None:
    # Each byte is changed once by a random amount (and once by flipping its lowest bit);
    # every one of the changed files must fail, whatever part of the file it hits.
    rng = random.Random(11)
    assert verify_artifact(artifact, key.public_key).ok
    missed = []
    for position in range(len(artifact)):
        for changed in (artifact[position] ^ 1, (artifact[position] + rng.randrange(1, 256)) % 256):
            tampered = bytearray(artifact)
            tampered[position] = changed
            if verify_artifact(bytes(tampered), key.public_key).ok:
                missed.append((position, changed))
    assert missed == []
    assert len(artifact) > 500


def test_reformatted_json_with_the_same_content_is_refused(
    key: SigningKey, artifact: bytes
) -> None:
    same = json.dumps(json.loads(artifact)).encode("ascii")
    result = verify_artifact(same, key.public_key)
    assert any("altered outside the signed fields" in p for p in result.problems)


@pytest.fixture
def standalone(tmp_path: Path, key: SigningKey, artifact: bytes) -> Path:
    """A folder holding only the verifier script, the artifact and the public key."""
    folder = tmp_path / "auditor"
    folder.mkdir()
    shutil.copy(STANDALONE, folder / "verify_standalone.py")
    (folder / "artifact.json").write_bytes(artifact)
    (folder / "key.pub.pem").write_bytes(key.public_pem())
    return folder


# Runs the script as __main__ with every import of `arbiter` refused, in an isolated
# interpreter (no PYTHONPATH, no user site, no working directory on sys.path).
_NO_ARBITER = """
import runpy, sys
class NoArbiter:
    def find_spec(self, name, path=None, target=None):
        if name == "arbiter" or name.startswith("arbiter."):
            raise ImportError("the standalone verifier imported " + name)
sys.meta_path.insert(0, NoArbiter())
sys.argv = ["verify_standalone.py", *sys.argv[1:]]
runpy.run_path("verify_standalone.py", run_name="__main__")
"""


def _run_standalone(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-c", _NO_ARBITER, *args],
        cwd=folder,
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_standalone_verifier_needs_nothing_of_arbiter(standalone: Path) -> None:
    done = _run_standalone(standalone, "artifact.json", "key.pub.pem")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified" in done.stdout
    assert "imported arbiter" not in done.stderr


def test_the_standalone_verifier_exits_1_on_a_tampered_artifact(standalone: Path) -> None:
    path = standalone / "artifact.json"
    path.write_bytes(path.read_bytes().replace(b"ACCEPT", b"REJECT"))
    done = _run_standalone(standalone, "artifact.json", "key.pub.pem")
    assert done.returncode == 1
    assert "FAILED" in done.stdout
    assert "digest" in done.stdout


@pytest.mark.parametrize("args", [("artifact.json",), ("artifact.json", "missing.pem")])
def test_the_standalone_verifier_exits_3_on_bad_input(standalone: Path, args: tuple[str]) -> None:
    assert _run_standalone(standalone, *args).returncode == 3


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")
def test_the_openssl_recipe_verifies_and_refuses_a_change(
    tmp_path: Path, key: SigningKey, artifact: bytes
) -> None:
    envelope = json.loads(artifact)
    (tmp_path / "payload.json").write_bytes(envelope["payload"].encode("ascii"))
    (tmp_path / "signature.bin").write_bytes(base64.b64decode(envelope["signature"]))
    (tmp_path / "key.pub.pem").write_bytes(key.public_pem())
    command = [
        "openssl",
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        "key.pub.pem",
        "-rawin",
        "-in",
        "payload.json",
        "-sigfile",
        "signature.bin",
    ]
    good = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Signature Verified Successfully" in good.stdout
    (tmp_path / "payload.json").write_bytes(
        envelope["payload"].replace("ACCEPT", "REJECT").encode("ascii")
    )
    bad = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert bad.returncode != 0
    assert "Signature Verification Failure" in bad.stdout


def test_a_compressed_archive_is_refused_before_anything_is_inflated(key: SigningKey) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("results.jsonl", b"0" * 10_000_000)  # 10 MB inflated, a few KB stored
        archive.writestr("signature.json", render_envelope(key.sign(DOCUMENT)))
    data = buffer.getvalue()
    assert len(data) < 100_000
    result = verify_artifact(data, key.public_key)
    assert result.problems == ["the archive has compressed members: it is not a pack as written"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "not an ASCII JSON envelope"),
        (b"[]", "not an envelope with fields"),
        (json.dumps({f"k{i}": i for i in range(10_000)}).encode(), "not an envelope with fields"),
        ('{"caf\u00e9": 1}'.encode(), "not an ASCII JSON envelope"),
        (b"PK\x03\x04 not really a zip", "the archive cannot be read"),
        (b"", "not an ASCII JSON envelope"),
    ],
)
def test_malformed_artifacts_fail_with_one_bounded_line(
    key: SigningKey, data: bytes, needle: str
) -> None:
    result = verify_artifact(data, key.public_key)
    assert not result.ok
    assert needle in result.problems[0]
    assert all(len(problem) < 300 for problem in result.problems)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("payload", "[" * 50_000 + "]" * 50_000, "the payload is not JSON"),
        ("public_key", base64.b64encode(b"\x00" * 31).decode(), "not 32 bytes"),
        ("signature", "not base64!", "not valid base64"),
        ("format", "x" * 10_000, "format 'xxxx"),
    ],
)
def test_a_forged_field_is_named_and_never_raises(
    key: SigningKey, field: str, value: str, needle: str
) -> None:
    envelope = {**key.sign(DOCUMENT), field: value}
    result = verify_envelope(envelope, key.public_key)
    assert any(needle in problem for problem in result.problems), result.problems
    assert all(len(problem) < 300 for problem in result.problems)
