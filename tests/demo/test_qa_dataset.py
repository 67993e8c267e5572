"""The bundled free-text QA dataset: reproducible, well-formed, five balanced topics."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from arbiter.contract import Dataset, Example
from arbiter.datasets import load_dataset
from arbiter.demo import qa_dataset_path

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "make_qa_dataset.py"
COHORTS = {"geography", "science", "history", "arithmetic_units", "language_and_culture"}
KINDS = {"entity", "number", "date", "yes_no", "short_phrase"}


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset(qa_dataset_path())


def _of_kind(dataset: Dataset, kind: str) -> list[Example]:
    return [e for e in dataset.examples if e.metadata["kind"] == kind]


def test_generator_reproduces_the_bundled_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "qa.jsonl"
    subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out)], check=True, capture_output=True
    )
    assert out.read_bytes() == qa_dataset_path().read_bytes()


def test_bundled_file_is_utf8_with_one_line_per_example() -> None:
    raw = qa_dataset_path().read_bytes()
    assert raw.endswith(b"\n")
    assert b"\r" not in raw
    assert "Brasília".encode() in raw  # written as UTF-8, not as \\u escapes
    assert len(raw.decode("utf-8").splitlines()) == 200


def test_every_row_loads_as_a_free_text_example(dataset: Dataset) -> None:
    assert len(dataset.examples) == 200
    assert all(isinstance(e.expected, str) and e.expected_label is None for e in dataset.examples)
    assert all(set(e.input) == {"question"} for e in dataset.examples)


def test_ids_are_unique_and_numbered_in_file_order(dataset: Dataset) -> None:
    assert [e.id for e in dataset.examples] == [f"qa-{n:03d}" for n in range(1, 201)]


def test_questions_are_unique_even_ignoring_case_and_spacing(dataset: Dataset) -> None:
    keys = {" ".join(str(e.input["question"]).casefold().split()) for e in dataset.examples}
    assert len(keys) == 200


def test_five_topics_of_forty_each(dataset: Dataset) -> None:
    assert Counter(e.cohort for e in dataset.examples) == dict.fromkeys(COHORTS, 40)


def test_first_examples_cover_every_topic(dataset: Dataset) -> None:
    assert {e.cohort for e in dataset.examples[:5]} == COHORTS


def test_reference_answers_are_short(dataset: Dataset) -> None:
    lengths = [len(str(e.expected).split()) for e in dataset.examples]
    assert min(lengths) >= 1
    assert max(lengths) <= 6


def test_every_row_names_its_kind_and_a_distractor(dataset: Dataset) -> None:
    assert {e.metadata["kind"] for e in dataset.examples} == KINDS
    assert all(isinstance(e.metadata["distractor"], str) for e in dataset.examples)
    assert all(set(e.metadata) <= {"kind", "distractor", "accept"} for e in dataset.examples)
