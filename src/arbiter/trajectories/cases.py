"""Agent case files: JSONL, one :class:`~arbiter.contract.AgentCase` a line.

Read with the one JSON reader (:mod:`arbiter.datasets.jsonio`), so a case file fails as
a dataset does: ``file:line: field 'input.query': why`` for a bad line, a repeated id
named with the line that used it first. :func:`cases_dataset` turns the cases into the
dataset the offline harness runs (k repetitions, resume, the store, the gate, the diff).

::

    cases = load_cases("golden.jsonl")
    report = await run_eval_async(system, cases_dataset(cases, "golden"), k=3, ...)
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from pydantic import ValidationError

from arbiter.contract import AgentCase, Dataset
from arbiter.datasets.jsonio import iter_json_lines, json_type, read_text
from arbiter.errors import InputError
from arbiter.trajectories.bands import check_cut_points
from arbiter.validation import describe_validation_error

__all__ = ["cases_dataset", "load_cases", "parse_cases"]


def load_cases(
    path: str | os.PathLike[str], *, agent_classes: Collection[str] | None = None
) -> list[AgentCase]:
    """Every case of a JSONL case file, in file order.

    Args:
        path: The file, one case object a non-blank line.
        agent_classes: The agent classes a case may name; None: the defaults
            (:data:`~arbiter.contract.DEFAULT_AGENT_CLASSES`).

    Raises:
        InputError: The file cannot be read or holds no case, or a line is not JSON,
            not a valid case, or repeats an earlier id (``file:line: why``).
    """
    file = Path(path)
    text = read_text(file, what="case file")
    return parse_cases(text, source=str(file), agent_classes=agent_classes)


def parse_cases(
    text: str, *, source: str, agent_classes: Collection[str] | None = None
) -> list[AgentCase]:
    """The cases of JSONL text (see :func:`load_cases`).

    Args:
        text: The JSONL text.
        source: Where it came from, for messages.
        agent_classes: The agent classes a case may name; None: the defaults.

    Raises:
        InputError: As :func:`load_cases`.
    """
    context = {"agent_classes": frozenset(agent_classes)} if agent_classes is not None else None
    cases: list[AgentCase] = []
    first_seen: dict[str, int] = {}
    for number, item in iter_json_lines(text, source=source):
        where = f"{source}:{number}"
        if not isinstance(item, dict):
            raise InputError(f"{where}: a case must be a JSON object, got {json_type(item)}")
        try:
            case = AgentCase.model_validate(item, context=context)
        except ValidationError as exc:
            raise InputError(f"{where}: {describe_validation_error(exc, AgentCase)}") from None
        if case.id in first_seen:
            raise InputError(
                f"{where}: field 'id': duplicate id {case.id!r} "
                f"(first used at line {first_seen[case.id]})"
            )
        check_cut_points(case.assertions, where=where)
        first_seen[case.id] = number
        cases.append(case)
    if not cases:
        raise InputError(f"{source}: no cases (a case file needs at least one JSON line)")
    return cases


def cases_dataset(cases: Sequence[AgentCase], name: str = "cases") -> Dataset:
    """The dataset the harness runs: one example per case (:meth:`AgentCase.to_example`).

    Raises:
        InputError: There is no case, or two share an id.
    """
    try:
        return Dataset(name=name, examples=[case.to_example() for case in cases])
    except ValidationError as exc:
        raise InputError(f"agent cases: {describe_validation_error(exc, Dataset)}") from None
