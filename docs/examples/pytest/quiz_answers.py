"""The quiz's answers as a plain function, for docs/pytest.md's row-by-row test."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "ci"))

import quiz_app  # docs/examples/ci/quiz_app.py, the quiz of docs/ci.md


def answer(input: dict[str, str]) -> str:
    """The answer of the quiz version QUIZ_VERSION names (v1 by default)."""
    return getattr(quiz_app, os.environ.get("QUIZ_VERSION", "v1"))(input)
