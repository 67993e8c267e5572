"""The bundled demo: its dataset's shape, its screener's contract, and the gap they show."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from arbiter.contract import Example
from arbiter.demo import DEMO_LABEL_MAP, DEMO_TARGET, dataset_path
from arbiter.demo.classifier import LEVELS, classify

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "make_demo_dataset.py"


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    lines = dataset_path().read_text(encoding="utf-8").splitlines()
    return [Example.model_validate_json(line) for line in lines]


def _accuracy(examples: list[Example], *, mapped: bool) -> float:
    correct = 0
    for example in examples:
        label = classify(example.input).label
        predicted = DEMO_LABEL_MAP[label] if mapped else label
        correct += predicted == example.expected_label
    return correct / len(examples)


def test_dataset_is_bundled_as_package_data() -> None:
    path = dataset_path()
    assert path.is_file()
    assert path.name == "transactions.jsonl"


def test_dataset_has_enough_examples_with_unique_ids(examples: list[Example]) -> None:
    assert len(examples) >= 200
    assert len({e.id for e in examples}) == len(examples)


def test_dataset_has_four_cohorts_of_at_least_forty(examples: list[Example]) -> None:
    sizes = Counter(e.cohort for e in examples)
    assert len(sizes) == 4
    assert None not in sizes
    assert min(sizes.values()) >= 40


def test_ground_truth_is_binary_with_a_realistic_threat_share(examples: list[Example]) -> None:
    labels = Counter(e.expected_label for e in examples)
    assert set(labels) == {"high", "low"}
    assert 0.30 <= labels["high"] / len(examples) <= 0.40


def test_every_example_names_its_scenario(examples: list[Example]) -> None:
    assert all(isinstance(e.metadata.get("scenario"), str) for e in examples)


def test_classifier_answers_only_in_the_graded_vocabulary(examples: list[Example]) -> None:
    predictions = [classify(e.input) for e in examples]
    assert {p.label for p in predictions} <= set(LEVELS)
    assert {"medium", "critical"} <= {p.label for p in predictions}
    assert all(p.confidence is not None and 0.0 <= p.confidence <= 1.0 for p in predictions)
    assert all(p.raw_output["risk_level"] == p.label for p in predictions)


def test_classifier_is_deterministic(examples: list[Example]) -> None:
    first = [classify(e.input).model_dump() for e in examples]
    second = [classify(dict(e.input)).model_dump() for e in examples]
    assert first == second


def test_classifier_uses_the_inputs_own_id_when_present() -> None:
    assert classify({"id": "T-42", "amount": 10.0}).id == "T-42"
    assert classify({"amount": 10.0}).id == classify({"amount": 10.0}).id != ""


def test_label_map_covers_the_graded_vocabulary() -> None:
    assert set(DEMO_LABEL_MAP) == set(LEVELS)
    assert set(DEMO_LABEL_MAP.values()) == {"high", "low"}


def test_demo_target_names_the_classifier() -> None:
    module, _, name = DEMO_TARGET.partition(":")
    assert (module, name) == (classify.__module__, classify.__name__)


def test_binary_accuracy_is_good_but_not_perfect(examples: list[Example]) -> None:
    assert 0.80 <= _accuracy(examples, mapped=True) <= 0.95


def test_strict_accuracy_trails_binary_accuracy_clearly(examples: list[Example]) -> None:
    assert _accuracy(examples, mapped=False) <= _accuracy(examples, mapped=True) - 0.15


def test_one_cohort_is_clearly_worse_than_the_others(examples: list[Example]) -> None:
    by_cohort = {
        cohort: _accuracy([e for e in examples if e.cohort == cohort], mapped=True)
        for cohort in {e.cohort for e in examples}
    }
    worst, *rest = sorted(by_cohort.values())
    assert worst <= rest[0] - 0.10


def test_generator_reproduces_the_bundled_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "transactions.jsonl"
    subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out)], check=True, capture_output=True
    )
    assert out.read_bytes() == dataset_path().read_bytes()


def test_bundled_file_is_one_json_object_per_line() -> None:
    raw = dataset_path().read_bytes()
    assert raw.endswith(b"\n")
    assert b"\r" not in raw
    for line in raw.decode("utf-8").splitlines():
        assert isinstance(json.loads(line), dict)
