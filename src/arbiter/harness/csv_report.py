"""The per-example table of a run as CSV, safe to open in a spreadsheet.

One row per (example, repetition) pair: ``example_id``, ``repetition``, ``cohort``,
``expected``, ``output_label``, ``output_text``, ``outcome`` (passed, failed, unknown,
error), ``error``, then three columns per scorer, ``NAME:verdict`` (pass, fail,
abstain, error; empty when the call failed), ``NAME:value`` and ``NAME:explanation``.

Every text cell is untrusted. Control characters are written as visible escapes
(``\\x1b``; newlines and tabs are kept), a cell is cut at 32,000 characters (a
spreadsheet cell holds 32,767), and a cell whose text starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return (after any spaces) gets a leading apostrophe, so a
spreadsheet shows it as text instead of evaluating it as a formula (CSV injection).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Sequence

from arbiter import escape
from arbiter.contract import Example, PairResult, Report
from arbiter.harness.pairs import pair_rows, reason_of, verdict_of

__all__ = ["FIXED_COLUMNS", "neutralise_formula", "report_csv"]

FIXED_COLUMNS = (
    "example_id",
    "repetition",
    "cohort",
    "expected",
    "output_label",
    "output_text",
    "outcome",
    "error",
)
"""The columns before the scorers' own."""

_MAX_CELL = 32_000
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(text: str) -> str:
    """``text`` with a leading apostrophe when a spreadsheet would read it as a formula.

    Examples:
        >>> neutralise_formula("=cmd|' /C calc'!A0")
        "'=cmd|' /C calc'!A0"
        >>> neutralise_formula("plain")
        'plain'
    """
    if text.lstrip(" ").startswith(_FORMULA_START):
        return "'" + text
    return text


def _cell(value: object) -> str:
    if value is None:
        return ""
    return neutralise_formula(escape.terminal(value, limit=_MAX_CELL))


def report_csv(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    only: Collection[str] | None = None,
) -> str:
    """The per-example table as CSV (RFC 4180, UTF-8, a header row first).

    Args:
        report: The run's report (its scorers name the columns).
        examples: The examples in scope, in dataset order.
        results: The run's pair results.
        only: Example ids to keep (e.g. the failures); None: every example.
    """
    names = [spec.label for spec in report.scorers]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([*FIXED_COLUMNS, *(_cell(f"{n}:{part}") for n in names for part in _PARTS)])
    for row in pair_rows(examples, results):
        if only is not None and row.example_id not in only:
            continue
        cells = [
            _cell(row.example_id),
            str(row.repetition),
            _cell(row.cohort),
            _cell(row.expected),
            _cell(row.output_label),
            _cell(row.output_text),
            row.outcome,
            _cell(row.error),
        ]
        for name in names:
            score = row.score(name)
            if score is None:
                cells += ["", "", ""]
                continue
            cells += [
                verdict_of(score),
                "" if score.value is None else repr(score.value),
                _cell(reason_of(score)),
            ]
        writer.writerow(cells)
    return buffer.getvalue()


_PARTS = ("verdict", "value", "explanation")
