"""Trajectory formats by name: the one list the loader, the CLI, the server and the docs read.

A *format* (``otlp``, ``tau_bench``, or a plugin's) is one :class:`TrajectoryFormat`: its
name (the value of ``--format`` and of a submission's ``format``), a one-line summary (the
docs' formats table), how a file of it is read, and, optionally, how a parsed record of it
is read (what ``POST /v1/trajectories`` accepts), how much a parsed first record resembles
it (how a file's format is told), and how spans are read (what ``POST /v1/traces`` uses).

Adding a format is one module holding its ``TrajectoryFormat`` plus its registration: a
built-in's line in :data:`BUILTIN_FORMATS`, or, for a third party, an entry point in the
group ``arbiter.trajectory_formats`` naming a zero-argument factory of it (the format's
class, or a function)::

    [project.entry-points."arbiter.trajectory_formats"]
    my_format = "my_package.my_format:make_format"

The registry is an object made where it is needed (:meth:`TrajectoryFormatRegistry.default`),
never a table filled at import; a format's module is imported only when the format is
used (telling a file's format uses them all), and a plugin never replaces a built-in.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from arbiter.errors import InputError
from arbiter.plugins import Registry

if TYPE_CHECKING:
    from arbiter.contract import FlowRun, Score, Trajectory
    from arbiter.trajectories.mapping_schema import RecordMapping
    from arbiter.trajectories.spans import LogRecord, Span

__all__ = [
    "BUILTIN_FORMATS",
    "ENTRY_POINT_GROUP",
    "FORMATS",
    "MATCH",
    "ImportOptions",
    "ImportedRun",
    "SpanReading",
    "TrajectoryFormat",
    "TrajectoryFormatRegistry",
    "numbered_runs",
    "record_runs",
]

ENTRY_POINT_GROUP = "arbiter.trajectory_formats"
"""Entry-point group of third-party formats: ``name = "package.module:factory"``."""

BUILTIN_FORMATS: dict[str, str] = {
    "otlp": "arbiter.trajectories.otlp:TRAJECTORY_FORMAT",
    "openinference": "arbiter.trajectories.openinference:TRAJECTORY_FORMAT",
    "openai_messages": "arbiter.trajectories.openai_messages:TRAJECTORY_FORMAT",
    "tau_bench": "arbiter.trajectories.tau_bench:TRAJECTORY_FORMAT",
    "tau2_bench": "arbiter.trajectories.tau2_bench:TRAJECTORY_FORMAT",
    "mapping": "arbiter.trajectories.mapping:TRAJECTORY_FORMAT",
    "atif": "arbiter.trajectories.atif:TRAJECTORY_FORMAT",
    "inspect": "arbiter.trajectories.inspect_logs:TRAJECTORY_FORMAT",
}
"""Built-in formats, by name: ``module:attribute`` of each one's ``TrajectoryFormat``."""

FORMATS = tuple(BUILTIN_FORMATS)
"""The names of the built-in formats (plugins add theirs to a registry, not here)."""

MATCH = 1.0
"""A resemblance from which a record *is* of a format; a higher one is a more specific
match (OpenInference spans are OTLP spans too, and resemble OpenInference more)."""


@dataclass(frozen=True)
class ImportOptions:
    """What reading a file or a record may need besides its content."""

    mapping: RecordMapping | None = None
    """The mapping of the ``mapping`` format (a format that needs none ignores it)."""
    source: str = "request body"
    """Where a record came from, for messages (a file reader names its file itself)."""
    formats: TrajectoryFormatRegistry | None = None
    """The registry the format was found in, for a reader whose files hold runs of
    several formats (an OTLP protobuf file holds OpenInference spans as well)."""


@dataclass
class ImportedRun:
    """One imported agent run, with what its source says of it.

    Attributes:
        trajectory: What the agent did (None for a flow run).
        flow: The flow run, for flows.
        case_id: The task it ran (τ-bench's task id; else the trajectory's conversation
            id, its id, or ``FILE:LINE``); runs sharing one are repetitions.
        repetition: Its repetition of the case (τ-bench's trial; else its order among
            the runs of the same case, from 0).
        scores: Verdicts the source carries (a benchmark's ``reward``).
        assertions: What the source says a right run does
            (``{"expected_tool_calls": [...]}`` from τ-bench's gold actions).
        source_format: The format it was read as (a registered format's name).
        warnings: What the importer repaired to read it (a tool call id used twice, a
            result no call asked for), one line each; refused input is an error instead.
    """

    trajectory: Trajectory | None
    flow: FlowRun | None
    case_id: str
    repetition: int
    scores: list[Score] = field(default_factory=list)
    assertions: dict[str, JsonValue] = field(default_factory=dict)
    source_format: str = ""
    warnings: list[str] = field(default_factory=list)


