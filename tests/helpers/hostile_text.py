"""A free-text system whose answers attack whatever shows them, and its dataset.

Importable as ``tests.helpers.hostile_text:answer`` by the CLI's Python system. Every
answer fails ``casefold`` against the (equally hostile) reference, so each one lands in
``--failures``, in the explanation that quotes it, and in every export.

A lone surrogate is not among the answers: the store cannot hold one yet (see the report
of the change that added this file); the formats are tested with one directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PWNED = "window.__pwned"
"""The global a payload sets if it ever runs in a browser."""

ANSWERS: dict[str, str] = {
    "script": f"<script>{PWNED}=1;alert(1)</script>",
    "textarea": f'</textarea></td></table><img src=x onerror="{PWNED}=2">',
    "attribute": f'" onmouseover="{PWNED}=3" x=\'',
    "link": '[click](javascript:alert(1)) <a href="https://evil.example/x">x</a>',
    "markdown": "pipe | and `backtick` and **bold**\nsecond line\r\nthird",
    "ansi": "clear\x1b[2J\x1b]0;retitled\x07 bell\x07 nul\x00 bidi\u202eevil",
    "formula": '=HYPERLINK("https://evil.example","x")',
    "huge": "x" * 1_000_000,
}
"""What the system answers, by example id."""

CRASH = "crash"
"""The example whose call raises, with a hostile message."""

REFERENCE = "<b>ref</b> | `x`\n=1+1"
"""Every example's reference."""


def answer(input: dict[str, Any]) -> str:
    """The hostile answer for ``input['id']``; raises for :data:`CRASH`."""
    if input["id"] == CRASH:
        raise ValueError(f"bad <script>{PWNED}=4</script> \x1b[31mred | pipe")
    return ANSWERS[input["id"]]


def write_dataset(path: Path) -> Path:
    """One example per answer and one that crashes, as JSONL at ``path``."""
    ids = [*ANSWERS, CRASH]
    rows = [{"id": i, "input": {"id": i}, "expected": REFERENCE} for i in ids]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
