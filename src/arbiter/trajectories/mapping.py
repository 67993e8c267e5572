"""Import platform-specific JSON turn records as trajectories, through a mapping of dotted paths.

A mapping is a TOML file naming where each field of a trajectory lives in a record:
``[trajectory]`` for the run's own fields, ``[steps]`` for the list of steps and, per
step kind, which steps are of that kind (``match``) and where their fields are. Paths are
dotted (``result.rows.0.id``; an integer indexes a list) and relative to the record, or,
for a step's fields, to the step; a path that is absent reads as no value. The mapping
of Uderia's REST turn record ships as ``arbiter/trajectories/data/uderia_turn.toml``
(load it by the name ``uderia_turn``) and is the worked example::

    [trajectory]
    id = "turn_id"
    final_answer = "final_summary_text"
    status = "status"
    status_values = { success = "completed", failed = "error" }
    cost_usd = "turn_cost"

    [steps]
    path = "execution_trace"

    [steps.tool_call]
    match = { type = "tool_call" }
    name = "action.tool_name"
    arguments = "action.arguments"

A step takes the first kind whose ``match`` holds (tool call, then LLM call, then
retrieval); a kind without ``match`` takes every step left; a step no kind takes is
skipped and counted in ``metadata["unmapped_steps"]``. A record that reports tokens or
cost only as turn totals (no mapped LLM call reports any) keeps them as one ``llm_call``
step summing the turn's model calls, so ``Trajectory.totals()`` and the cost scorers see
them; ``metadata["usage_from"]`` then says ``"turn totals"``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from arbiter.contract import Trajectory, TrajectoryStatus
from arbiter.datasets.jsonio import iter_json_lines, json_type, parse_json, read_text
from arbiter.errors import InputError, MissingField
from arbiter.systems.base import lookup_path
from arbiter.trajectories.formats import (
    ImportedRun,
    ImportOptions,
    TrajectoryFormat,
    numbered_runs,
    record_runs,
)
from arbiter.trajectories.mapping_schema import (
    BUILTIN_MAPPINGS,
    LlmCallPaths,
    RecordMapping,
    RetrievalPaths,
    StepPaths,
    StepsMapping,
    ToolCallPaths,
    TrajectoryPaths,
    load_mapping,
)
from arbiter.validation import describe_validation_error

__all__ = [
    "BUILTIN_MAPPINGS",
    "FORMAT",
    "TRAJECTORY_FORMAT",
    "RecordMapping",
    "load_mapped",
    "load_mapping",
    "map_record",
]

FORMAT = "mapping"
"""The ``source.format`` of the trajectories this importer makes."""


def load_mapped(
    path: str | os.PathLike[str], mapping: RecordMapping | str | os.PathLike[str]
) -> list[Trajectory]:
    """The trajectories of a file of records (a JSON object, a JSON array, or JSONL).

    Args:
        path: The records file.
        mapping: The mapping, or its file (or shipped name) for :func:`load_mapping`.

    Raises:
        InputError: The file cannot be read, or a record does not map
            (``file:line: path: why``).
    """
    if not isinstance(mapping, RecordMapping):
        mapping = load_mapping(mapping)
    file = Path(path)
    text = read_text(file, what="records file")
    return [
        map_record(record, mapping, where=f"{file}:{line}", source=str(file), line=line)
        for line, record in _records(text, source=str(file))
    ]


def map_record(
    record: Any,
    mapping: RecordMapping,
    *,
    where: str,
    source: str | None = None,
    line: int | None = None,
) -> Trajectory:
    """One parsed record as a trajectory, through ``mapping``.

    Args:
        record: The parsed JSON record.
        mapping: Where its fields are.
        where: Its location, for messages (``file:line``).
        source: The file it came from, for ``source.file``.
        line: Its line in that file, for ``source.line``.

    Raises:
        InputError: ``where: path: why`` naming the record path that did not map.
    """
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a record object, got {json_type(record)}")
    mapper = _Mapper(where)
    document = mapper.trajectory(record, mapping.trajectory)
    if mapping.steps is not None:
        mapper.steps(record, mapping.steps, document)
    mapper.totals(record, mapping.trajectory, document)
    document["source"] = {"format": FORMAT, "file": source, "line": line}
    if mapping.name is not None:
        document["metadata"]["mapping"] = mapping.name
    try:
        return Trajectory.model_validate(document)
    except ValidationError as exc:
        raise InputError(f"{where}: {mapper.explain(exc)}") from None


def _records(text: str, *, source: str) -> list[tuple[int, Any]]:
    """``(line, record)`` of JSONL, a JSON array (each item at its line) or one JSON object."""
    body = text.lstrip()
    if body.startswith("["):
        return _array_records(text, source)
    first = next((line for line in text.split("\n") if line.strip()), "")
    if body.startswith("{") and not _parses(first):  # one object over several lines
        return [(text.count("\n", 0, len(text) - len(body)) + 1, parse_json(text, source=source))]
    return list(iter_json_lines(text, source=source))


def _array_records(text: str, source: str) -> list[tuple[int, Any]]:
    records = parse_json(text, source=source)
    # parse_json validated the text; the decoder only finds where each item starts.
    decoder, index, line, counted = json.JSONDecoder(), text.index("[") + 1, 1, 0
    located: list[tuple[int, Any]] = []
    for record in records:
        while text[index] in " \t\r\n,":
            index += 1
        line += text.count("\n", counted, index)
        counted = index
        _, index = decoder.raw_decode(text, index)
        located.append((line, record))
    return located


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


Location = tuple[str | int, ...]


class _Mapper:
    """Reads one record, remembering which record path each document field came from."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.origins: dict[Location, str] = {}
        self._prefix = ""  # the record path of the step being read

    def get(self, value: Any, path: str | None, at: Location | None = None) -> Any:
        """The value at ``path`` (None when absent), noting it as the origin of ``at``."""
        if path is None:
            return None
        try:
            found = lookup_path(value, path)
        except MissingField:
            return None
        if at is not None:
            self.origins[at] = self._prefix + path
        return found

    def fail(self, path: str, why: str) -> NoReturn:
        raise InputError(f"{self.where}: {self._prefix}{path}: {why}")

    def trajectory(self, record: dict[str, Any], paths: TrajectoryPaths) -> dict[str, Any]:
        document: dict[str, Any] = {"steps": [], "metadata": {}}
        for key in ("id", "conversation_id", "final_answer", "error", "started_at", "ended_at"):
            document[key] = self.get(record, getattr(paths, key), (key,))
        agent = {
            key: self.get(record, getattr(paths.agent, key), ("agent", key))
            for key in ("name", "version", "agent_class")
        }
        agent["agent_class"] = agent["agent_class"] or paths.agent.default_class
        document["agent"] = agent
        if paths.status is not None:
            document["status"] = self.status(record, paths.status, paths.status_values)
        for key, path in paths.metadata.items():
            value = self.get(record, path, ("metadata", key))
            if value is not None:
                document["metadata"][key] = value
        return document

    def status(
        self, record: dict[str, Any], path: str, values: dict[str, TrajectoryStatus]
    ) -> TrajectoryStatus:
        raw = self.get(record, path)
        if raw is None:
            return "unknown"
        key = raw if isinstance(raw, str) else json.dumps(raw)
        if key in values:
            return values[key]
        if key in _STATUSES:
            return _STATUSES[key]
        self.fail(path, f"{key[:80]!r} is not a trajectory status; map it in status_values")

    def steps(self, record: dict[str, Any], paths: StepsMapping, document: dict[str, Any]) -> None:
        items = self.get(record, paths.path)
        items = [] if items is None else items
        if not isinstance(items, list):
            self.fail(paths.path, f"must be a list, got {json_type(items)}")
        kinds = [k for k in (paths.tool_call, paths.llm_call, paths.retrieval) if k is not None]
        unmapped = 0
        for index, item in enumerate(items):
            self._prefix = f"{paths.path}.{index}."
            kind = next((k for k in kinds if _matches(item, k)), None)
            if kind is None:
                unmapped += 1
            else:
                document["steps"].append(self._step(item, kind, ("steps", len(document["steps"]))))
        self._prefix = ""
        if unmapped:
            document["metadata"]["unmapped_steps"] = unmapped

    def _step(self, item: dict[str, Any], kind: StepPaths, at: Location) -> dict[str, Any]:
        step = {
            key: self.get(item, getattr(kind, key), (*at, key))
            for key in ("id", "started_at", "ended_at", "duration_ms")
        }
        if isinstance(kind, ToolCallPaths):
            step["kind"] = "tool_call"
            for key in ("name", "call_id", "arguments", "result"):
                step[key] = self.get(item, getattr(kind, key), (*at, key))
            if step["name"] is None:
                self.fail(kind.name, "a tool call needs a name; the path is absent")
            step["error"] = _error_text(self.get(item, kind.error, (*at, "error")))
        elif isinstance(kind, LlmCallPaths):
            step["kind"] = "llm_call"
            for key in ("model", "input_tokens", "output_tokens", "cost_usd"):
                step[key] = self.get(item, getattr(kind, key), (*at, key))
            step["error"] = _error_text(self.get(item, kind.error, (*at, "error")))
            output = self.get(item, kind.output, (*at, "output_messages"))
            if output is not None:
                step["output_messages"] = [{"role": "assistant", "content": output}]
        elif isinstance(kind, RetrievalPaths):
            step["kind"] = "retrieval"
            step["query"] = self.get(item, kind.query, (*at, "query"))
            step["chunks"] = self._chunks(item, kind, at)
        return step

    def _chunks(self, item: dict[str, Any], kind: RetrievalPaths, at: Location) -> list[Any]:
        chunks = self.get(item, kind.chunks, (*at, "chunks"))
        if chunks is None or kind.chunks is None:
            return []
        if not isinstance(chunks, list):
            self.fail(kind.chunks, f"must be a list, got {json_type(chunks)}")
        step_prefix, paths, mapped = self._prefix, kind.chunk, []
        for index, chunk in enumerate(chunks):
            self._prefix = f"{step_prefix}{kind.chunks}.{index}."
            fields = ("source", "text", "similarity")
            where = (*at, "chunks", index)
            mapped.append({k: self.get(chunk, getattr(paths, k), (*where, k)) for k in fields})
        self._prefix = step_prefix
        return mapped

    def totals(
        self, record: dict[str, Any], paths: TrajectoryPaths, document: dict[str, Any]
    ) -> None:
        """The turn's reported usage as one LLM call, when no mapped LLM call reports any."""
        steps: list[dict[str, Any]] = document["steps"]
        usage = ("input_tokens", "output_tokens", "cost_usd")
        if any(s.get(k) is not None for s in steps if s["kind"] == "llm_call" for k in usage):
            return
        at: Location = ("steps", len(steps))
        totals = {k: self.get(record, getattr(paths, k), (*at, k)) for k in usage}
        if all(value is None for value in totals.values()):
            return
        model = self.get(record, paths.model, (*at, "model"))
        steps.append({"kind": "llm_call", "model": model, **totals})
        document["metadata"]["usage_from"] = "turn totals"

    def explain(self, exc: ValidationError) -> str:
        """A validation error of the document, led by the record path that failed."""
        raw = tuple(exc.errors(include_url=False)[0]["loc"])
        # pydantic puts a step's kind (its union tag) after its index: not a document field
        loc: Location = tuple(
            part
            for i, part in enumerate(raw)
            if not (part in _STEP_KINDS and i >= 2 and raw[i - 2] == "steps")
        )
        reason = describe_validation_error(exc, Trajectory)
        # A rule over several fields (times that cannot be ordered) is raised where they
        # meet; the time it names is the field the record got wrong.
        named = _TIME_NAMED.search(str(exc.errors(include_url=False)[0].get("msg", "")))
        if named is not None:
            steps = [("steps", int(i)) for i in re.findall(r"steps\[(\d+)\]", named[1] or "")]
            time_loc: Location = (*[p for pair in steps for p in pair], named[2])
            if not steps and loc:
                time_loc = (*loc, named[2])
            if time_loc in self.origins:
                return f"{self.origins[time_loc]}: {reason}"
        while loc:
            origin = self.origins.get(loc)
            if origin is not None:
                return f"{origin}: {reason}"
            loc = loc[:-1]
        return reason


