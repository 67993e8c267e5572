"""Agent executors: what runs an agent case and hands back its trajectory.

An executor answers one case (an :class:`~arbiter.contract.Example` made by
:meth:`~arbiter.contract.AgentCase.to_example`) with an :class:`~arbiter.contract.Output`
whose ``trajectory`` (or, for a flow, ``flow``) is set. It takes the whole case, not only
its input, because some executors need more than the query: recorded trajectories are
found by the case's id. :class:`AgentSystem` makes any executor a system under test, so
cases run through the offline harness unchanged: k repetitions, resume, the store, the
gate and the diff.

Three executors, each chosen by a spec string (:func:`parse_executor_spec`) and rebuilt
from the description a run stores (:func:`build_executor`):

- ``python:package.module:function``: :class:`PythonExecutor`, a callable of the case
  input returning a ``Trajectory``, ``FlowRun``, ``Output`` or a dict of one;
- ``http:path/to/agent.toml``: :class:`~arbiter.trajectories.executors_http.HttpStepsExecutor`,
  an agent behind a REST API (create a session, submit, poll, read the result);
- ``precomputed:path/to/trajectories.jsonl``: :class:`PrecomputedExecutor`, trajectories
  recorded earlier, one per case id.

Failures are the system-under-test errors the harness retries and records: a callable
that raises is ``SystemCrashed``, a case without a recorded trajectory ``MissingField``,
an answer that is no trajectory ``InvalidSystemResponse``.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from arbiter.contract import Example, FlowRun, Output, Prediction, Trajectory
from arbiter.datasets.jsonio import iter_json_lines, json_type, read_text
from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemCrashed,
    SystemUnderTestError,
)
from arbiter.systems.python import resolve_target
from arbiter.validation import describe_validation_error

__all__ = [
    "EXECUTOR_KINDS",
    "AgentExecutor",
    "AgentSystem",
    "PrecomputedExecutor",
    "PythonExecutor",
    "agent_output",
    "build_executor",
    "load_precomputed",
    "parse_executor_spec",
]

EXECUTOR_KINDS = ("python", "http", "precomputed")
"""The executor kinds a spec string may name (``KIND:WHAT``)."""

_DESCRIBED_KIND = {
    "python": "agent-python",
    "http": "agent-http",
    "precomputed": "agent-precomputed",
}


class AgentExecutor(Protocol):
    """Runs one agent case and returns what the agent did.

    Optional attributes the harness reads when present: ``call_timeout`` (every run
    ends within this many seconds), ``always_suspends``, ``validate_input(input)``
    (refuse a case that could never be sent), and ``__aenter__`` / ``__aexit__``
    (entered once per run).
    """

    async def run(self, case: Example) -> Output:
        """The output of one run of ``case``, its ``trajectory`` or ``flow`` set.

        Raises:
            SystemUnderTestError: The agent could not be run or answered nonsense.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-able description from which :func:`build_executor` rebuilds it."""
        ...


class AgentSystem:
    """An agent executor as a system under test of the offline harness.

    The runner calls :meth:`answer` with each case; the output must carry a trajectory
    or a flow run (anything else is an ``InvalidSystemResponse``, recorded for the pair).

    Args:
        executor: What runs the cases.
    """

    def __init__(self, executor: AgentExecutor) -> None:
        self.executor = executor
        bounded = getattr(executor, "call_timeout", None)
        if isinstance(bounded, int | float):
            self.call_timeout = float(bounded)
        self.always_suspends = bool(getattr(executor, "always_suspends", False))

    async def __aenter__(self) -> AgentSystem:
        enter = getattr(self.executor, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        leave = getattr(self.executor, "__aexit__", None)
        if leave is not None:
            await leave(*exc)

    async def answer(self, example: Example) -> Output:
        """Run the case; its output, checked to hold a trajectory or a flow run.

        Raises:
            SystemUnderTestError: As the executor's ``run``; ``InvalidSystemResponse``
                for an output without a trajectory or flow run.
        """
        output = await self.executor.run(example)
        if output.trajectory is None and output.flow is None:
            raise InvalidSystemResponse(
                f"case {example.id!r}: the executor returned no trajectory or flow run"
            )
        return output

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """The classifier form of a run of a bare input: its final answer as the label.

        The runner calls :meth:`answer`; this serves callers holding only an input.

        Raises:
            InvalidSystemResponse: The run delivered no answer.
        """
        output = await self.answer(Example(id="input", input=input))
        answer = output.answer_text
        if answer is None:
            raise InvalidSystemResponse("the agent delivered no final answer")
        return Prediction(label=answer, raw_output=output.model_dump(mode="json"))

    def validate_input(self, input: dict[str, Any]) -> None:
        """Refuse an input the executor could never send (see ``check_inputs``).

        Raises:
            InputError: The executor says so.
        """
        validate = getattr(self.executor, "validate_input", None)
        if callable(validate):
            validate(input)

    def describe(self) -> dict[str, Any]:
        """The executor's description (what the run stores)."""
        return dict(self.executor.describe())