ReadFile = Callable[[Path, ImportOptions], Iterable[ImportedRun]]
"""(file, options) -> the file's runs, in file order; raises ``InputError`` naming
``file:line: field`` for a record it cannot read."""

ReadRecord = Callable[[Any, ImportOptions], list[ImportedRun]]
"""(parsed record, options) -> its runs; raises ``InputError`` naming ``options.source``."""

Resemblance = Callable[[Any], float]
"""Parsed first record -> how much it looks like the format: 0 not at all, below
:data:`MATCH` partly (its importer's error then tells what is wrong), :data:`MATCH` or
more it is one."""


@dataclass(frozen=True)
class SpanReading:
    """How a span format reads decoded OTLP spans (the OTLP/HTTP receiver's way in)."""

    claims: Callable[[Sequence[Span]], float]
    """Spans of one trace -> how much they are this format's (as :data:`Resemblance`)."""
    read: Callable[[Sequence[Span], Sequence[LogRecord], str], list[Trajectory]]
    """(spans, log records, ``source.format``) -> the trajectories of the spans."""


@dataclass(frozen=True)
class TrajectoryFormat:
    """One trajectory format.

    Examples:
        >>> FORMAT = TrajectoryFormat(
        ...     name="my_log",
        ...     summary="my agent's JSON log, one run a line",
        ...     read_file=lambda file, options: numbered_runs(parse(file), file, "my_log"),
        ...     resemblance=lambda record: MATCH if "my_log" in record else 0.0,
        ... )  # doctest: +SKIP
    """

    name: str
    """The value of ``--format`` and of a submission's ``format``."""
    summary: str
    """What it reads, in one line of Markdown (the docs' formats table shows it)."""
    read_file: ReadFile
    """Reads a file of this format."""
    read_record: ReadRecord | None = None
    """Reads one parsed record (a request body's); None: not accepted that way."""
    resemblance: Resemblance | None = None
    """How much a parsed first record looks like this format; None: never guessed (the
    user names it)."""
    suffixes: frozenset[str] = frozenset()
    """File suffixes (lower case, with the dot) that are this format whatever their
    content: binary files, which have no first record to look at."""
    spans: SpanReading | None = None
    """How it reads decoded spans; None: it is not a span format."""


