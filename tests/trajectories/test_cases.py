"""Agent case files load as cases and run as examples; a bad line is named with its field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import AgentCase
from arbiter.errors import InputError
from arbiter.trajectories.cases import cases_dataset, load_cases, parse_cases

WEATHER = {
    "id": "weather-paris",
    "input": {"query": "What is the weather in Paris?", "profile": "travel"},
    "agent_class": "tool_enabled",
    "assertions": {"require_tools_subset": ["get_weather"], "max_cost_usd": 0.05},
    "cohort": "weather",
    "metadata": {"source": "support ticket 12"},
}


def _write(tmp_path: Path, *rows: Any) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_a_case_becomes_the_example_the_trajectory_scorers_read(tmp_path: Path) -> None:
    [case] = load_cases(_write(tmp_path, WEATHER))
    example = case.to_example()
    assert example.id == "weather-paris"
    assert example.input == {"query": "What is the weather in Paris?", "profile": "travel"}
    assert example.expected == {"require_tools_subset": ["get_weather"], "max_cost_usd": 0.05}
    assert example.cohort == "weather"
    assert example.metadata == {"source": "support ticket 12", "agent_class": "tool_enabled"}


def test_a_case_without_assertions_or_class_expects_nothing() -> None:
    [case] = parse_cases(json.dumps({"id": "a", "input": {"query": "hi"}}), source="c.jsonl")
    example = case.to_example()
    assert example.expected is None
    assert example.metadata == {}


def test_cases_keep_file_order_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    second = {"id": "second", "input": {"query": "price of ACME"}}
    cases = load_cases(_write(tmp_path, WEATHER, "", second))
    assert [c.id for c in cases] == ["weather-paris", "second"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[1, 2]", "c.jsonl:2: a case must be a JSON object, got array"),
        ('{"id": "b"}', "c.jsonl:2: field 'input': Field required"),
        (
            '{"id": "b", "input": {"query": "  "}}',
            "c.jsonl:2: field 'input.query': must not be blank",
        ),
        ('{"id": "b", "input": {}}', "c.jsonl:2: field 'input.query': Field required"),
        ('{"id": "", "input": {"query": "q"}}', "c.jsonl:2: field 'id'"),
        ('{"id": "b", "input": {"query": "q"}, "expect": 1}', "c.jsonl:2: field 'expect'"),
        (
            '{"id": "b", "input": {"query": "q"}, "agent_class": "wizard"}',
            "c.jsonl:2: field 'agent_class': unknown agent class 'wizard'",
        ),
        (
            '{"id": "b", "input": {"query": "q"}, "metadata": {"agent_class": "genie"}}',
            "c.jsonl:2: field 'metadata': the key 'agent_class' is reserved",
        ),
        ('{"id": "b", "input": {"query": "q"}, "assertions": []}', "c.jsonl:2: field 'assertions'"),
        ('{"id": "weather-paris", "input": {"query": "q"}}', "duplicate id 'weather-paris'"),
        ('{"id": "b", "input": {"query": "q"', "c.jsonl:2:"),
    ],
)
def test_a_bad_line_is_one_input_error_naming_line_and_field(line: str, expected: str) -> None:
    text = json.dumps(WEATHER) + "\n" + line
    with pytest.raises(InputError) as caught:
        parse_cases(text, source="c.jsonl")
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


def test_a_duplicate_id_names_the_line_that_used_it_first() -> None:
    text = "\n".join([json.dumps(WEATHER), "", json.dumps(WEATHER)])
    with pytest.raises(InputError, match=r"c\.jsonl:3: .*\(first used at line 1\)"):
        parse_cases(text, source="c.jsonl")


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_a_file_without_cases_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="no cases"):
        parse_cases(text, source="c.jsonl")


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_cases(tmp_path / "absent.jsonl")


def test_the_agent_classes_a_case_may_name_are_configurable() -> None:
    line = json.dumps({"id": "p", "input": {"query": "q"}, "agent_class": "planner"})
    [case] = parse_cases(line, source="c.jsonl", agent_classes={"planner"})
    assert case.agent_class == "planner"
    with pytest.raises(InputError, match="unknown agent class 'tool_enabled'"):
        parse_cases(json.dumps(WEATHER), source="c.jsonl", agent_classes={"planner"})


def test_the_cases_dataset_holds_one_example_per_case_under_its_name() -> None:
    cases = parse_cases(json.dumps(WEATHER), source="c.jsonl")
    dataset = cases_dataset(cases, "golden")
    assert dataset.name == "golden"
    assert [e.id for e in dataset.examples] == ["weather-paris"]
    # The hash is the examples' alone: the same cases under another name are one dataset.
    assert cases_dataset(cases, "other").content_hash == dataset.content_hash


@pytest.mark.parametrize("cases", [[], "twice"])
def test_the_cases_dataset_refuses_no_case_or_a_repeated_id(cases: Any) -> None:
    case = AgentCase.model_validate(WEATHER)
    with pytest.raises(InputError, match="agent cases: "):
        cases_dataset([case, case] if cases == "twice" else cases)


def test_a_cut_point_no_scorer_could_grade_with_is_refused_at_its_line() -> None:
    good = json.dumps({"id": "a", "input": {"query": "q"}, "assertions": {"max_cost_usd": 0.5}})
    bad = json.dumps({"id": "b", "input": {"query": "q"}, "assertions": {"max_cost_usd": "cheap"}})
    with pytest.raises(InputError) as caught:
        parse_cases(f"{good}\n{bad}\n", source="cases.jsonl")
    assert str(caught.value) == (
        "cases.jsonl:2: assertion 'max_cost_usd' must be a finite number, got 'cheap'"
    )
