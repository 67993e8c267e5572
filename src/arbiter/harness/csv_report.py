"""The per-example table of a run as CSV, safe to open in a spreadsheet.

One row per (example, repetition) pair, so a run of 200 examples with ``k=3`` has 600
rows after the header: ``example_id``, ``repetition``, ``cohort``, ``expected``,
``output_label``, ``output_text``, ``outcome`` (passed, failed, unknown, error),
``error``, then four columns per scorer of the run, in its order: ``NAME:verdict``
(pass, fail, abstain, error; empty when the call failed), ``NAME:value``,
``NAME:explanation`` (its error when it raised) and ``NAME:evidence`` (one quote a line:
``“quote” verified|not found|unchecked — note``).

Every text cell is untrusted. Control characters are written as visible escapes
(``\\x1b``; newlines and tabs are kept), a cell is cut at 32,000 characters (a
spreadsheet cell holds 32,767), and a cell whose text starts with ``=``, ``+``, ``-``,
``@`` or a tab (after any spaces) gets a leading apostrophe, so a spreadsheet shows it
as text instead of evaluating it as a formula (CSV injection; a carriage return, the
other character OWASP lists, is already written as ``\x0d``).
Numbers (``repetition``, ``NAME:value``) are written as numbers and left alone.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from arbiter import escape
from arbiter.contract import Evidence, Example, PairResult, Report
from arbiter.harness.pairs import pair_rows, reason_of, select_rows, verdict_of

__all__ = ["FIXED_COLUMNS", "SCORER_COLUMNS", "neutralise_formula", "report_csv"]

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

SCORER_COLUMNS = ("verdict", "value", "explanation", "evidence")
"""The columns of each scorer, named ``NAME:PART``."""

MAX_CELL = 32_000
"""Longest cell written, in characters (after escaping)."""

_MAX_QUOTES = 10
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP's list)."""
_CHECKED = {True: "verified", False: "not found", None: "unchecked"}


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


def _cell(value: str | None) -> str:
    if value is None:
        return ""
    # Escaping can lengthen a text (one control character becomes four), so cut again.
    shown = escape.clip(escape.terminal(value, limit=MAX_CELL), MAX_CELL)
    return neutralise_formula(shown)


def _evidence(evidence: Sequence[Evidence]) -> str:
    lines = []
    for e in evidence[:_MAX_QUOTES]:
        note = f" — {e.note}" if e.note else ""
        lines.append(f"“{escape.clip(e.quote, 2_000)}” {_CHECKED[e.verified]}{note}")
    if len(evidence) > _MAX_QUOTES:
        lines.append(f"… {len(evidence) - _MAX_QUOTES} more")
    return "\n".join(lines)


def report_csv(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    only: Sequence[str] | None = None,
) -> str:
    """The per-example table as CSV (RFC 4180, UTF-8, a header row first).

    Args:
        report: The run's report (its scorers name the columns).
        examples: The examples in scope, in dataset order.
        results: The run's pair results.
        only: Example ids to keep, in the order given (e.g. the failures, worst first);
            None: every example, in dataset order.
    """
    names = [spec.label for spec in report.scorers]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    header = [*FIXED_COLUMNS, *(f"{n}:{part}" for n in names for part in SCORER_COLUMNS)]
    writer.writerow([_cell(name) for name in header])
    for row in select_rows(pair_rows(examples, results), only):
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
                cells += [""] * len(SCORER_COLUMNS)
                continue
            cells += [
                verdict_of(score),
                "" if score.value is None else repr(score.value),
                _cell(reason_of(score)),
                _cell(_evidence(score.evidence)),
            ]
        writer.writerow(cells)
    return buffer.getvalue()
