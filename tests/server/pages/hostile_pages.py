"""Hostile text for the run pages: payloads, a classifier that answers them, their data.

Importable as ``tests.server.pages.hostile_pages:classify`` by the Python system: it
answers the label its input names, so labels, cohorts, example ids and expected labels
can all be payloads.
"""

from __future__ import annotations

from typing import Any

from arbiter.contract import Dataset, Example, Prediction

__all__ = ["FLAG", "PAYLOADS", "SHOWN", "classify", "dataset"]

FLAG = "__pwned"
"""The window property a payload sets if it ever runs."""

PAYLOADS: dict[str, str] = {
    "script": f"<script>window.{FLAG}=1;alert(1)</script>",
    "attribute": f'" onmouseover="window.{FLAG}=2" autofocus onfocus="alert(2)" x="',
    "link": "javascript:alert(3)",
    "image": f'<img src=x onerror="window.{FLAG}=4;alert(4)">',
    "ansi": "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "svg": f'</text></svg><svg onload="window.{FLAG}=5"><text>',
}
"""Each payload by name."""

SHOWN: dict[str, str] = {
    **PAYLOADS,
    "ansi": "\\x1b[31mred\\x1b[0m\\x1b]0;title\\x07",
}
"""How each payload reads on a page: as written, controls shown as escapes."""


def classify(input: dict[str, Any]) -> Prediction:
    """Answer the label ``input['answer']`` names."""
    return Prediction(id="p", raw_output={"html": PAYLOADS["image"]}, label=input["answer"])


def dataset() -> Dataset:
    """An example per payload: its id, cohort, expected label and answer are payloads."""
    names = list(PAYLOADS)
    examples = [
        Example(
            id=f"{name}:{PAYLOADS[name]}",
            input={"answer": PAYLOADS[names[(i + 1) % len(names)]] if i % 2 else PAYLOADS[name]},
            expected_label=PAYLOADS[name],
            cohort=PAYLOADS[name],
            metadata={"note": PAYLOADS["script"]},
        )
        for i, name in enumerate(names)
    ]
    return Dataset(name=PAYLOADS["script"], version="1", examples=examples)
