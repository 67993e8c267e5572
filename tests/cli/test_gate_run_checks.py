"""The gate's run checks (failed calls, undecided pairs, decided pairs) are set the same
way wherever a gate is: ``arbiter gate``'s options, an eval file's ``[gate]`` keys and
``arbiter agent run``'s options; stored with the run, signed and pre-registered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Prediction
from arbiter.datasets import dump_dataset_jsonl
from arbiter.errors import InputError
from arbiter.service.eval_file import load_eval_file
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store
from tests.helpers.data import yes_no_dataset

AGENTS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents"
AGENT = f"python:{AGENTS / 'support_agent.py'}:answer"
AGENT_CASES = AGENTS / "support-cases.jsonl"


def half_down(input: dict[str, Any]) -> Prediction:
    """A system under test whose call fails on every even example, right on the rest."""
    if int(str(input["id"]).removeprefix("ex-")) % 2 == 0:
        raise ConnectionError("the service is down")
    return Prediction(label=str(input["answer"]))


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    dump_dataset_jsonl(yes_no_dataset(20), path)
    return path


def _eval_file(folder: Path, gate: str, target: str = "tests.helpers.systems:mostly_right") -> Path:
    path = folder / "checks.eval.toml"
    path.write_text(
        '[dataset]\npath = "data.jsonl"\n\n[system]\nkind = "python"\n'
        f'target = "{target}"\n\n[gate]\n{gate}',
        encoding="utf-8",
    )
    return path


def _load(path: Path) -> Any:
    return load_eval_file(
        path, registry=scorer_registry(plugins=False), timeout=30.0, concurrency=4, retries=0
    )


def test_an_eval_file_sets_every_run_check(tmp_path: Path, data_file: Path) -> None:
    spec = _eval_file(tmp_path, "max_error_rate = 1\nmax_undecided_rate = 0.9\nmin_decided = 3\n")
    plan = _load(spec)
    assert plan.floors is not None
    checks = (plan.floors.max_error_rate, plan.floors.max_undecided_rate, plan.floors.min_decided)
    assert checks == (1.0, 0.9, 3)
    assert plan.config.gate is not None
    assert plan.config.gate.min_decided == 3  # stored with the run: a resume gates alike


@pytest.mark.parametrize(
    ("line", "key", "why"),
    [
        ("max_error_rate = 1.5", "max_error_rate", "less than or equal to 1"),
        ("max_undecided_rate = nan", "max_undecided_rate", "not a finite number"),
        ("min_decided = -1", "min_decided", "greater than or equal to 0"),
        ("min_decided = 2.5", "min_decided", "integer"),
    ],
)
def test_a_bad_run_check_in_an_eval_file_names_its_line_and_key(
    tmp_path: Path, data_file: Path, line: str, key: str, why: str
) -> None:
    spec = _eval_file(tmp_path, f"min_accuracy = 0.5\n{line}\n")
    with pytest.raises(InputError) as caught:
        _load(spec)
    message = str(caught.value)
    assert message.startswith(f"{spec}:10: ")
    assert f"gate.{key}" in message
    assert why in message
    assert "\n" not in message


def test_an_eval_file_whose_system_is_down_passes_only_with_the_errors_it_allows(
    cli: Any, tmp_path: Path, data_file: Path
) -> None:
    target = "tests.cli.test_gate_run_checks:half_down"
    strict = cli("run", str(_eval_file(tmp_path, "min_accuracy = 0.5\n", target)), "-q")
    assert strict.code == 1
    assert "errors: 10 of 20 calls failed (50.0%; at most 20.0% allowed" in strict.out
    relaxed = _eval_file(tmp_path, "min_accuracy = 0.5\nmax_error_rate = 0.5\n", target)
    done = cli("run", str(relaxed), "-q")
    assert done.code == 0, done.out + done.err
    assert "gate passed (min_accuracy=0.5, max_error_rate=0.5)" in done.out
    # A failed call is a decided failure: 20 decided pairs, one short of 21.
    raised = _eval_file(tmp_path, "max_error_rate = 0.5\nmin_decided = 21\n", target)
    missed = cli("run", str(raised), "-q")
    assert missed.code == 1
    assert "too few decided pairs: 20 (at least 21 required" in missed.out


def test_agent_run_takes_the_run_checks_and_stores_them_with_its_gate(
    cli: Any, tmp_path: Path
) -> None:
    done = cli("agent", "run", str(AGENT_CASES), "-e", AGENT, "-q", "--min-decided", "100")
    assert done.code == 1, done.err
    assert "too few decided pairs: 4 (at least 100 required, --min-decided)" in done.out
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        (run,) = store.list_runs()
        gate = store.get_run(run.id).run_config.gate
    finally:
        store.close()
    assert gate is not None
    assert (gate.min_decided, gate.max_error_rate, gate.min_accuracy) == (100, 0.2, None)
    relaxed = cli("agent", "run", str(AGENT_CASES), "-e", AGENT, "-q", "--max-error-rate", "0.5")
    assert relaxed.code == 0, relaxed.err
    assert "gate passed (max_error_rate=0.5)" in relaxed.out


@pytest.fixture
def signing(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    assert cli("keys", "signing", "init").code == 0
    key = tmp_path / "home" / "signing-key.pem"
    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key))
    return key


def test_a_registration_binds_the_eval_file_s_run_checks(
    cli: Any, signing: Path, tmp_path: Path, data_file: Path
) -> None:
    spec = _eval_file(tmp_path, "min_accuracy = 0.5\nmin_decided = 500\n")
    assert cli("gate", "--preregister", str(spec), "--registration", "reg.json").code == 0
    registered = json.loads(json.loads((tmp_path / "reg.json").read_text())["payload"])
    assert registered["claim"]["floors"]["min_decided"] == 500
    assert "max_error_rate" not in registered["claim"]["floors"]  # defaults are not signed
    ran = cli("run", str(spec), "-q", "--json")
    assert ran.code == 1  # 20 decided pairs, 500 required
    run_id = json.loads(ran.out)["run_id"]
    gated = cli("gate", run_id, "--registration", "reg.json")
    assert gated.code == 1, gated.err
    assert "too few decided pairs: 20 (at least 500 required" in gated.out
    spec.write_text(spec.read_text().replace("min_decided = 500", "min_decided = 5"))
    other = json.loads(cli("run", str(spec), "-q", "--json").out)["run_id"]
    refused = cli("gate", other, "--registration", "reg.json")
    assert refused.code == 3
    assert "the run's own [gate] min_accuracy=0.5, min_decided=5" in refused.err
    assert "(registered min_accuracy=0.5, min_decided=500)" in refused.err
