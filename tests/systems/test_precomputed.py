"""The ``precomputed`` system: outputs come from the dataset, nothing is called."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Dataset, Example, Output
from arbiter.datasets import load_dataset
from arbiter.errors import InputError, InvalidSystemResponse, MissingField
from arbiter.harness.runner import run_eval
from arbiter.systems.factory import build_system
from arbiter.systems.precomputed import PrecomputedSystem
from arbiter.systems.registry import SystemRegistry


def _example(**fields: Any) -> Example:
    return Example(**{"id": "x", "input": {"q": "capital of France?"}, **fields})


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


async def test_the_output_recorded_at_the_top_level_is_the_answer() -> None:
    answered = await PrecomputedSystem().answer(_example(output="Paris"))
    assert (answered.text, answered.label) == ("Paris", "Paris")


async def test_an_output_inside_the_input_is_read_when_the_row_has_none_at_the_top() -> None:
    example = _example(input={"q": "capital?", "output": "Lyon"})
    assert (await PrecomputedSystem().answer(example)).text == "Lyon"


async def test_the_top_level_output_wins_over_one_inside_the_input() -> None:
    example = _example(input={"output": "from input"}, output="from the row")
    assert (await PrecomputedSystem().answer(example)).text == "from the row"


async def test_a_renamed_output_field_is_read_at_the_top_level_and_inside_the_input(
    tmp_path: Path,
) -> None:
    file = _jsonl(
        tmp_path / "logs.jsonl",
        [
            {"id": "top", "input": {"q": "a"}, "response": "at the top"},
            {"id": "inside", "input": {"q": "b", "response": "inside input"}},
        ],
    )
    dataset = load_dataset(file, output_field="response")
    system = PrecomputedSystem("response")
    texts = [(await system.answer(e)).text for e in dataset.examples]
    assert texts == ["at the top", "inside input"]


async def test_an_output_shaped_object_keeps_its_text_and_confidence() -> None:
    example = _example(output={"text": "Paris", "confidence": 0.75})
    answered = await PrecomputedSystem().answer(example)
    assert (answered.text, answered.label, answered.confidence) == ("Paris", None, 0.75)


async def test_any_other_json_is_kept_raw() -> None:
    answered = await PrecomputedSystem().answer(_example(output={"answer": 42}))
    assert answered == Output(raw={"answer": 42})


async def test_a_missing_output_names_the_example_and_the_field() -> None:
    with pytest.raises(MissingField, match="example 'x' has no field 'response'"):
        await PrecomputedSystem("response").answer(_example())


async def test_an_invalid_output_shaped_object_is_an_invalid_response() -> None:
    with pytest.raises(InvalidSystemResponse, match=r"example 'x'.*confidence"):
        await PrecomputedSystem().answer(_example(output={"text": "a", "confidence": 2}))


def test_a_missing_output_fails_that_example_only_and_the_run_goes_on() -> None:
    dataset = Dataset(
        examples=[
            _example(id="has", output="Paris", expected_label="Paris"),
            _example(id="lacks", expected_label="Paris"),
        ]
    )
    report = run_eval(PrecomputedSystem(), dataset, retries=0)
    assert report.status == "completed"
    assert report.errors_by_type == {"MissingField": 1}
    assert report.error_examples["MissingField"] == "example 'lacks' has no field 'output'"
    section = report.sections["label"]
    assert (section.passed, section.failed) == (1, 1)


def test_a_missing_output_is_not_retried() -> None:
    dataset = Dataset(examples=[_example(id="lacks", expected_label="Paris")])
    report = run_eval(PrecomputedSystem(), dataset, retries=3)
    assert report.errors_by_type == {"MissingField": 1}
    assert report.error_rate == 1.0


async def test_called_with_an_input_alone_it_predicts_from_the_input_field() -> None:
    prediction = await PrecomputedSystem("answer")({"answer": {"label": "yes", "confidence": 0.5}})
    assert (prediction.label, prediction.confidence) == ("yes", 0.5)
    with pytest.raises(MissingField, match="no field 'answer'"):
        await PrecomputedSystem("answer")({"q": 1})


def test_the_description_rebuilds_the_same_system() -> None:
    description = PrecomputedSystem("response").describe()
    assert description == {"kind": "precomputed", "field": "response"}
    rebuilt = build_system(description)
    assert isinstance(rebuilt, PrecomputedSystem)
    assert rebuilt.describe() == description
    assert "precomputed" in SystemRegistry.default(plugins=False).names()


def test_a_description_without_a_field_reads_output() -> None:
    assert build_system({"kind": "precomputed"}).describe()["field"] == "output"


@pytest.mark.parametrize("field", ["", "  ", None])
def test_an_empty_field_name_is_refused(field: Any) -> None:
    with pytest.raises(InputError, match="needs an output field name"):
        PrecomputedSystem(field)
