"""``arbiter import inspect LOG``: an Inspect AI log stored as a run that report, gate,
diff and verify read like any other.

The log is the one inspect_ai 0.3.285 wrote (tests/trajectories/data/make_inspect_logs.py:
two samples, two epochs; ``three-plus-five`` is wrong on its second epoch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import LlmCall, Score, ToolCall
from arbiter.service.runs import incomplete_note, load_run
from arbiter.store import Store
from arbiter.trajectories.formats import TrajectoryFormatRegistry
from tests.conftest import Result

DATA = Path(__file__).parents[1] / "trajectories" / "data"
LOG = DATA / "inspect_addition_mockllm.json"
ARCHIVE = DATA / "inspect_addition_mockllm.eval"


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def _imported(cli: Any, log: Path) -> str:
    result: Result = cli("import", "inspect", str(log), "--json")
    assert result.code == 0, result.err
    run_id: str = json.loads(result.out)["run_id"]
    return run_id


def _log_with(tmp_path: Path, name: str, **values: str) -> Path:
    """The log with the includes value of some ``sample@epoch`` changed."""
    log = json.loads(LOG.read_text(encoding="utf-8"))
    for sample in log["samples"]:
        key = f"{sample['id']}@{sample['epoch']}"
        if key in values:
            sample["scores"]["includes"]["value"] = values[key]
    path = tmp_path / name
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_samples_become_examples_and_epochs_repetitions_with_their_scores(
    cli: Any, tmp_path: Path
) -> None:
    run_id = _imported(cli, LOG)
    stored = load_run(_store(tmp_path), run_id)
    assert (stored.info.status, stored.config.k, stored.info.n_pairs) == ("completed", 2, 4)
    assert [e.id for e in stored.examples] == ["three-plus-five", "two-plus-two"]
    assert stored.examples[0].expected == "8"
    assert stored.examples[0].input == {"input": "What is 3 + 5? Use the add tool."}
    assert stored.correct == {"three-plus-five": [True, False], "two-plus-two": [True, True]}
    assert stored.report.accuracy.estimate == pytest.approx(3 / 4)
    assert stored.report.pass_hat_k.estimate == pytest.approx(1 / 2)
    assert stored.info.tags == {"imported_from": "inspect"}
    pair = stored.results[0]
    assert [s.name for s in pair.scores] == ["inspect:includes"]
    assert pair.output is not None
    assert pair.output.trajectory is not None
    first, call, _ = pair.output.trajectory.steps
    assert isinstance(first, LlmCall)
    assert (first.input_tokens, first.output_tokens) == (40, 12)
    assert isinstance(call, ToolCall)
    assert call.result == "8"


def test_the_text_output_names_the_run_and_its_figures(cli: Any) -> None:
    result: Result = cli("import", "inspect", str(LOG))
    assert result.code == 0, result.err
    first = result.out.splitlines()[0]
    assert first.startswith("stored run ")
    assert first.endswith(f"2 samples x 2 epochs (4 results) from {LOG}")
    assert "75.0%" in result.out
    assert "inspect:includes" in result.out


def test_gate_reads_an_imported_run(cli: Any) -> None:
    run_id = _imported(cli, LOG)
    passed: Result = cli("gate", run_id, "--min-pass-k", "0.5")
    assert passed.code == 0, passed.out + passed.err
    failed: Result = cli("gate", run_id, "--min-accuracy", "0.9")
    assert failed.code == 1
    assert "accuracy 0.750 is below the floor 0.900" in failed.out + failed.err


def test_diff_of_two_imported_logs_names_the_fixed_sample(cli: Any, tmp_path: Path) -> None:
    before = _imported(cli, LOG)
    after = _imported(cli, _log_with(tmp_path, "fixed.json", **{"three-plus-five@2": "C"}))
    result: Result = cli("diff", before, after, "--json")
    assert result.code == 0, result.err
    diff = json.loads(result.out)
    assert diff["warnings"] == []  # the same samples: the same dataset
    assert [f["example_id"] for f in diff["fixed"]] == ["three-plus-five"]
    assert diff["broken"] == []
    deltas = {d["name"]: d["delta"] for d in diff["deltas"]}
    assert deltas["pass^k"] == pytest.approx(0.5)


def test_the_archive_and_the_json_log_of_one_task_are_the_same_dataset(
    cli: Any, tmp_path: Path
) -> None:
    pytest.importorskip("zstandard")
    store = _store(tmp_path)
    from_json = store.get_run(_imported(cli, LOG))
    from_archive = store.get_run(_imported(cli, ARCHIVE))
    assert from_json.dataset_hash == from_archive.dataset_hash


def test_a_signed_import_verifies_and_a_tampered_score_does_not(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: Result = cli("keys", "signing", "init")
    assert made.code == 0, made.err
    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(tmp_path / "home" / "signing-key.pem"))
    run_id = _imported(cli, LOG)
    verified: Result = cli("verify", run_id)
    assert verified.code == 0, verified.out + verified.err
    assert verified.out.startswith(f"verified: run_report {run_id}, signed with key ")
    from sqlalchemy import update

    from arbiter.store.models import ResultRow

    with _store(tmp_path).session() as session, session.begin():
        session.execute(
            update(ResultRow)
            .where(ResultRow.run_id == run_id, ResultRow.example_id == "two-plus-two")
            .values(passed=False)
        )
    assert cli("verify", run_id).code == 1


def test_a_malformed_log_is_refused_in_one_line_exit_3_and_nothing_is_stored(
    cli: Any, tmp_path: Path
) -> None:
    log = json.loads(LOG.read_text(encoding="utf-8"))
    log["samples"][1]["epoch"] = "first"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(log), encoding="utf-8")
    result: Result = cli("import", "inspect", str(bad))
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert "bad.json: samples[1].epoch: must be a whole number" in result.err
    assert _store(tmp_path).list_runs() == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"bad\.json"),
        ('{"eval": {"task": "t"}, "samples": []}', r"bad\.json: the log holds no runs"),
        (
            '{"eval": {"task": "t"}, "samples": [{"id": 1, "epoch": 1, "messages": []}]}',
            r"bad\.json: no run of the log carries a score",
        ),
    ],
)
def test_a_log_with_nothing_to_judge_is_refused(
    cli: Any, tmp_path: Path, content: str, message: str
) -> None:
    import re

    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    result: Result = cli("import", "inspect", str(bad))
    assert result.code == 3, result.err
    assert re.search(message, result.err), result.err
    assert "Traceback" not in result.err
    assert _store(tmp_path).list_runs() == []


def test_a_missing_log_is_refused_with_exit_3(cli: Any, tmp_path: Path) -> None:
    result: Result = cli("import", "inspect", str(tmp_path / "nowhere.eval"))
    assert result.code == 3
    assert "nowhere.eval" in result.err


def test_a_sample_that_raised_is_a_failed_call_and_a_missing_epoch_leaves_the_run_incomplete(
    cli: Any, tmp_path: Path
) -> None:
    log = json.loads(LOG.read_text(encoding="utf-8"))
    raised = log["samples"][1]
    raised["error"] = {"message": "RuntimeError: the sandbox died", "traceback": ""}
    del raised["scores"]
    log["samples"].pop(3)  # two-plus-two has one epoch of two
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    run_id = _imported(cli, path)
    stored = load_run(_store(tmp_path), run_id)
    assert stored.info.status == "failed"
    assert (len(stored.results), stored.info.n_pairs) == (3, 4)
    failed = next(r for r in stored.results if r.error_type is not None)
    assert (failed.example_id, failed.passed) == (raised["id"], False)
    assert failed.error_message == "RuntimeError: the sandbox died"
    gate: Result = cli("gate", run_id)
    assert gate.code == 1
    # An imported run has no system to call again: the note never offers a resume.
    note = incomplete_note(stored)
    assert note is not None
    assert "--resume" not in note
    assert "import the complete log again" in note


def test_hostile_names_in_a_log_print_inert(cli: Any, tmp_path: Path) -> None:
    log = json.loads(LOG.read_text(encoding="utf-8"))
    for sample in log["samples"]:
        sample["id"] = "\x1b[2J\x1b]8;;https://evil.example\x07case"
        sample["scores"] = {"\x1b[31mred[/]": sample["scores"]["includes"]}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    result: Result = cli("import", "inspect", str(path))
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "\x07" not in result.out
    assert "inspect:" in result.out


def test_a_run_name_the_store_cannot_keep_is_refused_before_anything_is_stored(
    cli: Any, tmp_path: Path
) -> None:
    result: Result = cli("import", "inspect", str(LOG), "--name", "n" * 201)
    assert result.code == 3
    assert "the run name has 201 characters" in result.err
    assert _store(tmp_path).list_runs() == []
    named: Result = cli("import", "inspect", str(LOG), "--name", "addition on mockllm")
    assert named.code == 0, named.err
    assert [r.name for r in _store(tmp_path).list_runs()] == ["addition on mockllm"]


def test_a_repetition_given_twice_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    from arbiter.errors import InputError
    from arbiter.service.log_import import log_pairs
    from arbiter.trajectories.formats import ImportedRun, TrajectoryFormat

    def twice(file: Path, options: object) -> list[ImportedRun]:
        run = ImportedRun(
            trajectory=None,
            flow=None,
            case_id="c",
            repetition=0,
            scores=[Score(name="s", passed=True)],
        )
        return [run, run]

    registry = TrajectoryFormatRegistry()
    registry.register_format(
        TrajectoryFormat(name="twice", summary="the same run twice", read_file=twice)
    )
    path = tmp_path / "log.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match=r"log\.json: case 'c' repetition 0 is given twice"):
        log_pairs(path, format="twice", registry=registry)
