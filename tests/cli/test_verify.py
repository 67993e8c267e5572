"""``arbiter keys signing init``, ``arbiter verify``, ``arbiter audit-pack`` and
``arbiter gate --preregister``, end to end in-process: output, exit codes, tampering."""

from __future__ import annotations

import json
import stat
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arbiter.attest import load_verify_key, verify_artifact
from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from arbiter.store.models import ResultRow
from tests.helpers.cli import run_json
from tests.helpers.data import yes_no_dataset


@pytest.fixture
def signing(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A key made by ``arbiter keys signing init`` and configured as the settings say."""
    done = cli("keys", "signing", "init")
    assert done.code == 0, done.err
    key = tmp_path / "home" / "signing-key.pem"
    assert f"ARBITER_SIGNING_KEY={key}" in done.out
    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key))
    return key


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "yes-no.jsonl"
    dump_dataset_jsonl(yes_no_dataset(9), path)
    return path


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def test_signing_init_writes_a_private_key_and_refuses_to_replace_it(
    cli: Any, signing: Path
) -> None:
    assert stat.S_IMODE(signing.stat().st_mode) == 0o600
    assert (signing.parent / "signing-key.pub.pem").is_file()
    again = cli("keys", "signing", "init")
    assert again.code == 3
    assert "already exists" in again.err
    assert len(again.err.strip().splitlines()) == 1
    other = cli("keys", "signing", "init", "--path", str(signing.parent / "k2.pem"))
    assert other.code == 0
    assert cli("keys", "signing", "init", "--force").code == 0


def test_a_signed_run_verifies_and_a_tampered_one_fails_naming_the_example(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    done = cli("verify", run_id)
    assert done.code == 0, done.out + done.err
    assert done.out.startswith(f"verified: run_report {run_id}, signed with key ")
    with _store(tmp_path).session() as session, session.begin():
        session.execute(
            update(ResultRow)
            .where(ResultRow.run_id == run_id, ResultRow.example_id == "ex-0002")
            .values(output={"label": "no", "text": "no"})
        )
    failed = cli("verify", run_id)
    assert failed.code == 1
    assert (
        f"FAILED: run_report {run_id}: example 'ex-0002' repetition 0: the stored output "
        "differs from the signed one"
    ) in failed.out
    assert failed.err.strip() == "arbiter: verification failed: 1 problem(s) in 1 record(s)"
    as_json = json.loads(cli("verify", run_id, "--json").out)
    assert as_json[0]["ok"] is False


def test_verify_with_another_public_key_says_wrong_key(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    assert cli("keys", "signing", "init", "--path", str(tmp_path / "other.pem")).code == 0
    done = cli("verify", run_id, "--public-key", str(tmp_path / "other.pub.pem"))
    assert done.code == 1
    assert "wrong key" in done.out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("no-such-run",), "names no run, jury run, verdict or signed record"),
        # A mistyped path is not an unsigned verdict: it names nothing.
        (("missing/pack.zip",), "is no file and names no verdict"),
        (("x", "--public-key", "missing.pem"), "cannot read the public key"),
    ],
)
def test_verify_bad_input_exits_3_with_one_line(
    cli: Any, signing: Path, args: tuple[str, ...], needle: str
) -> None:
    done = cli("verify", *args)
    assert done.code == 3
    assert needle in done.err
    assert len(done.err.strip().splitlines()) == 1


def test_the_audit_pack_verifies_and_any_changed_byte_fails(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    assert cli("gate", run_id, "--min-accuracy", "0.5").code == 0
    done = cli("audit-pack", run_id, "--out", "pack.zip")
    assert done.code == 0, done.err
    pack = (tmp_path / "pack.zip").read_bytes()
    with zipfile.ZipFile(BytesIO(pack)) as archive:
        assert archive.namelist() == [
            "attestation.json",
            "config.json",
            "dataset.json",
            "environment.json",
            "gate.json",
            "report.json",
            "results.jsonl",
            "signature.json",
        ]
        gate = json.loads(archive.read("gate.json"))
        assert gate["decisions"][0]["decision"]["passed"] is True
        assert len(archive.read("results.jsonl").splitlines()) == 9
    verified = cli("verify", "pack.zip")
    assert verified.code == 0, verified.out
    assert "9 per-example results match the run's signature" in verified.out
    trusted = load_verify_key(signing.parent / "signing-key.pub.pem")
    missed = []
    for position in range(len(pack)):
        tampered = bytearray(pack)
        tampered[position] ^= 0x01
        if verify_artifact(bytes(tampered), trusted).ok:
            missed.append(position)
    assert missed == []


def test_a_pack_of_results_changed_after_the_run_names_the_example(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    with _store(tmp_path).session() as session, session.begin():
        row = session.scalars(
            select(ResultRow).where(ResultRow.run_id == run_id, ResultRow.example_id == "ex-0005")
        ).one()
        session.execute(update(ResultRow).where(ResultRow.id == row.id).values(latency_ms=1.0))
        session.execute(update(ResultRow).where(ResultRow.id == row.id).values(passed=None))
    assert cli("audit-pack", run_id, "--out", "pack.zip").code == 0
    done = cli("verify", "pack.zip")
    assert done.code == 1
    assert (
        "results.jsonl:6: example 'ex-0005' repetition 0: scores or outcome differ from the "
        "signed ones"
    ) in done.out


def test_audit_pack_without_a_key_exits_3(cli: Any, data_file: Path) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    done = cli("audit-pack", run_id)
    assert done.code == 3
    assert "arbiter keys signing init" in done.err


def _eval_file(folder: Path, data_file: Path, floor: float, scorer: str = "label") -> Path:
    path = folder / f"gate-{floor}-{scorer}.eval.toml"
    path.write_text(
        f'[dataset]\npath = "{data_file.name}"\n\n[system]\nkind = "python"\n'
        'target = "tests.helpers.systems:mostly_right"\n\n'
        f'[[scorers]]\nname = "{scorer}"\n\n[gate]\nmin_accuracy = {floor}\n',
        encoding="utf-8",
    )
    return path


def _run_eval(cli: Any, path: Path) -> str:
    done = cli("run", str(path), "--quiet", "--json")
    assert done.code == 0, done.err
    run_id = json.loads(done.out)["run_id"]
    assert isinstance(run_id, str)
    return run_id


def test_a_preregistered_gate_passes_the_registered_run_and_refuses_a_changed_spec(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    spec = _eval_file(tmp_path, data_file, 0.5)
    done = cli("gate", "--preregister", str(spec), "--registration", "reg.json")
    assert done.code == 0, done.err
    assert "registered: reg.json" in done.out
    assert verify_artifact((tmp_path / "reg.json").read_bytes(), None).ok
    registered = _run_eval(cli, spec)
    passed = cli("gate", registered, "--registration", "reg.json")
    assert passed.code == 0, passed.err
    looser = cli("gate", registered, "--registration", "reg.json", "--min-accuracy", "0.1")
    assert looser.code == 3
    assert "floors min_accuracy=0.1 (registered min_accuracy=0.5)" in looser.err
    other_floor = _run_eval(cli, _eval_file(tmp_path, data_file, 0.2))
    refused = cli("gate", other_floor, "--registration", "reg.json")
    assert refused.code == 3
    assert "the run's own [gate] min_accuracy=0.2 (registered min_accuracy=0.5)" in refused.err
    other_scorer = _run_eval(cli, _eval_file(tmp_path, data_file, 0.5, "casefold"))
    refused = cli("gate", other_scorer, "--registration", "reg.json")
    assert refused.code == 3
    assert "scorers[0] label: name 'casefold' (registered 'label')" in refused.err


def test_a_run_started_before_its_registration_is_refused(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    spec = _eval_file(tmp_path, data_file, 0.5)
    early = _run_eval(cli, spec)
    assert cli("gate", "--preregister", str(spec)).code == 0
    registration = tmp_path / "gate-0.5-label.registration.json"
    assert registration.is_file()
    refused = cli("gate", early, "--registration", str(registration))
    assert refused.code == 3
    assert "before the registration was signed" in refused.err


def test_a_tampered_registration_is_refused(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    spec = _eval_file(tmp_path, data_file, 0.5)
    assert cli("gate", "--preregister", str(spec), "--registration", "reg.json").code == 0
    run_id = _run_eval(cli, spec)
    path = tmp_path / "reg.json"
    path.write_bytes(path.read_bytes().replace(b"0.5", b"0.1"))
    refused = cli("gate", run_id, "--registration", "reg.json")
    assert refused.code == 3
    assert "the registration does not verify" in refused.err


@pytest.mark.parametrize(
    ("configured", "args", "needle"),
    [
        (False, ("--preregister", "spec.eval.toml"), "arbiter keys signing init"),
        (True, ("run-1", "--preregister", "spec.eval.toml"), "give no run id"),
        (True, (), "give the run to gate"),
    ],
)
def test_preregister_refusals_exit_3(
    cli: Any,
    tmp_path: Path,
    data_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    configured: bool,
    args: tuple[str, ...],
    needle: str,
) -> None:
    _eval_file(tmp_path, data_file, 0.5).rename(tmp_path / "spec.eval.toml")
    if configured:
        assert cli("keys", "signing", "init").code == 0
        monkeypatch.setenv("ARBITER_SIGNING_KEY", str(tmp_path / "home" / "signing-key.pem"))
    done = cli("gate", *args)
    assert done.code == 3
    assert needle in done.err


def test_exported_signatures_verify_on_their_own_and_are_named_by_digest(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    assert cli("gate", run_id, "--min-accuracy", "0.5").code == 0
    done = cli("verify", run_id, "--export", "exported")
    assert done.code == 0, done.err
    files = sorted((tmp_path / "exported").iterdir())
    assert [f.name.split("-")[0] for f in files] == ["gate_decision", "run_report"]
    trusted = load_verify_key(signing.parent / "signing-key.pub.pem")
    for file in files:
        result = verify_artifact(file.read_bytes(), trusted)
        assert result.ok, result.problems
        assert file.name == f"{result.kind}-{json.loads(file.read_bytes())['digest'][:16]}.json"
    assert cli("verify", str(files[1])).code == 0


def test_hostile_case_ids_print_inert_in_verify(cli: Any, signing: Path, tmp_path: Path) -> None:
    hostile = "evil\x1b[2J\u202e<script>"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps(
            {"id": hostile, "task": "Sum it up.", "context": "Two apples.", "output": "Two."}
        )
        + "\n",
        encoding="utf-8",
    )
    judged = cli("judge", "--file", str(cases), "--no-audit")
    assert judged.code in (0, 1, 2), judged.err
    jury_run = judged.err.split("stored as jury run ")[1].split()[0]
    done = cli("verify", jury_run)
    assert done.code == 0, done.out + done.err
    assert "\x1b" not in done.out
    assert "\u202e" not in done.out
    assert "evil\\x1b[2J" in done.out


def test_the_pack_of_a_gated_eval_run_holds_its_own_gate_decided_and_signed(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path
) -> None:
    run_id = _run_eval(cli, _eval_file(tmp_path, data_file, 0.5))
    assert cli("audit-pack", run_id, "--out", "pack.zip").code == 0
    with zipfile.ZipFile(tmp_path / "pack.zip") as archive:
        gate = json.loads(archive.read("gate.json"))
    assert gate["run_gate_refused"] is None
    (own,) = [d for d in gate["decisions"] if d["run_gate"]]
    assert own["floors"]["min_accuracy"] == 0.5
    assert own["decision"]["passed"] is True
    assert cli("verify", "pack.zip").code == 0


def _reordered(pack: bytes, order: list[str]) -> bytes:
    from arbiter.attest import render_pack

    with zipfile.ZipFile(BytesIO(pack)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    return render_pack([(name, members[name]) for name in order])


@pytest.mark.parametrize(
    "order",
    [
        ["config.json", "attestation.json"],  # two members swapped
        ["signature.json"],  # the signature first
    ],
    ids=["swapped", "signature-first"],
)
def test_a_pack_with_its_members_reordered_fails(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path, order: list[str]
) -> None:
    import subprocess
    import sys

    from arbiter import verify_standalone

    run_id = run_json(cli, data_file, "mostly_right")
    assert cli("audit-pack", run_id, "--out", "pack.zip").code == 0
    pack = (tmp_path / "pack.zip").read_bytes()
    with zipfile.ZipFile(BytesIO(pack)) as archive:
        names = archive.namelist()
    moved = [*order, *(n for n in names if n not in order)]
    assert moved != names
    (tmp_path / "moved.zip").write_bytes(_reordered(pack, moved))
    done = cli("verify", "moved.zip")
    assert done.code == 1
    assert "not in the order written" in done.out
    public = signing.parent / "signing-key.pub.pem"
    standalone = subprocess.run(
        [sys.executable, verify_standalone.__file__, "moved.zip", str(public)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert standalone.returncode == 1
    assert "not in the order written" in standalone.stdout


def test_a_file_signed_by_an_unknown_key_is_valid_but_not_trusted(
    cli: Any, signing: Path, data_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    assert cli("audit-pack", run_id, "--out", "pack.zip").code == 0
    monkeypatch.delenv("ARBITER_SIGNING_KEY")  # the verifier has no key of its own
    done = cli("verify", "pack.zip")
    assert done.code == 4, done.out + done.err
    assert "signature valid, signer not trusted: audit_pack" in done.out
    assert "verified:" not in done.out
    assert "--trust-embedded-key" in done.err
    as_json = cli("verify", "pack.zip", "--json")
    assert as_json.code == 4
    assert json.loads(as_json.out)[0]["signer_trusted"] is False
    accepted = cli("verify", "pack.zip", "--trust-embedded-key")
    assert accepted.code == 0, accepted.out
    assert f"verified: audit_pack {run_id}" in accepted.out
    vouched = cli("verify", "pack.zip", "--public-key", str(signing.parent / "signing-key.pub.pem"))
    assert vouched.code == 0
    # A broken signature is a failure, whoever is trusted.
    tampered = bytearray((tmp_path / "pack.zip").read_bytes())
    tampered[len(tampered) // 2] ^= 0x01
    (tmp_path / "bad.zip").write_bytes(bytes(tampered))
    assert cli("verify", "bad.zip").code == 1


def test_stored_records_without_a_trusted_key_exit_4(
    cli: Any, signing: Path, data_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = run_json(cli, data_file, "mostly_right")
    monkeypatch.delenv("ARBITER_SIGNING_KEY")
    done = cli("verify", run_id)
    assert done.code == 4
    assert f"signature valid, signer not trusted: run_report {run_id}" in done.out
    assert cli("verify", run_id, "--trust-embedded-key").code == 0
