"""A small quiz the MCP tests evaluate: a dataset, two systems, an eval file with a gate."""

from __future__ import annotations

import json
from pathlib import Path

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Kenya": "Nairobi"}

APP = """\
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Kenya": "Nairobi"}


def good(input):
    return CAPITALS[input["country"]]


def worse(input):
    return "Lyon" if input["country"] in ("France", "Peru") else CAPITALS[input["country"]]
"""

EVAL_FILE = """\
name = "quiz"

[dataset]
path = "quiz.jsonl"

[system]
kind = "python"
target = "quiz_app.py:{target}"

[run]
k = 2

[[scorers]]
name = "normalized"

[gate]
min_accuracy = 0.75
"""


def write_quiz(folder: Path) -> dict[str, Path]:
    """The quiz's files in ``folder``: the dataset, the app, and an eval file per system."""
    dataset = folder / "quiz.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": country.lower(), "input": {"country": country}, "expected": city})
            + "\n"
            for country, city in CAPITALS.items()
        ),
        encoding="utf-8",
    )
    (folder / "quiz_app.py").write_text(APP, encoding="utf-8")
    files = {"dataset": dataset}
    for target in ("good", "worse"):
        path = folder / f"{target}.eval.toml"
        path.write_text(EVAL_FILE.format(target=target), encoding="utf-8")
        files[target] = path
    return files
