"""Inspect AI eval logs import as runs: a sample's epoch a repetition, its scores imported.

The logs under ``data/`` were written by inspect_ai 0.3.285 itself (``make_inspect_logs.py``
beside them: two samples, two epochs, the ``mockllm`` model calling an ``add`` tool, the
``includes`` scorer; three epochs correct, one not).
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import LlmCall, ToolCall
from arbiter.errors import InputError
from arbiter.trajectories import inspect_logs
from arbiter.trajectories.formats import ImportOptions
from arbiter.trajectories.inspect_logs import TRAJECTORY_FORMAT, load_inspect_log
from arbiter.trajectories.loader import detect_format, load_runs
from tests.conftest import Result

DATA = Path(__file__).parent / "data"
LOG = DATA / "inspect_addition_mockllm.json"
SAMPLE_EPOCHS = [
    ("three-plus-five", 0, True),
    ("two-plus-two", 0, True),
    ("three-plus-five", 1, False),
    ("two-plus-two", 1, True),
]


def _log() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(LOG.read_text(encoding="utf-8"))
    return loaded


def _records(document: Any) -> list[Any]:
    assert TRAJECTORY_FORMAT.read_record is not None
    return TRAJECTORY_FORMAT.read_record(document, ImportOptions(source="log.json"))


def test_each_sample_epoch_is_a_run_with_its_score() -> None:
    runs = list(load_inspect_log(LOG))
    got = [(r.case_id, r.repetition, r.scores[0].passed) for r in runs]
    assert got == SAMPLE_EPOCHS
    score = runs[2].scores[0]
    assert (score.name, score.value) == ("inspect:includes", 0.0)
    assert score.explanation.startswith("Inspect score I (incorrect)")
    assert score.metadata["answer"] == "i think it is 9."
    assert all(r.warnings == [] for r in runs)


def test_messages_become_steps_with_the_tool_call_and_its_result() -> None:
    run = next(iter(load_inspect_log(LOG)))
    trajectory = run.trajectory
    assert trajectory is not None
    assert [s.kind for s in trajectory.steps] == ["llm_call", "tool_call", "llm_call"]
    first, call, _ = trajectory.steps
    assert isinstance(first, LlmCall)
    assert first.model == "mockllm/model"
    assert [m.role for m in first.input_messages] == ["user"]
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments, call.result) == ("add", {"x": 3, "y": 5}, "8")
    assert trajectory.final_answer == "The answer is 8."
    assert trajectory.status == "completed"
    assert trajectory.agent.name == "addition"
    kept = trajectory.metadata["inspect"]
    assert isinstance(kept, dict)
    assert (kept["target"], kept["epoch"], kept["log_status"]) == ("8", 1, "success")
    assert "events" in kept["not_imported"]  # type: ignore[operator]


def test_a_tool_error_and_a_sample_error_are_carried() -> None:
    log = _log()
    sample = log["samples"][0]
    sample["messages"][2]["error"] = {"type": "timeout", "message": "the tool timed out"}
    log["samples"][1]["error"] = {"message": "RuntimeError: boom", "traceback": "..."}
    runs = _records(log)
    call = runs[0].trajectory.steps[1]
    assert isinstance(call, ToolCall)
    assert call.error == "timeout: the tool timed out"
    assert runs[1].trajectory.status == "error"
    assert runs[1].trajectory.error == "RuntimeError: boom"


def test_attachments_are_put_back() -> None:
    log = _log()
    sample = log["samples"][0]
    sample["attachments"] = {"abc123": "What is 3 + 5? (from an attachment)"}
    sample["messages"][0]["content"] = "attachment://abc123"
    runs = _records(log)
    first = runs[0].trajectory.steps[0]
    assert isinstance(first, LlmCall)
    assert first.input_messages[0].content == "What is 3 + 5? (from an attachment)"


def test_reasoning_is_kept_and_other_parts_are_named_not_dropped() -> None:
    log = _log()
    log["samples"][0]["messages"][3]["content"] = [
        {"type": "reasoning", "reasoning": "3 + 5 is 8, as the tool said."},
        {"type": "image", "image": "data:image/png;base64,AAAA"},
        {"type": "text", "text": "The answer is 8."},
    ]
    trajectory = _records(log)[0].trajectory
    assert trajectory.final_answer == "The answer is 8."
    assert trajectory.metadata["inspect"]["content_parts"] == [
        {"at": "samples[0].messages[3].content[0]", "reasoning": "3 + 5 is 8, as the tool said."},
        {"at": "samples[0].messages[3].content[1]", "type": "image", "not_imported": True},
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", (1.0, True)),
        ("I", (0.0, False)),
        ("N", (0.0, False)),
        ("P", (0.5, False)),
        (1, (1.0, True)),
        (0.25, (0.25, False)),
        (True, (1.0, True)),
        ("0.999999999", (0.999999999, True)),
        ({"a": "C", "b": "I"}, (None, None)),
    ],
)
def test_score_values_map_to_value_and_verdict(value: Any, expected: tuple[Any, Any]) -> None:
    log = _log()
    log["samples"][0]["scores"]["includes"]["value"] = value
    score = _records(log)[0].scores[0]
    assert (score.value, score.passed) == expected


def test_a_value_of_several_scores_abstains_with_a_warning_and_is_kept() -> None:
    log = _log()
    log["samples"][0]["scores"]["includes"]["value"] = {"a": "C"}
    run = _records(log)[0]
    assert run.scores[0].metadata["value"] == {"a": "C"}
    assert any("neither a number nor a grade" in w for w in run.warnings)


def test_an_epoch_given_twice_and_an_unfinished_log_are_warnings() -> None:
    log = _log()
    log["status"] = "cancelled"
    log["samples"][2]["id"] = "two-plus-two"  # now two-plus-two epoch 1 twice
    log["samples"][2]["epoch"] = 1
    runs = _records(log)
    assert [(r.case_id, r.repetition) for r in runs][1:3] == [
        ("two-plus-two", 0),
        ("two-plus-two", 1),
    ]
    assert any("epoch 1 is given again" in w for w in runs[2].warnings)
    assert all(any("'cancelled'" in w for w in r.warnings) for r in runs)


def _set(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("eval",), "addition", r"log\.json: eval: must be an object"),
        (("samples",), {"x": 1}, r"log\.json: samples: must be a list"),
        (("samples", 0), 3, r"samples\[0\]: a sample must be an object"),
        (("samples", 0, "id"), None, r"samples\[0\]\.id: must be a string or a whole number"),
        (("samples", 0, "epoch"), 10**40, r"samples\[0\]\.epoch: must be a whole number"),
        (("samples", 0, "messages"), "hi", r"samples\[0\]\.messages: must be a list"),
        (("samples", 0, "messages", 1, "tool_calls", 0, "function"), {"name": "add"},
         r"samples\[0\]\.messages\[1\]\.tool_calls\[0\]\.function: must be a non-empty string"),
        (("samples", 0, "messages", 1, "content"), 5, r"samples\[0\]\.messages\[1\]\.content"),
        (("samples", 0, "scores"), ["C"], r"samples\[0\]\.scores: must be an object"),
        (("samples", 0, "scores", "includes"), "C", r"scores\.includes: a score must be an object"),
        (("samples", 0, "messages", 0, "content"), "x" * 1_000_001, r"samples\[0\]"),
    ],
)  # fmt: skip
def test_malformed_logs_are_refused_naming_the_field(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message) as refused:
        _records(_set(_log(), path, value))
    assert "\n" not in str(refused.value)


def test_a_log_without_samples_is_refused() -> None:
    log = _log()
    del log["samples"]
    with pytest.raises(InputError, match="holds no samples"):
        _records(log)


def test_the_format_is_told_from_the_log() -> None:
    assert detect_format(LOG) == "inspect"
    assert [r.source_format for r in load_runs([LOG])] == ["inspect"] * 4


# ------------------------------------------------------------------------------- CLI


def test_agent_score_round_trip_gates_on_the_imported_scores(cli: Any) -> None:
    result: Result = cli("agent", "score", str(LOG), "--format", "inspect", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["n_trajectories"], report["n_tasks"], report["gate_on"]) == (4, 2, "reward")
    assert report["pass_rate"]["estimate"] == pytest.approx(3 / 4)
    # pass^2 over the epochs: two-plus-two passed both, three-plus-five one of two.
    assert report["pass_hat_k"]["2"]["estimate"] == pytest.approx((1 + 0) / 2)
    assert report["scorers"]["inspect:includes"]["pass"] == 3


def test_an_inspect_scorer_named_like_a_builtin_one_keeps_its_own_row(
    cli: Any, tmp_path: Path
) -> None:
    log = _log()
    for sample in log["samples"]:  # Inspect's scorer called like Arbiter's `completed`
        sample["scores"] = {"completed": sample["scores"]["includes"]}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    result: Result = cli("agent", "score", str(path), "--scorer", "completed", "--json")
    assert result.code == 0, result.err
    scorers = json.loads(result.out)["scorers"]
    assert (scorers["inspect:completed"]["pass"], scorers["inspect:completed"]["fail"]) == (3, 1)
    assert (scorers["completed"]["pass"], scorers["completed"]["fail"]) == (4, 0)


def test_agent_score_refuses_a_bad_log_with_one_line_and_exit_3(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_set(_log(), ("samples", 1, "epoch"), "first")), encoding="utf-8")
    result: Result = cli("agent", "score", str(bad), "--format", "inspect")
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert "bad.json: samples[1].epoch: must be a whole number" in result.err


# ------------------------------------------------------------------------ .eval archives

ARCHIVE = DATA / "inspect_addition_mockllm.eval"


def test_an_eval_archive_written_by_inspect_reads_like_its_json_log() -> None:
    pytest.importorskip("zstandard")
    runs = list(load_inspect_log(ARCHIVE))
    got = sorted((r.case_id, r.repetition, r.scores[0].passed) for r in runs)
    assert got == sorted(SAMPLE_EPOCHS)
    assert detect_format(ARCHIVE) == "inspect"
    trajectory = runs[0].trajectory
    assert trajectory is not None
    assert [s.kind for s in trajectory.steps] == ["llm_call", "tool_call", "llm_call"]


def _deflated_archive(tmp_path: Path, log: dict[str, Any]) -> Path:
    """An .eval archive of a log's samples, deflated (what older inspect_ai wrote)."""
    path = tmp_path / "log.eval"
    samples = log.pop("samples")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(log))
        for sample in samples:
            archive.writestr(
                f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample)
            )
    return path