_STEP_KINDS = frozenset({"tool_call", "llm_call", "retrieval", "handoff"})
_TIME_NAMED = re.compile(r"((?:steps\[\d+\]\.)*)(started_at|ended_at)")
_STATUSES: dict[str, TrajectoryStatus] = {
    "completed": "completed",
    "error": "error",
    "cancelled": "cancelled",
    "incomplete": "incomplete",
    "unknown": "unknown",
}


def _matches(item: Any, kind: StepPaths) -> bool:
    if not isinstance(item, dict):
        return False
    for path, expected in kind.match.items():
        try:
            found = lookup_path(item, path)
        except MissingField:
            return False
        # True must not match 1, though Python holds them equal.
        if isinstance(found, bool) or isinstance(expected, bool):
            if found is not expected:
                return False
        elif found != expected:
            return False
    return True


def _error_text(value: Any) -> str | None:
    """A step's error as text: a message, ``true`` (failed), or an object kept as JSON."""
    if value is None or value is False or value == "":
        return None
    if value is True:
        return "the step reported an error"
    return value if isinstance(value, str) else json.dumps(value)


def _mapping_of(options: ImportOptions) -> RecordMapping:
    if options.mapping is None:
        raise InputError(
            "the mapping format needs a mapping (--mapping FILE, or a submission's 'mapping')"
        )
    return options.mapping


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return numbered_runs(load_mapped(file, _mapping_of(options)), file, FORMAT)


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    trajectory = map_record(record, _mapping_of(options), where=options.source)
    return record_runs([trajectory], FORMAT, options.source)


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="your platform's own JSON records, through a mapping of dotted paths "
    "(`--mapping FILE`)",
    read_file=_read_file,
    read_record=_read_record,
)
"""The ``mapping`` trajectory format (never guessed: it needs a mapping)."""
