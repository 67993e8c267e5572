"""Red-team corpora: JSONL files of cases, read and checked, and the shipped ones.

A corpus is one ``.jsonl`` file, or a folder whose ``.jsonl`` files are read in name
order; each line is a :class:`~arbiter.contract.safety.RedTeamCase`. The shipped corpus
(``data/attacks.jsonl`` and ``data/benign.jsonl``) is what the self-test runs by
default; ``data/heldout/`` is a second corpus, committed before the detectors were
tuned, that measures them on cases they were not tuned on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from arbiter.contract.safety import RedTeamCase
from arbiter.datasets.jsonio import iter_json_lines, read_text
from arbiter.errors import InputError
from arbiter.validation import validate_document

__all__ = [
    "MAX_CASES",
    "check_unique",
    "corpus_hash",
    "heldout_corpus",
    "load_corpus",
    "read_cases",
    "shipped_corpus",
]

MAX_CASES = 10_000
"""Most cases one corpus may hold."""


def read_cases(text: str, *, source: str) -> list[RedTeamCase]:
    """The cases of one JSONL text.

    Raises:
        InputError: A line is not JSON or not a case (``source:line: field ...``), two
            cases share an id, or there are more than :data:`MAX_CASES`.
    """
    cases: list[RedTeamCase] = []
    for line, document in iter_json_lines(text, source=source):
        if len(cases) >= MAX_CASES:
            raise InputError(f"{source}:{line}: more than {MAX_CASES} cases in one corpus")
        cases.append(validate_document(RedTeamCase, document, where=f"{source}:{line}"))
    return cases


def check_unique(cases: Sequence[RedTeamCase], source: str) -> None:
    """Refuse two cases with one id.

    Raises:
        InputError: ``source: case id 'x' appears twice``.
    """
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise InputError(f"{source}: case id {case.id!r} appears twice")
        seen.add(case.id)


def load_corpus(path: str | os.PathLike[str]) -> list[RedTeamCase]:
    """Read a corpus: a ``.jsonl`` file, or every ``.jsonl`` file of a folder by name.

    Raises:
        InputError: Missing, empty, unreadable or invalid (the message names the file,
            the line and the field).
    """
    location = Path(path)
    files = sorted(location.glob("*.jsonl")) if location.is_dir() else [location]
    if location.is_dir() and not files:
        raise InputError(f"{location}: no .jsonl file in this folder")
    cases: list[RedTeamCase] = []
    for file in files:
        cases.extend(read_cases(read_text(file, what="red-team corpus"), source=str(file)))
        if len(cases) > MAX_CASES:
            raise InputError(f"{location}: more than {MAX_CASES} cases in one corpus")
    if not cases:
        raise InputError(f"{location}: the corpus has no cases")
    check_unique(cases, str(location))
    return cases


def _packaged(folder: str) -> list[RedTeamCase]:
    root = resources.files("arbiter.safety").joinpath("data")
    if folder:
        root = root.joinpath(folder)
    cases: list[RedTeamCase] = []
    for name in ("attacks.jsonl", "benign.jsonl"):
        entry = root.joinpath(name)
        cases.extend(read_cases(entry.read_text("utf-8"), source=f"{folder or 'shipped'}/{name}"))
    check_unique(cases, folder or "shipped")
    return cases


def shipped_corpus() -> list[RedTeamCase]:
    """The corpus the self-test runs by default (``data/attacks.jsonl``, ``data/benign.jsonl``)."""
    return _packaged("")


def heldout_corpus() -> list[RedTeamCase]:
    """The held-out corpus (``data/heldout/``), committed before the detectors were tuned."""
    return _packaged("heldout")


def corpus_hash(cases: Sequence[RedTeamCase]) -> str:
    """sha256 of the cases as canonical JSON, in order."""
    canonical = json.dumps(
        [case.model_dump(mode="json") for case in cases],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