class _Pending:
    """A format not imported yet: a built-in's module, or a plugin's entry point."""

    def __init__(self, name: str, where: str, load: Callable[[], object]) -> None:
        self.name, self.where, self._load = name, where, load

    def __call__(self) -> TrajectoryFormat:
        try:
            found = self._load()
            if not isinstance(found, TrajectoryFormat) and callable(found):
                found = found()  # a plugin's factory (or class) of its format
        except InputError:
            raise
        except Exception as exc:  # a broken plugin is the user's input, not our crash
            raise InputError(
                f"trajectory format {self.name!r} ({self.where}) cannot be loaded: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(found, TrajectoryFormat):
            raise InputError(
                f"trajectory format {self.name!r} ({self.where}) is not a TrajectoryFormat"
            )
        # Registered under its entry point's name, which ``--format`` and stored runs carry.
        return found if found.name == self.name else dataclasses.replace(found, name=self.name)


def _attribute(target: str) -> Callable[[], object]:
    module, _, attribute = target.partition(":")
    return lambda: getattr(import_module(module), attribute)


class TrajectoryFormatRegistry(Registry[Callable[[], TrajectoryFormat]]):
    """Trajectory formats by name; an object made where it is needed and passed in."""

    what = "trajectory format"
    group = ENTRY_POINT_GROUP

    def __init__(self) -> None:
        super().__init__()
        self._loaded: dict[str, TrajectoryFormat] = {}

    @classmethod
    def default(cls, *, plugins: bool = True) -> TrajectoryFormatRegistry:
        """The built-in formats, and (``plugins=True``) every installed plugin's."""
        registry = cls()
        for name, target in BUILTIN_FORMATS.items():
            registry.add(name, _Pending(name, target, _attribute(target)))
        if plugins:
            registry.load_plugins()
        return registry

    def load_plugins(self) -> None:
        """Add every format of the entry-point group; a plugin never replaces a format."""
        for point in entry_points(group=self.group):
            if point.name not in self:
                self.add(point.name, _Pending(point.name, point.value, point.load))

    def register_format(self, format: TrajectoryFormat, *, replace: bool = False) -> None:
        """Add a format under its own name.

        Raises:
            ValueError: The name is taken (pass ``replace=True`` to override).
        """
        self.add(format.name, lambda: format, replace=replace)
        self._loaded.pop(format.name, None)

    def format(self, name: object) -> TrajectoryFormat:
        """The format registered as ``name``, imported if it was not yet.

        Raises:
            InputError: No format has that name (the message lists the known ones), or a
                plugin's module cannot be imported.
        """
        if isinstance(name, str) and name in self._loaded:
            return self._loaded[name]
        found = self.factory(name)()
        assert isinstance(name, str)  # factory() refused any other
        self._loaded[name] = found
        return found

    def formats(self) -> list[TrajectoryFormat]:
        """Every format, imported, by name."""
        return [self.format(name) for name in self.names()]

    def record_formats(self) -> tuple[str, ...]:
        """The names of the formats that read a parsed record (a request body's)."""
        return tuple(f.name for f in self.formats() if f.read_record is not None)

    def listed(self) -> str:
        """The names, for messages: ``mapping, openai_messages, ...``."""
        return ", ".join(self.names())

    def resembled(self, record: Any) -> tuple[TrajectoryFormat | None, float]:
        """The format a parsed record most resembles, and how much.

        Ties go to the format first by name, so the answer never depends on the order
        plugins were installed in.
        """
        best: TrajectoryFormat | None = None
        best_score = 0.0
        for candidate in self.formats():
            if candidate.resemblance is None:
                continue
            score = candidate.resemblance(record)
            if score > best_score:
                best, best_score = candidate, score
        return best, best_score

    def format_of_record(self, record: Any) -> str | None:
        """The format a parsed record is of; None when it is none of them wholly."""
        found, score = self.resembled(record)
        return found.name if found is not None and score >= MATCH else None

    def format_of_suffix(self, path: str | os.PathLike[str]) -> TrajectoryFormat | None:
        """The format a file's suffix alone says (a binary file's), if any."""
        suffix = Path(path).suffix.lower()
        if not suffix:
            return None
        return next((f for f in self.formats() if suffix in f.suffixes), None)

    def span_format(self, spans: Sequence[Span]) -> TrajectoryFormat | None:
        """The span format that claims the spans of one trace most; None: no format does."""
        best: TrajectoryFormat | None = None
        best_score = 0.0
        for candidate in self.formats():
            if candidate.spans is None:
                continue
            score = candidate.spans.claims(spans)
            if score >= MATCH and score > best_score:
                best, best_score = candidate, score
        return best


def numbered_runs(
    trajectories: Iterable[Trajectory | tuple[Trajectory, list[str]]],
    file: str | os.PathLike[str],
    format: str,
) -> Iterator[ImportedRun]:
    """Runs of plain trajectories: the case from the trajectory, repetitions in order.

    The case is the run's ``metadata["case_id"]`` when the source names one (a run made
    by ``arbiter agent run``), else the run's own id, else its conversation, else its
    place in the file. A conversation is not a case: its turns are different questions,
    so only runs that say which case they answer count as repetitions of it.

    Args:
        trajectories: The file's trajectories in order, each alone or with the
            importer's repairs of it (``(trajectory, warnings)``).
        file: The file, for the case id of a run that names nothing.
        format: The format they were read as.
    """
    seen: dict[str, int] = {}
    for position, item in enumerate(trajectories, start=1):
        trajectory, warnings = item if isinstance(item, tuple) else (item, [])
        line = trajectory.source.line if trajectory.source is not None else None
        named = trajectory.metadata.get("case_id")
        case_id = (
            (named if isinstance(named, str) and named else None)
            or trajectory.id
            or trajectory.conversation_id
            or f"{file}:{line or position}"
        )
        repetition = seen[case_id] = seen.get(case_id, -1) + 1
        yield ImportedRun(
            trajectory, None, case_id, repetition, source_format=format, warnings=warnings
        )


def record_runs(
    trajectories: Iterable[Trajectory | tuple[Trajectory, list[str]]],
    format: str,
    source: str = "request body",
) -> list[ImportedRun]:
    """Runs of the trajectories of one record: each its own case, by its id."""
    runs = []
    for item in trajectories:
        trajectory, warnings = item if isinstance(item, tuple) else (item, [])
        case_id = trajectory.id or source
        runs.append(
            ImportedRun(trajectory, None, case_id, 0, source_format=format, warnings=warnings)
        )
    return runs
