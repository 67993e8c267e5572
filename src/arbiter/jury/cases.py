"""Load cases for the jury from JSONL files, all-or-nothing.

One :class:`~arbiter.contract.Case` object per line; blank lines are skipped. A case
without an ``id`` gets ``"{stem}-{n}"`` (the file's stem and the case's 1-based
position among the file's cases). Ids must be unique within the file, and at most
:data:`~arbiter.datasets.loader.MAX_ID_CHARS` characters long (the store keeps no
longer one). No key or text may hold a NUL character (U+0000), raw or escaped: the
dataset loader refuses it too, since PostgreSQL text cannot hold one.

Every failure raises :class:`~arbiter.errors.InputError` with one line naming the
file and, where known, the line and field, the way :mod:`arbiter.datasets.loader`
does for datasets.
"""

from __future__ import annotations

import os
import tempfile
from importlib.resources import files
from pathlib import Path

from pydantic import ValidationError

from arbiter.contract import Case
from arbiter.datasets.jsonio import iter_json_lines, json_type, read_text
from arbiter.datasets.loader import MAX_ID_CHARS, may_hold_nul, nul_field
from arbiter.errors import InputError
from arbiter.validation import describe_validation_error

__all__ = ["bundled_cases_path", "load_cases"]

_BUNDLED = "cases.jsonl"


def bundled_cases_path() -> Path:
    """Path of the hand-labelled cases shipped with Arbiter (``arbiter/jury/data``).

    Returns:
        A readable file path. For an ordinary install it is the file inside the
        package; should the package be imported from a zip archive, the file is first
        copied to the temporary directory.
    """
    resource = files("arbiter.jury").joinpath("data").joinpath(_BUNDLED)
    if isinstance(resource, Path):
        return resource
    copy = Path(tempfile.gettempdir()) / "arbiter-jury" / _BUNDLED
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(resource.read_bytes())
    return copy


def load_cases(path: str | os.PathLike[str]) -> list[Case]:
    """Read and validate every case of a JSONL file.

    Args:
        path: A JSONL file, one case object per line.

    Returns:
        The cases, in file order.

    Raises:
        InputError: The file is missing, a directory, not UTF-8, empty, or a line is
            not JSON, not a valid case, holds a NUL, has an id longer than the store
            keeps, or repeats an earlier id.

    Examples:
        >>> cases = load_cases(bundled_cases_path())
        >>> cases[0].id
        'clean_01'
    """
    file = Path(path)
    text = read_text(file, what="case file")
    cases: list[Case] = []
    first_seen: dict[str, int] = {}
    check_nul = may_hold_nul(text)
    for number, item in iter_json_lines(text, source=str(file)):
        if not isinstance(item, dict):
            raise InputError(
                f"{file}:{number}: a case must be a JSON object, got {json_type(item)}"
            )
        if check_nul and (field := nul_field(item)) is not None:
            raise InputError(
                f"{file}:{number}: field {field!r}: must not contain a NUL character (U+0000)"
            )
        if item.get("id") is None:
            item = {**item, "id": f"{file.stem}-{len(cases) + 1}"}
        try:
            case = Case.model_validate(item)
        except ValidationError as exc:
            raise InputError(f"{file}:{number}: {describe_validation_error(exc, Case)}") from None
        if len(case.id) > MAX_ID_CHARS:
            raise InputError(
                f"{file}:{number}: field 'id': {len(case.id):,} characters, more than the "
                f"{MAX_ID_CHARS} the store keeps"
            )
        if case.id in first_seen:
            raise InputError(
                f"{file}:{number}: field 'id': duplicate id {case.id!r} "
                f"(first used at line {first_seen[case.id]})"
            )
        first_seen[case.id] = number
        cases.append(case)
    if not cases:
        raise InputError(f"{file}: no cases (a case file needs at least one JSON line)")
    return cases