def agent_output(value: Any, where: str) -> Output:
    """What an agent returned, read as an output with a trajectory or a flow run.

    A ``Trajectory`` or ``FlowRun`` is wrapped; an ``Output`` is taken as is; a dict is
    read as an ``Output`` when every key is one of its fields, else as a ``FlowRun``
    when it has ``nodes``, else as a ``Trajectory``.

    Raises:
        InvalidSystemResponse: Anything else, or a dict that is not a valid one
            (the message names the field).
    """
    if isinstance(value, Output):
        return value
    if isinstance(value, Trajectory):
        return Output(trajectory=value)
    if isinstance(value, FlowRun):
        return Output(flow=value)
    if not isinstance(value, dict):
        raise InvalidSystemResponse(
            f"{where} returned {type(value).__name__}; expected a Trajectory, FlowRun, "
            "Output or a dict of one"
        )
    model: type[Output] | type[FlowRun] | type[Trajectory]
    if value and set(value) <= set(Output.model_fields) | {"raw_output"}:
        model = Output
    else:
        model = FlowRun if "nodes" in value else Trajectory
    try:
        parsed = model.model_validate(value)
    except ValidationError as exc:
        why = describe_validation_error(exc, model)
        raise InvalidSystemResponse(
            f"{where} returned an invalid {model.__name__}: {why}"
        ) from None
    if isinstance(parsed, Output):
        return parsed
    return Output(flow=parsed) if isinstance(parsed, FlowRun) else Output(trajectory=parsed)


class PythonExecutor:
    """A Python callable as an agent: ``fn(input) -> Trajectory | FlowRun | Output | dict``.

    A sync callable runs in a worker thread (an agent blocks on its model calls); an
    async one is awaited. Any exception it raises is ``SystemCrashed``.

    Args:
        target: ``"package.module:function"``, ``"path/to/file.py:function"`` (a factory
            taking no argument is called once), or the callable itself.
    """

    def __init__(self, target: str | Callable[[dict[str, Any]], Any]) -> None:
        if isinstance(target, str):
            module_name, _, attribute = target.rpartition(":")
            if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
                # Stored absolute, so a resume from another directory finds the file.
                target = f"{Path(module_name).expanduser().resolve()}:{attribute}"
            self.target = target
            self._fn = resolve_target(target)
        else:
            module = getattr(target, "__module__", None) or "<unknown>"
            self.target = f"{module}:{getattr(target, '__qualname__', type(target).__name__)}"
            self._fn = target
        self._is_async = inspect.iscoroutinefunction(self._fn) or inspect.iscoroutinefunction(
            getattr(self._fn, "__call__", None)  # noqa: B004 - an object with async __call__
        )
        self.always_suspends = not self._is_async

    async def run(self, case: Example) -> Output:
        """Call the function with the case's input.

        Raises:
            SystemCrashed: The function raised.
            InvalidSystemResponse: It returned no trajectory or flow run.
        """
        try:
            if self._is_async:
                result = await self._fn(dict(case.input))
            else:
                result = await asyncio.to_thread(self._fn, dict(case.input))
                if inspect.isawaitable(result):
                    result = await result
        except SystemUnderTestError:
            raise
        except Exception as exc:
            raise SystemCrashed(f"{self.target} raised {type(exc).__name__}: {exc}") from exc
        return agent_output(result, self.target)

    def describe(self) -> dict[str, Any]:
        """``{"kind": "agent-python", "target": ...}``."""
        return {"kind": _DESCRIBED_KIND["python"], "target": self.target}


class PrecomputedExecutor:
    """Trajectories recorded earlier, answered by case id (every repetition the same).

    Args:
        outputs: The recorded output (a trajectory or flow run) of each case id.
        source: The file they were read from, stored with the run so a resume reads it
            again; None for outputs held only in memory (such a run cannot resume).
    """

    call_timeout = 0.0
    """Every answer is immediate."""
    always_suspends = False

    def __init__(
        self,
        outputs: Mapping[str, Output | Trajectory | FlowRun],
        *,
        source: str | os.PathLike[str] | None = None,
    ) -> None:
        self.outputs = {
            case_id: agent_output(value, f"the recorded run of case {case_id!r}")
            for case_id, value in outputs.items()
        }
        self.source = str(Path(source).resolve()) if source is not None else None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> PrecomputedExecutor:
        """The trajectories of a file written as :func:`load_precomputed` reads it.

        Raises:
            InputError: As :func:`load_precomputed`.
        """
        return cls(load_precomputed(path), source=path)

    async def run(self, case: Example) -> Output:
        """The output recorded for the case.

        Raises:
            MissingField: No run was recorded for its id.
        """
        try:
            return self.outputs[case.id]
        except KeyError:
            raise MissingField(f"no recorded trajectory for case {case.id!r}") from None

    def describe(self) -> dict[str, Any]:
        """``{"kind": "agent-precomputed", "target": FILE}``."""
        return {"kind": _DESCRIBED_KIND["precomputed"], "target": self.source or "<memory>"}