def test_a_deflated_archive_reads_and_names_the_member_of_a_bad_sample(tmp_path: Path) -> None:
    runs = list(load_inspect_log(_deflated_archive(tmp_path, _log())))
    assert len(runs) == 4
    broken = _set(_log(), ("samples", 0, "messages"), "hi")
    with pytest.raises(
        InputError, match=r"log\.eval: samples/three-plus-five_epoch_1\.json\.messages"
    ):
        list(load_inspect_log(_deflated_archive(tmp_path, broken)))


def test_an_archive_member_past_the_bound_is_refused_not_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("zstandard")
    monkeypatch.setattr(inspect_logs, "MAX_ARCHIVE_MEMBER_BYTES", 6000)  # header.json fits
    with pytest.raises(InputError, match=r"eval: samples/\S+\.json: \d+ bytes uncompressed"):
        list(load_inspect_log(ARCHIVE))


@pytest.mark.parametrize("content", [b"not a zip at all", b""])
def test_a_file_that_is_no_archive_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "log.eval"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"log\.eval: not an Inspect \.eval archive"):
        list(load_inspect_log(path))


def test_an_archive_without_a_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("samples/a_epoch_1.json", "{}")
    with pytest.raises(InputError, match=r"header\.json: the archive has none"):
        list(load_inspect_log(path))


