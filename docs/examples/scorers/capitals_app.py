"""A quiz app that answers like an LLM app: mostly right, and not always the same way twice.

Used by docs/scorers.md to show pass^k: run it with ``--k 3`` and an example passes only
if it is answered right all three times. ``make_app`` is a factory, so every run starts
with a fresh app (Arbiter calls it once per run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

ANSWERS = {
    "Capital of France?": "Paris",
    "Capital of Italy?": "Rome",
    "Capital of Spain?": "Madrid",
    "Capital of Japan?": "Tokyo",
    "Capital of the USA?": "Washington, D.C.",
    "Say hello.": "Hello!",
}


def make_app() -> Callable[[dict[str, Any]], str]:
    """The app: a function from an input ``{"question": ...}`` to the answer's text."""
    asked: Counter[str] = Counter()

    def answer(input: dict[str, Any]) -> str:
        question = input["question"]
        asked[question] += 1
        if question == "Capital of Spain?" and asked[question] == 2:
            return "Barcelona"  # the second time it is asked, it slips
        return ANSWERS.get(question, "I do not know.")

    return answer
