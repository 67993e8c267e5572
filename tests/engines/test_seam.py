"""The engine seam without a cluster: stable buckets and seeds, the local engine as the
default, the options checked before anything runs, and Ray never imported unasked."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from arbiter.contract import Dataset, Example, RunConfig
from arbiter.engines.base import bucket_of, derived_seed
from arbiter.engines.local import LocalEngine
from arbiter.errors import InputError
from arbiter.harness.runner import PairWork, run_eval
from arbiter.scoring.labels import label
from arbiter.service.engines import EngineChoice
from arbiter.systems.python import PythonSystem
from tests.conftest import Result

SYSTEMS = Path(__file__).with_name("systems.py")


def test_an_id_lands_in_the_same_bucket_in_every_process() -> None:
    ids = [f"ex-{i}" for i in range(50)] + ["", "é", "\U0001f600"]
    here = [bucket_of(key, 7) for key in ids]
    script = (
        "import json, sys; from arbiter.engines.base import bucket_of; "
        "print(json.dumps([bucket_of(k, 7) for k in json.loads(sys.argv[1])]))"
    )
    # Another interpreter with another str hash salt: the bucket must not move.
    there = subprocess.run(
        [sys.executable, "-c", script, json.dumps(ids)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(there.stdout) == here
    assert set(here) <= set(range(7))
    assert len(set(here)) > 1


def test_buckets_refuse_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        bucket_of("a", 0)


def test_a_seed_derives_from_ids_alone() -> None:
    assert derived_seed(7, "ex-1", "0") == derived_seed(7, "ex-1", "0")
    assert derived_seed(7, "ex-1", "0") != derived_seed(7, "ex-1", "1")
    assert derived_seed(7, "ab", "c") != derived_seed(7, "a", "bc")
    assert derived_seed(7, "ex-1") != derived_seed(8, "ex-1")


def test_the_local_engine_is_the_default_and_records_itself() -> None:
    dataset = Dataset(
        name="d", examples=[Example(id=f"e{i}", input={"q": "x"}, expected="x") for i in range(5)]
    )
    system = PythonSystem(f"{SYSTEMS}:answer")
    default = run_eval(system, dataset, k=2)
    local = run_eval(system, dataset, k=2, engine=LocalEngine())
    assert default.accuracy == local.accuracy
    assert default.accuracy.estimate == 1.0


def test_a_run_given_a_system_object_cannot_travel_to_a_cluster() -> None:
    work = PairWork(PythonSystem(f"{SYSTEMS}:answer"), [label()], RunConfig())
    with pytest.raises(InputError, match="built from a description"):
        work.portable()


@pytest.mark.parametrize(
    ("name", "address", "message"),
    [
        ("spark", None, "--engine 'spark': expected one of local, ray"),
        (None, "127.0.0.1:6379", "--ray-address is for --engine ray"),
        ("local", "auto", "--ray-address is for --engine ray"),
    ],
)
def test_engine_options_are_checked(name: str | None, address: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        EngineChoice.of(name, address)


def test_a_bad_engine_exits_3_before_anything_runs(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "input": {"q": "x"}, "expected": "x"}\n', encoding="utf-8")
    done = cli("run", "--dataset", str(data), "--target", f"{SYSTEMS}:answer", "--engine", "spark")
    assert done.code == 3
    assert "--engine 'spark': expected one of local, ray" in done.err
    assert "Traceback" not in done.err
    assert not (tmp_path / "store.db").exists()  # nothing was written


def test_an_eval_file_names_its_engine(tmp_path: Path) -> None:
    from arbiter.service.eval_file import load_eval_file
    from arbiter.service.scoring import scorer_registry

    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": {}, "expected": "x"}\n')
    path = tmp_path / "eval.toml"
    path.write_text(
        '[dataset]\npath = "d.jsonl"\n[system]\ntarget = "m:f"\n'
        '[run]\nengine = "ray"\nray_address = "10.0.0.1:6379"\n'
    )
    plan = load_eval_file(path, registry=scorer_registry(), timeout=1, concurrency=1, retries=0)
    assert plan.engine == EngineChoice("ray", "10.0.0.1:6379")
    path.write_text(
        '[dataset]\npath = "d.jsonl"\n[system]\ntarget = "m:f"\n[run]\nray_address = "auto"\n'
    )
    with pytest.raises(InputError, match=r"eval.toml:\d+: run.ray_address: it is for engine"):
        load_eval_file(path, registry=scorer_registry(), timeout=1, concurrency=1, retries=0)


def test_help_and_a_local_run_never_import_ray(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from arbiter.cli.main import main\n"
        "for args in (['--help'], ['run', '--help'], ['agent', 'score', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('ray' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize(
    ("url", "shared"),
    [
        ("sqlite:///store.db", "sqlite:///{cwd}/store.db"),
        ("sqlite:////abs/store.db", "sqlite:////abs/store.db"),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("postgresql+psycopg://u:pw@db:5432/arbiter", "postgresql+psycopg://u:pw@db:5432/arbiter"),
    ],
)
def test_workers_get_the_store_url_of_the_model_cache_as_they_can_reach_it(
    url: str, shared: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.service.engines import run_parts

    monkeypatch.chdir(tmp_path)
    parts = run_parts({"kind": "python", "target": "m:f"}, {}, [], use_cache=True, cache_url=url)
    expected = shared.format(cwd=tmp_path.resolve()) if shared else None
    assert parts.keywords["cache_url"] == expected  # type: ignore[attr-defined]
