"""The grounding gate's benchmark as a library call: load the labelled cases, run them.

The bundled set (``arbiter/judges/data/gate_cases.jsonl``) is read unless a file is
given; each line is one :class:`~arbiter.judges.gate_bench.GateCase` object.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from arbiter.errors import InputError
from arbiter.judges.gate_bench import GateBenchReport, GateCase, bench_gate
from arbiter.validation import validate_document

__all__ = ["BUNDLED_CASES", "load_gate_cases", "run_gate_bench"]

BUNDLED_CASES = "gate_cases.jsonl"
"""The bundled case file's name, in ``arbiter.judges/data``."""
_MAX_FILE_CHARS = 50_000_000
"""Longest case file read."""


def load_gate_cases(path: Path | None = None) -> list[GateCase]:
    """The cases of a JSONL file (the bundled set when ``path`` is None).

    Raises:
        InputError: The file is missing, too large, or a line is not a valid case
            (named by file and line), or two cases share an id.
    """
    if path is None:
        where = f"bundled {BUNDLED_CASES}"
        text = files("arbiter.judges").joinpath("data", BUNDLED_CASES).read_text("utf-8")
    else:
        where = str(path)
        try:
            if path.stat().st_size > _MAX_FILE_CHARS:
                raise InputError(f"{where}: larger than {_MAX_FILE_CHARS:,} bytes")
            text = path.read_text("utf-8")
        except FileNotFoundError:
            raise InputError(f"{where}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{where}: cannot be read ({type(exc).__name__})") from None
    cases: list[GateCase] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}, line {number}: not JSON ({exc.msg})") from None
        case = validate_document(GateCase, document, where=f"{where}, line {number}")
        if case.id in seen:
            raise InputError(f"{where}, line {number}: id {case.id!r} appears twice")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise InputError(f"{where}: no cases")
    return cases


async def run_gate_bench(path: Path | None = None) -> GateBenchReport:
    """The benchmark of the cases in ``path`` (the bundled set when None).

    Raises:
        InputError: As :func:`load_gate_cases`.
    """
    return await bench_gate(load_gate_cases(path))
