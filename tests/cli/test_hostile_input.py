"""Input that once broke a command is invalid input now: exit 3, one line, nothing written.

Each test pins a defect found by outside testing (its number in the foundation issue).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.data import yes_no_dataset

EXAMPLE = {"id": "a", "input": {"answer": "yes", "id": "a"}, "expected_label": "yes"}
CASE = {"id": "c1", "task": "Summarise.", "context": "Refunds within 30 days.", "output": "ok"}


def _run(cli: Any, dataset: Path) -> Any:
    return cli(
        "run", "--dataset", str(dataset), "--target", "tests.helpers.systems:echo_label", "-q"
    )


def _nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "store.db").exists()
    assert not (tmp_path / "home").exists()


def _one_line(result: Any) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("arbiter: error: ")
    assert "internal error" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # defect 3: a lone surrogate escape
        ('{"id": "b", "input": {"s": "\\ud800"}, "expected_label": "yes"}', ":2:29: the escape"),
        ('{"id": "b", "input": {"s": "\\udfff x"}, "expected_label": "yes"}', "lone UTF-16"),
        # defect 4: a number no float can hold reaches the system as inf, is stored as null
        ('{"id": "b", "input": {"n": 1e999}, "expected_label": "yes"}', "1e999 is too large"),
        ('{"id": "b", "input": {"n": -1e400}, "expected_label": "yes"}', "too large for a float"),
        # defect 5: nesting a recursive reader cannot follow
        ('{"id": "b", "input": ' + "[" * 100_000 + "]" * 100_000 + "}", ":2: JSON nested"),
        ('{"id": "b", "input": {"a": ' + "[" * 200 + "]" * 200 + "}}", "deeper than 128"),
        # defect 13: the field that was meant is named
        ('{"id": "b", "input": {}, "label": "yes"}', "did you mean 'expected_label'?"),
    ],
)
def test_a_bad_dataset_line_exits_3_with_file_and_line_and_writes_nothing(
    cli: Any, tmp_path: Path, line: str, expected: str
) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n" + line + "\n", encoding="utf-8")
    result = _run(cli, dataset)
    assert result.code == 3
    message = _one_line(result)
    assert f"{dataset}:2" in message
    assert expected in message
    _nothing_written(tmp_path)


def test_a_valid_surrogate_pair_is_a_character_not_an_error(cli: Any, tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    row = {**EXAMPLE, "input": {**EXAMPLE["input"], "emoji": "😀"}}  # type: ignore[dict-item]
    dataset.write_text(json.dumps(row, ensure_ascii=True) + "\n")  # written as \ud83d\ude00
    assert "\\ud83d\\ude00" in dataset.read_text()
    assert _run(cli, dataset).code == 0


def test_a_json_dataset_nested_too_deep_names_the_file(cli: Any, tmp_path: Path) -> None:
    dataset = tmp_path / "data.json"
    dataset.write_text('{"examples": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = _run(cli, dataset)
    assert result.code == 3
    assert str(dataset) in _one_line(result)
    _nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('"\\ud800"', "lone UTF-16 surrogate"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper"),
        ("1e999", "too large for a float"),
    ],
)
@pytest.mark.parametrize("command", [("judge", "--file"), ("jury", "eval", "--cases")])
def test_a_bad_case_line_exits_3_before_any_jury_run_is_stored(
    cli: Any, tmp_path: Path, command: tuple[str, ...], output: str, expected: str
) -> None:
    cases = tmp_path / "cases.jsonl"
    bad = json.dumps({**CASE, "id": "c2"}).replace('"ok"', output)
    cases.write_text(json.dumps(CASE) + "\n" + bad + "\n", encoding="utf-8")
    result = cli(*command, str(cases))
    assert result.code == 3
    message = _one_line(result)
    assert f"{cases}:2" in message
    assert expected in message
    _nothing_written(tmp_path)


def test_undecodable_bytes_in_a_judged_text_are_invalid_input(cli: Any, tmp_path: Path) -> None:
    # What the shell hands Python for bytes that are not UTF-8: lone surrogates.
    garbled = b"ok \xff\xfe".decode("utf-8", "surrogateescape")
    result = cli("judge", "--task", "t", "--context", "c", "--output", garbled)
    assert result.code == 3
    assert "--output: not valid UTF-8 text" in _one_line(result)
    _nothing_written(tmp_path)


def test_judge_reads_long_texts_from_files(cli: Any, tmp_path: Path) -> None:
    context, output = tmp_path / "context.txt", tmp_path / "output.txt"
    context.write_text("\ufeffRefunds are accepted within 30 days. " * 2000, encoding="utf-8")
    output.write_text("Refunds are accepted within 45 days. " * 2000, encoding="utf-8")
    result = cli(
        "judge",
        "--task",
        "Summarise.",
        "--context",
        f"@{context}",
        "--output",
        f"@{output}",
        "--json",
        "--no-audit",
    )
    assert result.code in (1, 2), result.err
    (judgment,) = json.loads(result.out)["judgments"]
    assert judgment["verdict"]["decision"] != "ACCEPT"
    missing = cli("judge", "--task", "t", "--context", "c", "--output", f"@{tmp_path / 'no'}")
    assert missing.code == 3
    assert "no such file" in _one_line(missing)


def test_an_empty_output_is_rejected_not_accepted(cli: Any) -> None:
    # defect 12: nothing answers the task; it was ACCEPTed with confidence 0.70.
    for empty in ("", "   \n\t "):
        result = cli("judge", "--task", "Summarise.", "--context", "Refunds.", "--output", empty)
        assert result.code == 2, result.out
        assert "VERDICT: REJECT" in result.out
        assert "the output is empty" in result.out


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # defect 11: options that make every call fail are refused before the run
        (["--url", "http://u:p@svc.test/x", "--header", "Authorization: Bearer t"], "twice"),
        (["--url", "http://svc.test/x", "--header", "X-A: one\rtwo"], "line break"),
        (["--url", "http://svc.test/x", "--header", "X-A: one\ntwo"], "line break"),
        (["--url", "http://svc.test/x", "--body-template", "{bad"], "--body-template:1:2"),
        (["--url", "ftp://svc.test/x"], "http(s)://"),
    ],
)
def test_http_options_that_would_fail_every_call_exit_3_before_the_run(
    cli: Any, tmp_path: Path, options: list[str], expected: str
) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n")
    result = cli("run", "--dataset", str(dataset), "--system", "http", *options, "-q")
    assert result.code == 3
    assert expected in _one_line(result)
    _nothing_written(tmp_path)


def test_a_body_template_naming_a_missing_field_is_invalid_input_not_a_crash(
    cli: Any, tmp_path: Path
) -> None:
    # defect 14: it was recorded as SystemCrashed on every pair of a stored run.
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n")
    template = tmp_path / "body.json"
    template.write_text('{"text": "{{input.missing}}"}')
    result = cli(
        "run",
        "--dataset",
        str(dataset),
        "--system",
        "http",
        "--url",
        "http://127.0.0.1:9/x",
        "--body-template",
        f"@{template}",
        "-q",
    )
    assert result.code == 3
    message = _one_line(result)
    assert "example 'a'" in message
    assert "{{input.missing}}" in message
    _nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("./no_such_file.py:predict", "no such file"),
        ("tests.helpers.no_such_module:f", "cannot import"),
        ("broken.py:predict", "broken.py': SyntaxError: invalid syntax"),
    ],
)
def test_a_bad_python_target_exits_3(cli: Any, tmp_path: Path, target: str, expected: str) -> None:
    (tmp_path / "broken.py").write_text("def predict(:\n")
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n")
    result = cli("run", "--dataset", str(dataset), "--target", target, "-q")
    assert result.code == 3
    assert expected in _one_line(result)


def test_a_path_style_target_runs_and_resumes_from_another_folder(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # defect 13: `--target ./sentiment.py:predict` was "internal error: TypeError".
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "rules.py").write_text("ANSWER = 'yes'\n")
    (folder / "sentiment.py").write_text(
        "from rules import ANSWER\n\ndef predict(input):\n    return ANSWER\n"
    )
    dataset = tmp_path / "data.jsonl"
    from arbiter.datasets import dump_dataset_jsonl

    data = yes_no_dataset(10)
    dump_dataset_jsonl(data, dataset)
    share_yes = sum(e.expected_label == "yes" for e in data.examples) / len(data.examples)
    monkeypatch.chdir(folder)
    result = cli("run", "--dataset", str(dataset), "--target", "./sentiment.py:predict", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["system"] == f"python:{folder / 'sentiment.py'}:predict"
    assert report["strict"]["accuracy"]["estimate"] == share_yes  # it always answers "yes"


@pytest.mark.parametrize("name", ["online.json", "rules.json"])
def test_online_config_and_rule_files_are_read_like_every_other_input(
    cli: Any, tmp_path: Path, name: str
) -> None:
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text(json.dumps({"id": "p", "label": "nominal", "confidence": 0.9}) + "\n")
    rules = tmp_path / "rules.json"
    rules.write_text("[]", encoding="utf-8")
    config = tmp_path / "online.json"
    config.write_text(json.dumps({"rules": "rules.json"}), encoding="utf-8")
    target = tmp_path / name
    # With a byte-order mark: read, not refused.
    target.write_bytes(b"\xef\xbb\xbf" + target.read_bytes())
    assert cli("online", "score", str(traffic), "--config", str(config), "-q").code == 0
    # Not UTF-8: one line naming the file and the line, not "internal error".
    target.write_bytes(b"{\n  \xff\n}")
    result = cli("online", "score", str(traffic), "--config", str(config), "-q")
    assert result.code == 3
    assert f"{target}:2: byte 0xff" in _one_line(result)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: __import__("os").mkfifo(p), "is a FIFO"),
    ],
)
@pytest.mark.parametrize("option", ["--dataset", "--label-map", "--body-template"])
def test_a_directory_or_fifo_given_as_a_file_is_named_so(
    cli: Any, tmp_path: Path, make: Any, expected: str, option: str
) -> None:
    odd = tmp_path / "odd.json"
    make(odd)
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n")
    args = {
        "--dataset": ["--dataset", str(odd)],
        "--label-map": ["--dataset", str(dataset), "--label-map", str(odd)],
        "--body-template": [
            "--dataset",
            str(dataset),
            "--system",
            "http",
            "--url",
            "http://x.test/",
            "--body-template",
            f"@{odd}",
        ],
    }[option]
    result = cli("run", *args, "--target", "tests.helpers.systems:echo_label", "-q")
    assert result.code == 3
    assert f"{odd}: {expected}" in _one_line(result)


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({**EXAMPLE, "id": "i" * 250}, ":1: field 'id': 250 characters, more than the 200"),
        ({**EXAMPLE, "input": {"answer": "ye\x00s"}}, ":1: field 'input.answer': must not"),
        ({**EXAMPLE, "expected_label": "yes\x00"}, ":1: field 'expected_label': must not"),
    ],
)
def test_issue_17_rows_the_store_cannot_keep_are_refused_at_their_line(
    cli: Any, tmp_path: Path, row: dict[str, Any], fragment: str
) -> None:
    dataset = tmp_path / "hostile.jsonl"
    dataset.write_text(json.dumps(row) + "\n", encoding="utf-8")
    for dry_run in ((), ("--dry-run",)):
        result = (
            _run(cli, dataset)
            if not dry_run
            else cli(
                "run",
                "--dataset",
                str(dataset),
                "--target",
                "tests.helpers.systems:echo_label",
                *dry_run,
            )
        )
        assert result.code == 3
        assert f"hostile.jsonl{fragment}" in _one_line(result)
    _nothing_written(tmp_path)


def test_issue_17_a_duplicate_key_in_a_label_map_is_refused(cli: Any, tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps(EXAMPLE) + "\n", encoding="utf-8")
    mapping = tmp_path / "map.json"
    mapping.write_text('{"yes": "yes", "no": "no", "yes": "no"}', encoding="utf-8")
    result = cli(
        "run",
        "--dataset",
        str(dataset),
        "--target",
        "tests.helpers.systems:echo_label",
        "--label-map",
        str(mapping),
        "-q",
    )
    assert result.code == 3
    assert "map.json:1:28: duplicate key 'yes' in one object" in _one_line(result)
    _nothing_written(tmp_path)
