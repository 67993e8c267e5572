"""``arbiter assurance pack``, end to end: the archive written, verified by ``arbiter verify``
and by the standalone verifier (in an interpreter where nothing of Arbiter's imports), and
every kind of tampering caught: a byte flipped in each member, a member dropped, added or
moved, the manifest edited or signed again by another key; bad input exits 3."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from arbiter.attest import create_signing_key, load_verify_key, render_envelope, verify_artifact
from arbiter.verify_standalone import render_pack

STANDALONE = Path(__file__).resolve().parents[2] / "src" / "arbiter" / "verify_standalone.py"

# The standalone verifier as __main__, every import of `arbiter` refused, in an isolated
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


@pytest.fixture
def signing(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    done = cli("keys", "signing", "init")
    assert done.code == 0, done.err
    key = tmp_path / "home" / "signing-key.pem"
    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key))
    return key


@pytest.fixture
def pack(cli: Any, signing: Path, tmp_path: Path) -> bytes:
    done = cli("assurance", "pack", "--out", "pack.zip")
    assert done.code == 0, done.err
    return (tmp_path / "pack.zip").read_bytes()


def _members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _data_spans(data: bytes) -> dict[str, tuple[int, int]]:
    """Where each member's bytes sit in the archive: ``(start, end)``."""
    spans = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            at = info.header_offset
            name_length = int.from_bytes(data[at + 26 : at + 28], "little")
            extra_length = int.from_bytes(data[at + 28 : at + 30], "little")
            start = at + 30 + name_length + extra_length
            spans[info.filename] = (start, start + info.file_size)
    return spans


def _standalone(
    folder: Path, artifact: bytes, public_pem: bytes
) -> subprocess.CompletedProcess[str]:
    folder.mkdir(exist_ok=True)
    shutil.copy(STANDALONE, folder / "verify_standalone.py")
    (folder / "pack.zip").write_bytes(artifact)
    (folder / "key.pub.pem").write_bytes(public_pem)
    return subprocess.run(
        [sys.executable, "-I", "-c", _NO_ARBITER, "pack.zip", "key.pub.pem"],
        cwd=folder,
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_pack_is_written_and_verifies_with_arbiter_and_the_standalone_verifier(
    cli: Any, pack: bytes, signing: Path, tmp_path: Path
) -> None:
    names = [name for name, _ in _members(pack)]
    assert names[-1] == "signature.json"
    assert "controls.json" in names
    verified = cli("verify", "pack.zip")
    assert verified.code == 0, verified.out + verified.err
    assert verified.out.startswith("verified: assurance_pack ")
    assert f"{len(names) - 1} members match the signed manifest" in verified.out
    public = (signing.parent / "signing-key.pub.pem").read_bytes()
    done = _standalone(tmp_path / "auditor", pack, public)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("verified: assurance_pack ")
    assert "imported arbiter" not in done.stderr


def test_without_a_trusted_key_the_signature_holds_but_the_signer_is_not_trusted(
    cli: Any, pack: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARBITER_SIGNING_KEY")
    done = cli("verify", "pack.zip")
    assert done.code == 4
    assert done.out.startswith("signature valid, signer not trusted: assurance_pack ")


def _tampered(pack: bytes, how: str, tmp_path: Path) -> bytes:
    members = _members(pack)
    if how == "drop":
        return render_pack([m for m in members if m[0] != "incidents.json"])
    if how == "add":
        return render_pack([*members[:-1], ("zz-extra.json", b"{}\n"), members[-1]])
    if how == "reorder":
        return render_pack([members[1], members[0], *members[2:]])
    envelope = json.loads(dict(members)["signature.json"])
    payload = json.loads(envelope["payload"])
    if how == "manifest":  # a member's digest changed in the signed text, not re-signed
        payload["subject"]["files"]["controls.json"] = "0" * 64
        envelope["payload"] = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    elif how == "resigned":  # the manifest signed again by someone else's key
        other = create_signing_key(tmp_path / "other" / "key.pem")
        envelope = other.sign(payload)
    signature = ("signature.json", render_envelope(envelope))
    return render_pack([*members[:-1], signature])


@pytest.mark.parametrize(
    ("how", "needle"),
    [
        ("drop", "member incidents.json: signed but missing from the archive"),
        ("add", "member zz-extra.json: not covered by the signature"),
        ("reorder", "the archive's members are not in the order written"),
        ("manifest", "signature.json: field 'digest'"),
        ("resigned", "signature.json: wrong key"),
    ],
)
def test_each_tampering_is_caught_with_one_line_and_exit_1(
    cli: Any, pack: bytes, signing: Path, tmp_path: Path, how: str, needle: str
) -> None:
    bad = _tampered(pack, how, tmp_path)
    (tmp_path / "bad.zip").write_bytes(bad)
    done = cli("verify", "bad.zip")
    assert done.code == 1
    failed = [line for line in done.out.splitlines() if line.startswith("FAILED: ")]
    assert any(needle in line for line in failed), done.out
    assert done.err.strip().startswith("arbiter: verification failed:")
    assert len(done.err.strip().splitlines()) == 1
    public = (signing.parent / "signing-key.pub.pem").read_bytes()
    standalone = _standalone(tmp_path / "auditor", bad, public)
    assert standalone.returncode == 1
    assert any(needle in line for line in standalone.stdout.splitlines()), standalone.stdout


def test_a_byte_flipped_in_any_member_or_anywhere_is_caught(pack: bytes, signing: Path) -> None:
    trusted = load_verify_key(signing.parent / "signing-key.pub.pem")
    spans = _data_spans(pack)
    assert set(spans) == {name for name, _ in _members(pack)}
    positions = {}
    for name, (start, end) in spans.items():
        for at in (start, (start + end) // 2, end - 1):
            positions[at] = name
    sample = random.Random(20).sample(range(len(pack)), 400)  # headers, directory, members
    missed = []
    for at in sorted({*positions, *sample}):
        tampered = bytearray(pack)
        tampered[at] ^= 0x01
        found = verify_artifact(bytes(tampered), trusted)
        if found.ok:
            missed.append(at)
        elif at in positions and positions[at] != "signature.json":
            assert any(positions[at] in p for p in found.problems), (at, found.problems)
        assert all("\n" not in problem for problem in found.problems)
    assert missed == []


def test_a_pack_without_a_key_exits_3_with_one_line(cli: Any) -> None:
    done = cli("assurance", "pack", "--out", "pack.zip")
    assert done.code == 3
    assert "arbiter keys signing init" in done.err
    assert len(done.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        (["--key", "missing.pem"], "missing.pem: cannot read the signing key"),
        (["--out", "no/such/folder/pack.zip"], "cannot write the assurance pack"),
        (["--agent", "nobody"], "no agent named 'nobody' has a stored run, inbox event"),
    ],
)
def test_bad_input_exits_3_and_writes_nothing(
    cli: Any, signing: Path, tmp_path: Path, arguments: list[str], needle: str
) -> None:
    done = cli("assurance", "pack", *arguments)
    assert done.code == 3
    assert needle in done.err
    assert len(done.err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.zip"))
    assert not list(tmp_path.glob(".assurance-*"))


def test_the_key_option_signs_with_the_key_given(cli: Any, tmp_path: Path) -> None:
    key = create_signing_key(tmp_path / "mine" / "key.pem")
    done = cli("assurance", "pack", "--key", str(key.path))
    assert done.code == 0, done.err
    written = next(tmp_path.glob("assurance-*.zip"))
    assert f"signed with key {key.key_id}" in done.out
    assert verify_artifact(written.read_bytes(), key.public_key).ok