def load_precomputed(path: str | os.PathLike[str]) -> dict[str, Output]:
    """Recorded runs from JSONL: ``{"case_id", "trajectory" | "flow" | "output"}`` a line.

    ``trajectory`` and ``flow`` hold the contract's JSON (as ``Output.model_dump``
    writes it); ``output`` a whole output.

    Raises:
        InputError: ``file:line: why`` for a line that is not such a record, a case id
            given twice, or a file without records.
    """
    file = Path(path)
    source = str(file)
    outputs: dict[str, Output] = {}
    first_seen: dict[str, int] = {}
    for number, item in iter_json_lines(read_text(file, what="trajectories file"), source=source):
        where = f"{source}:{number}"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an object, got {json_type(item)}")
        case_id = item.get("case_id")
        if not isinstance(case_id, str) or not case_id.strip():
            raise InputError(f"{where}: field 'case_id': must be a non-empty string")
        given = [key for key in ("trajectory", "flow", "output") if key in item]
        unknown = sorted(set(item) - {"case_id", "trajectory", "flow", "output"})
        if unknown or len(given) != 1:
            why = f"unknown key {unknown[0][:80]!r}" if unknown else "give exactly one"
            raise InputError(
                f"{where}: {why}; expected 'case_id' and one of trajectory, flow, output"
            )
        if case_id in first_seen:
            raise InputError(
                f"{where}: case {case_id!r} is recorded twice (first at line "
                f"{first_seen[case_id]}); a precomputed run answers one trajectory per case"
            )
        key = given[0]
        document = item[key] if key == "output" else {key: item[key]}
        try:
            output = Output.model_validate(document)
        except ValidationError as exc:
            raise InputError(f"{where}: {describe_validation_error(exc, Output)}") from None
        if output.trajectory is None and output.flow is None:
            raise InputError(f"{where}: the recorded output holds no trajectory or flow run")
        outputs[case_id] = output
        first_seen[case_id] = number
    if not outputs:
        raise InputError(f"{source}: no recorded runs (one JSON object a line)")
    return outputs


def parse_executor_spec(spec: str) -> AgentExecutor:
    """The executor a spec string names: ``python:MOD:FN``, ``http:FILE``, ``precomputed:FILE``.

    Raises:
        InputError: An unknown kind, or what it names cannot be loaded.
    """
    kind, found, rest = spec.partition(":")
    if not found or not rest or kind not in EXECUTOR_KINDS:
        raise InputError(
            f"executor {spec!r}: expected python:package.module:function, "
            "http:path/to/agent.toml or precomputed:path/to/trajectories.jsonl"
        )
    if kind == "python":
        return PythonExecutor(rest)
    if kind == "http":
        from arbiter.trajectories.executors_http import HttpStepsExecutor

        return HttpStepsExecutor.from_file(rest)
    return PrecomputedExecutor.from_file(rest)


def build_executor(
    description: Mapping[str, Any], *, environ: Mapping[str, str] | None = None
) -> AgentExecutor:
    """Rebuild an executor from the description a run stored (``describe()``).

    Args:
        description: What the executor's ``describe()`` returned.
        environ: Where an HTTP agent's ``env:`` header values are read (default: the
            process's environment).

    Raises:
        InputError: Not an agent executor's description, or it cannot be rebuilt.
    """
    kind = description.get("kind")
    target = description.get("target")
    if kind == _DESCRIBED_KIND["python"] and isinstance(target, str):
        return PythonExecutor(target)
    if kind == _DESCRIBED_KIND["precomputed"] and isinstance(target, str):
        if target == "<memory>":
            raise InputError("the run's recorded trajectories were held in memory; give them again")
        return PrecomputedExecutor.from_file(target)
    if kind == _DESCRIBED_KIND["http"]:
        from arbiter.trajectories.executors_http import HttpStepsExecutor

        return HttpStepsExecutor.from_description(description, environ=environ)
    raise InputError(
        f"the run's system {kind!r} is not an agent executor; expected one of "
        + ", ".join(_DESCRIBED_KIND.values())
    )
