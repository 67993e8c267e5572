"""Deterministic systems under test for the harness and CLI tests.

Importable as ``tests.helpers.systems:<name>`` by a subprocess whose PYTHONPATH
holds the repository root.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from arbiter.contract import Prediction


def _bucket(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 100


def echo_label(input: dict[str, Any]) -> Prediction:
    """Answers ``input['answer']``: the dataset decides what is right."""
    return Prediction(label=str(input["answer"]), confidence=0.9)


def mostly_right(input: dict[str, Any]) -> Prediction:
    """Right on ~80% of inputs (by a hash of the id), deterministic."""
    wrong = _bucket(str(input["id"])) < 20
    answer = str(input["answer"])
    return Prediction(label="no" if wrong and answer == "yes" else ("yes" if wrong else answer))


def often_wrong(input: dict[str, Any]) -> Prediction:
    """Right on ~50% of inputs, deterministic: a clear regression of ``mostly_right``."""
    wrong = _bucket(str(input["id"])) < 50
    answer = str(input["answer"])
    return Prediction(label=("no" if answer == "yes" else "yes") if wrong else answer)


def slow_mostly_right(input: dict[str, Any]) -> Prediction:
    """``mostly_right`` after 10 ms: slow enough to be killed mid-run."""
    time.sleep(0.01)
    return mostly_right(input)
