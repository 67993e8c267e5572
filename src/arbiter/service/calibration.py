"""Judge calibration as library functions: from a file of paired labels, or from the store.

A file is any JSONL or CSV with one row per (item, judge label, human label): a
benchmark that ships its judges' predictions beside human labels is calibrated without
calling a model. Which columns hold what is named by the caller; a row that lacks one
or holds something that is not a label is an :class:`~arbiter.errors.InputError`
naming its file and line.

Labels are read as text; ``true`` / ``false`` read as ``pass`` / ``fail``; an empty
cell, ``null``, ``unknown`` or ``abstain`` is an abstention (left out, counted).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.jsonio import iter_json_lines, parse_scalar, read_text
from arbiter.errors import InputError
from arbiter.judges.calibration import (
    CalibrationReport,
    LabelPair,
    calibrate,
    pairs_from_annotations,
)
from arbiter.store import Store
from arbiter.store.annotations_repository import latest_annotations

__all__ = ["PairColumns", "calibrate_file", "calibrate_store", "read_label_pairs"]

_ABSTAIN = frozenset({"", "unknown", "abstain", "abstained", "n/a"})
_MAX_LABEL = 200
_MAX_ROWS = 10_000_000


@dataclass(frozen=True)
class PairColumns:
    """Which column of a pairs file holds what.

    Only ``judge_label`` and ``human_label`` must be present in every row; the judge's
    name defaults to the judge column's name, the dimension to "" (one group), the item
    to the row's line and the annotator to "" (one human). A name column that is also
    one of the two label columns is not read as a name (``judge_label="judge"`` makes
    the column ``judge`` the judge's label, not its name).
    """

    judge_label: str = "judge_label"
    human_label: str = "human_label"
    by: str = "dimension"
    judge: str = "judge"
    item: str = "id"
    annotator: str = "annotator"

    def name_column(self, column: str) -> str | None:
        """``column`` when it may be read as a name; None when it holds a label."""
        return None if column in (self.judge_label, self.human_label) else column


def _kind(value: Any) -> str:
    return "an object" if isinstance(value, dict) else "an array"


def _label(value: Any, column: str, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        raise InputError(
            f"{where}: {column!r} must be a label (text, boolean or number), got {_kind(value)}"
        )
    text = value.strip()
    if len(text) > _MAX_LABEL:
        raise InputError(
            f"{where}: {column!r} is {len(text)} characters; a label is at most {_MAX_LABEL}"
        )
    return None if text.lower() in _ABSTAIN else text


def _name(row: Mapping[str, Any], column: str | None, default: str, where: str) -> str:
    if column is None:
        return default
    value = row.get(column)
    if value is None:
        return default
    if isinstance(value, dict | list):
        raise InputError(f"{where}: {column!r} must be text, got {_kind(value)}")
    text = str(value).strip()
    if len(text) > _MAX_LABEL:
        raise InputError(f"{where}: {column!r} is {len(text)} characters; at most {_MAX_LABEL}")
    return text or default


def _pair(row: Any, columns: PairColumns, where: str, line: int) -> LabelPair:
    if not isinstance(row, dict):
        raise InputError(
            f"{where}: expected an object with {columns.judge_label!r} and {columns.human_label!r}"
        )
    for column in (columns.judge_label, columns.human_label):
        if column not in row:
            present = ", ".join(sorted(map(repr, row))[:8]) or "none"
            raise InputError(f"{where}: no {column!r} column (columns: {present})")
    return LabelPair(
        judge_label=_label(row[columns.judge_label], columns.judge_label, where),
        human_label=_label(row[columns.human_label], columns.human_label, where),
        judge=_name(row, columns.name_column(columns.judge), columns.judge_label, where),
        dimension=_name(row, columns.name_column(columns.by), "", where),
        item_id=_name(row, columns.name_column(columns.item), f"line {line}", where),
        annotator=_name(row, columns.name_column(columns.annotator), "", where),
    )


def _csv_rows(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(f"{source}: empty file; expected a header row")
        header = [cell.strip() for cell in header]
        start = reader.line_num + 1
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) != len(header):
                    counts = f"{len(row)} cells but the header has {len(header)} columns"
                    raise InputError(f"{source}:{start}: row has {counts}")
                yield (
                    start,
                    {
                        k: parse_scalar(v) if v.strip() else None
                        for k, v in zip(header, row, strict=True)
                    },
                )
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"{source}:{start}: malformed CSV: {exc}") from None


def read_label_pairs(path: str | Path, columns: PairColumns | None = None) -> list[LabelPair]:
    """The label pairs of a ``.jsonl`` or ``.csv`` file.

    Raises:
        InputError: The file is unreadable, of another kind, or a row is not a pair
            (the message names the file and line).
    """
    columns = columns or PairColumns()
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise InputError(f"{file}: a pairs file is .jsonl or .csv, not {suffix or 'extensionless'}")
    text = read_text(file, what="pairs file")
    rows = (
        _csv_rows(text, str(file)) if suffix == ".csv" else iter_json_lines(text, source=str(file))
    )
    pairs: list[LabelPair] = []
    for line, row in rows:
        if len(pairs) >= _MAX_ROWS:
            raise InputError(f"{file}:{line}: more than {_MAX_ROWS:,} pairs")
        pairs.append(_pair(row, columns, f"{file}:{line}", line))
    if not pairs:
        raise InputError(f"{file}: no pairs")
    return pairs


def calibrate_file(
    path: str | Path,
    columns: PairColumns | None = None,
    *,
    positive: str = "fail",
    seed: int = 0,
    n_resamples: int = 2000,
) -> CalibrationReport:
    """Calibrate the judges of a pairs file (see :func:`read_label_pairs`)."""
    pairs = read_label_pairs(path, columns)
    return calibrate(pairs, positive=positive, seed=seed, n_resamples=n_resamples)


def calibrate_store(
    store: Store,
    *,
    dimension: str | None = None,
    judge: str | None = None,
    include_propagated: bool = False,
    include_votes: bool = True,
    seed: int = 0,
    n_resamples: int = 2000,
) -> CalibrationReport:
    """Calibrate the judges the stored annotations label (the latest per annotator), and,
    with ``include_votes``, the people's votes on stored runs: against each run's verdict
    (judge ``run_verdict``) and each judge's ruling on it
    (:func:`~arbiter.service.vote_pairs.vote_pairs`).

    Notes and, unless asked for, propagated labels are left out and counted in the
    report's ``excluded``.
    """
    annotations = latest_annotations(store, dimension=dimension, judge=judge)
    pairs, excluded = pairs_from_annotations(annotations, include_propagated=include_propagated)
    if include_votes:
        from arbiter.service.vote_pairs import with_vote_pairs

        pairs = with_vote_pairs(pairs, store, judge=judge, dimension=dimension)
    return calibrate(pairs, seed=seed, n_resamples=n_resamples, excluded=excluded)
