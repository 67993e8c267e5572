"""Import ATIF trajectories: the Agent Trajectory Interchange Format of the Harbor project.

An ATIF file is one JSON object (``schema_version`` ``ATIF-v1.0`` to ``ATIF-v1.8``):
``session_id`` (and, from 1.7, ``trajectory_id``), the ``agent`` (``name``, ``version``,
``model_name``, ``tool_definitions``), ``steps`` and ``final_metrics``, and, from 1.7,
the sub-agents' own trajectories under ``subagent_trajectories``. A file of such objects,
one a line, reads too. Each step has a ``source`` (``system``, ``user`` or ``agent``) and
a ``message``; an agent step is one model turn, with its ``reasoning_content``, its
``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments``), the ``observation``
whose ``results`` answer them (``source_call_id``, ``content``,
``subagent_trajectory_ref``) and its ``metrics`` (tokens and cost).

An agent step becomes an ``llm_call`` step (the system and user messages before it are
its input) followed by a ``tool_call`` step per call, holding the result its
observation gives; an agent step of ``llm_call_count`` 0 (a dispatch made in code, 1.7)
gives only its tool calls. A message's parts other than text (images from 1.6, audio
from 1.8) are kept, their data unread. A result that delegates to a sub-agent embedded
in the file becomes a ``handoff`` step holding that sub-agent's trajectory; a sub-agent
the file only names (its ``trajectory_path``) is not read (a path in an untrusted file
is never opened) and its reference is kept. What has no field in a trajectory
(reasoning, the agent's version details and tool definitions, cached tokens, log
probabilities, notes, a step's ``is_copied_context``, ``final_metrics``, every
``extra``, and fields ATIF does not define) is kept in the trajectory's
``metadata["atif"]``, never dropped.

Repairs are warnings of the run: step ids out of sequence, a tool call id used twice,
a result answering no call, a timestamp that does not parse, fields ATIF does not
define. What cannot be read as ATIF (a step that is not an object, a ``function_name``
that is not a string, a token count past :data:`~arbiter.contract.trajectory.MAX_COUNT`)
is refused, naming ``file[:line]: field``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from pydantic import JsonValue

from arbiter.contract import Trajectory
from arbiter.contract.trajectory import MAX_COST_USD, MAX_COUNT, MAX_NAME_CHARS, MAX_TEXT_CHARS
from arbiter.datasets.jsonio import JsonInputError, json_type, parse_json, read_text
from arbiter.errors import InputError
from arbiter.trajectories.atif_steps import StepReader, join, shown
from arbiter.trajectories.formats import (
    MATCH,
    ImportedRun,
    ImportOptions,
    TrajectoryFormat,
    numbered_runs,
    record_runs,
)
from arbiter.validation import validate_document

__all__ = ["FORMAT", "KNOWN_VERSIONS", "TRAJECTORY_FORMAT", "load_atif", "parse_atif"]

FORMAT = "atif"
"""The ``source.format`` of the trajectories this importer makes."""

KNOWN_VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(9))
"""The published schema versions; a later 1.x reads as the latest, with a warning."""

_VERSION = re.compile(r"ATIF-v1\.(\d{1,4})")
_ROOT_KEYS = frozenset(
    {
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "notes",
        "final_metrics",
        "extra",
        "subagent_trajectories",
        "continued_trajectory_ref",
    }
)
_AGENT_KEYS = frozenset({"name", "version", "model_name", "extra", "tool_definitions"})


def load_atif(path: str | os.PathLike[str]) -> list[tuple[Trajectory, list[str]]]:
    """The trajectories of an ATIF file, each with the importer's repairs of it.

    Raises:
        InputError: The file cannot be read, is not JSON, or is not ATIF
            (``file[:line]: field: why``).
    """
    file = Path(path)
    return parse_atif(read_text(file, what="ATIF trajectory"), source=str(file))


def parse_atif(text: str, *, source: str) -> list[tuple[Trajectory, list[str]]]:
    """The trajectories of the text of an ATIF file: one document, or one a line.

    Args:
        text: The JSON text.
        source: Where it came from (a file name), for messages and ``source.file``.

    Raises:
        InputError: Invalid JSON, or a trajectory that is not ATIF.
    """
    located = list(_documents(text, source))
    return [
        _read(document, where=where, source=source, line=line) for line, where, document in located
    ]


def _documents(text: str, source: str) -> Iterator[tuple[int | None, str, Any]]:
    """``(line, where, document)``: the whole text's one document, else each line's."""
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    first_line_is_whole = False
    if len(lines) > 1:
        try:
            first_line_is_whole = isinstance(parse_json(lines[0][1], source=source), dict)
        except JsonInputError:
            first_line_is_whole = False
    if not first_line_is_whole:
        yield None, source, parse_json(text, source=source)
        return
    for number, line in lines:
        yield (
            number,
            f"{source}:{number}",
            parse_json(line.rstrip("\r"), source=source, line=number),
        )


def _read(
    document: Any, *, where: str, source: str, line: int | None
) -> tuple[Trajectory, list[str]]:
    reader = _Reader(where)
    built = reader.trajectory(document, at="", depth=0)
    built["source"] = {"format": FORMAT, "file": source[:MAX_NAME_CHARS], "line": line}
    reader.report_unknown()
    trajectory = validate_document(Trajectory, built, where=where)
    return trajectory, reader.warnings


class _Reader:
    """One ATIF document read into a trajectory document, sub-agents included."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.warnings: list[str] = []
        self._unknown: dict[str, set[str]] = {}  # level -> field names ATIF does not define
        self._zoned: tuple[str, bool] | None = None

    # ---------------------------------------------------------------- trajectory

    def trajectory(self, document: Any, *, at: str, depth: int) -> dict[str, Any]:
        here = at or "trajectory"
        if not isinstance(document, dict):
            self.fail(here, f"an ATIF trajectory must be an object, got {json_type(document)}")
        self._version(document.get("schema_version"), join(at, "schema_version"), root=not at)
        agent = self._agent(document.get("agent"), join(at, "agent"))
        steps = document.get("steps")
        if not isinstance(steps, list):
            self.fail(join(at, "steps"), f"must be a list, got {json_type(steps)}")
        subagents = self._subagents(document.get("subagent_trajectories"), at, depth)
        session_id = self._optional_text(document.get("session_id"), join(at, "session_id"))
        trajectory_id = self._optional_text(
            document.get("trajectory_id"), join(at, "trajectory_id")
        )
        builder = StepReader(self, at=at, model=agent["model"], subagents=subagents)
        for index, step in enumerate(steps):
            builder.add(step, index)
        for key, sub in subagents.items():
            if key not in builder.handed and id(sub) not in builder.handed_objects:
                builder.handed_objects.add(id(sub))
                self.warn(
                    join(at, "subagent_trajectories"),
                    f"sub-agent {key[:80]!r} is referenced by no step; its run is appended "
                    "as a hand-off at the end",
                )
                builder.steps.append(
                    {"kind": "handoff", "id": key[:MAX_NAME_CHARS], "trajectory": sub}
                )
        kept: dict[str, JsonValue] = {}
        for key in (
            "schema_version",
            "session_id",
            "trajectory_id",
            "notes",
            "final_metrics",
            "extra",
            "continued_trajectory_ref",
        ):
            if document.get(key) is not None:
                kept[key] = document[key]
        if agent["kept"]:
            kept["agent"] = agent["kept"]
        if builder.kept_steps:
            kept["steps"] = builder.kept_steps
        self._keep_unknown(
            document, _ROOT_KEYS, kept, "trajectory" if not at else "subagent trajectory"
        )
        times = [t for t in builder.times if t is not None]
        return {
            "id": trajectory_id or session_id,
            "conversation_id": session_id if trajectory_id else None,
            "agent": {
                "name": agent["name"],
                "version": agent["version"],
                "agent_class": "tool_enabled" if builder.calls_seen else "llm_only",
            },
            "steps": builder.steps,
            "final_answer": builder.final_answer,
            "status": builder.status(),
            "started_at": min(times) if times else None,
            "ended_at": max(times) if times else None,
            "metadata": {"atif": kept},
        }

    def _version(self, value: Any, at: str, *, root: bool) -> None:
        if value is None and not root:
            return  # an embedded sub-agent may leave its version to its parent's
        if not isinstance(value, str):
            self.fail(at, f"must be a string such as 'ATIF-v1.7', got {json_type(value)}")
        match = _VERSION.fullmatch(value)
        if match is None:
            self.fail(
                at,
                f"{value[:80]!r} is no ATIF version (expected ATIF-v1.0 to {KNOWN_VERSIONS[-1]})",
            )
        if int(match.group(1)) >= len(KNOWN_VERSIONS):
            self.warn(at, f"{value!r} is newer than {KNOWN_VERSIONS[-1]}; read as it")

    def _agent(self, value: Any, at: str) -> dict[str, Any]:
        if value is None:
            self.warn(at, "no agent is named")
            return {"name": None, "version": None, "model": None, "kept": {}}
        if not isinstance(value, dict):
            self.fail(at, f"must be an object, got {json_type(value)}")
        kept: dict[str, JsonValue] = {}
        for key in ("extra", "tool_definitions"):
            if value.get(key) is not None:
                kept[key] = value[key]
        self._keep_unknown(value, _AGENT_KEYS, kept, "agent")
        return {
            "name": self._optional_text(value.get("name"), f"{at}.name"),
            "version": self._optional_text(value.get("version"), f"{at}.version"),
            "model": self._optional_text(value.get("model_name"), f"{at}.model_name"),
            "kept": kept,
        }

    def _subagents(self, value: Any, at: str, depth: int) -> dict[str, dict[str, Any]]:
        """Embedded sub-agent trajectories, by each id a reference may use."""
        if value is None:
            return {}
        where = join(at, "subagent_trajectories")
        if not isinstance(value, list):
            self.fail(where, f"must be a list, got {json_type(value)}")
        found: dict[str, dict[str, Any]] = {}
        for index, sub in enumerate(value):
            sub_at = f"{where}[{index}]"
            built = self.trajectory(sub, at=sub_at, depth=depth + 1)
            keys = [sub.get("trajectory_id"), sub.get("session_id")]
            named = [k for k in keys if isinstance(k, str) and k]
            if not named:
                self.warn(
                    sub_at, "has neither trajectory_id nor session_id; no step can refer to it"
                )
                named = [sub_at]
            for key in named:
                if key in found:
                    self.warn(sub_at, f"id {key[:80]!r} is used again; references mean the first")
                else:
                    found[key] = built
        return found

    # ---------------------------------------------------------------- checks

    def text(self, value: Any, at: str, *, limit: int = MAX_TEXT_CHARS) -> str | None:
        """A text field (None when absent); refused past ``limit`` characters."""
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(at, f"must be a string, got {json_type(value)}")
        if len(value) > limit:
            self.fail(at, f"is {len(value)} characters long; at most {limit} are read")
        return value

    def _optional_text(self, value: Any, at: str) -> str | None:
        return self.text(value, at, limit=MAX_NAME_CHARS) or None

    def count(self, value: Any, at: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
            self.fail(at, f"must be a whole number from 0 to {MAX_COUNT}, got {shown(value)}")
        return value

    def cost(self, value: Any, at: str) -> float | None:
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_COST_USD
        ):
            self.fail(
                at,
                f"must be a number of US dollars from 0 to {MAX_COST_USD:g}, got {shown(value)}",
            )
        return float(value)

    def timestamp(self, value: Any, at: str) -> datetime | None:
        if value is None:
            return None
        moment = None
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                moment = None
        if moment is None:
            self.warn(at, f"{shown(value)} is no ISO 8601 time; the step is left untimed")
            return None
        zoned = moment.utcoffset() is not None
        if self._zoned is None:
            self._zoned = (at, zoned)
        elif zoned != self._zoned[1]:
            said = "has a time zone" if zoned else "has no time zone"
            other = "has none" if zoned else "has one"
            self.fail(
                at,
                f"{said} but {self._zoned[0]} {other}: a run's times are all zoned or all zoneless",
            )
        return moment

    def _keep_unknown(
        self, value: dict[str, Any], known: frozenset[str], kept: dict[str, JsonValue], level: str
    ) -> None:
        for key, item in value.items():
            if key not in known:
                kept.setdefault(key, item)
                self._unknown.setdefault(level, set()).add(key)

    def keep_unknown(
        self, value: dict[str, Any], known: frozenset[str], kept: dict[str, JsonValue], level: str
    ) -> None:
        self._keep_unknown(value, known, kept, level)

    def report_unknown(self) -> None:
        """One warning per level that had fields ATIF does not define."""
        for level, names in sorted(self._unknown.items()):
            shown = ", ".join(repr(n[:80]) for n in sorted(names)[:10])
            more = f" and {len(names) - 10} more" if len(names) > 10 else ""
            self.warnings.append(
                f"{self.where}: {level}: fields ATIF does not define, kept in metadata: "
                f"{shown}{more}"
            )

    def warn(self, at: str, what: str) -> None:
        self.warnings.append(f"{self.where}: {at}: {what}")

    def fail(self, at: str, why: str) -> NoReturn:
        raise InputError(f"{self.where}: {at}: {why}")


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return numbered_runs(load_atif(file), file, FORMAT)


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    trajectory = _read(record, where=options.source, source=options.source, line=None)
    return record_runs([trajectory], FORMAT, options.source)


def _resemblance(record: Any) -> float:
    """An object whose ``schema_version`` says ATIF; partly: ATIF's ``steps`` of
    ``step_id`` and ``source`` without a version."""
    if not isinstance(record, dict):
        return 0.0
    version = record.get("schema_version")
    if isinstance(version, str) and version.startswith("ATIF-"):
        return MATCH + 0.5
    steps = record.get("steps")
    first = steps[0] if isinstance(steps, list) and steps else None
    if isinstance(first, dict) and {"step_id", "source"} <= first.keys():
        return 0.75
    return 0.0


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="ATIF trajectories of Harbor / Terminal-Bench agents (`schema_version` "
    "`ATIF-v1.0` to `ATIF-v1.8`, `steps`, `subagent_trajectories`), one a file or one a line",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
)
"""The ``atif`` trajectory format."""
