"""A free-text system under test and its dataset, for the text scorers' end-to-end tests.

Importable as ``tests.helpers.text_systems:<name>`` by the CLI's Python system.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUIZ: list[dict[str, Any]] = [
    {"id": "q1", "input": {"question": "Capital of France?"}, "expected": "Paris"},
    {"id": "q2", "input": {"question": "Capital of Italy?"}, "expected": "Rome"},
    {"id": "q3", "input": {"question": "Capital of Spain?"}, "expected": "Madrid"},
    {"id": "q4", "input": {"question": "Capital of Japan?"}, "expected": ["Tokyo", "Tōkyō"]},
    {"id": "q5", "input": {"question": "Tallest mountain?"}, "expected": "Mount Everest"},
    {"id": "q6", "input": {"question": "Say something."}},
]
"""Questions with reference answers (a list: any of them); the last has none."""

_ANSWERS = {
    "Capital of France?": "Paris",  # right
    "Capital of Italy?": "rome",  # right but for case
    "Capital of Spain?": "It is Madrid.",  # right, in a sentence
    "Capital of Japan?": "Kyoto",  # wrong
    "Tallest mountain?": "Everest",  # half the reference's tokens
    "Say something.": "Hello.",
}


def quiz(input: dict[str, Any]) -> str:
    """Answers the quiz as a small LLM app might: some right, some loosely, one wrong."""
    return _ANSWERS[input["question"]]


def write_quiz(path: Path) -> Path:
    """Write :data:`QUIZ` as JSONL at ``path``."""
    path.write_text("".join(json.dumps(row) + "\n" for row in QUIZ), encoding="utf-8")
    return path