def test_agent_score_round_trip_on_an_eval_archive(cli: Any) -> None:
    pytest.importorskip("zstandard")
    result: Result = cli("agent", "score", str(ARCHIVE), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["n_trajectories"], report["n_tasks"]) == (4, 2)
    assert report["pass_rate"]["estimate"] == pytest.approx(3 / 4)


def test_a_member_that_inflates_past_what_it_declares_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("zstandard")
    data = bytearray(ARCHIVE.read_bytes())
    with zipfile.ZipFile(ARCHIVE) as archive:
        samples = [i for i in archive.infolist() if i.filename.startswith("samples/")]
    for sample in samples:
        # The central directory's entry of each sample: its uncompressed size (offset 24) lies.
        entry = _central_entry(data, sample)
        data[entry + 24 : entry + 28] = (100).to_bytes(4, "little")
    lying = tmp_path / "lying.eval"
    lying.write_bytes(bytes(data))
    monkeypatch.setattr(inspect_logs, "MAX_ARCHIVE_MEMBER_BYTES", 6000)
    with pytest.raises(InputError, match=r"lying\.eval: samples/\S+: larger than 6000 bytes"):
        list(load_inspect_log(lying))


def _central_entry(data: bytearray, info: zipfile.ZipInfo) -> int:
    """Where the central directory's entry of ``info`` starts in an archive's bytes."""
    name = info.filename.encode()
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name:
        at = data.index(b"PK\x01\x02", at + 4)
    return at


def test_each_model_call_has_the_tokens_of_its_model_event() -> None:
    run = next(iter(load_inspect_log(LOG)))
    assert run.trajectory is not None
    calls = [s for s in run.trajectory.steps if isinstance(s, LlmCall)]
    # make_inspect_logs.py gives each tool call 40 + 12 tokens and each answer 60 + 8.
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(40, 12), (60, 8)]
    assert run.trajectory.totals().total_tokens == 120
    assert run.warnings == []


def test_model_events_that_do_not_pair_with_the_calls_give_no_call_a_count() -> None:
    log = _log()
    events = log["samples"][0]["events"]
    first_model_event = next(e for e in events if e.get("event") == "model")
    log["samples"][0]["events"] = [first_model_event]  # one event for two calls
    run = _records(log)[0]
    assert run.trajectory is not None
    calls = [s for s in run.trajectory.steps if isinstance(s, LlmCall)]
    assert [c.input_tokens for c in calls] == [None, None]
    assert any("1 model events for 2 model calls" in w for w in run.warnings)
