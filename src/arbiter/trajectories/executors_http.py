"""An agent behind a REST API, run as steps: create a session, submit, poll, read the result.

The steps are configured by an agent file (:mod:`~arbiter.trajectories.agent_http_config`;
an example with every key: ``docs/examples/agent-rest.toml``). In a URL, substituted
values are percent-encoded (an id from an answer cannot add a path segment); a body is
built as JSON and serialized once, so a query holding quotes stays a string.

Requests go through the one outbound HTTP client (:class:`arbiter.http.client.HttpClient`),
so every failure is a system-under-test error the harness retries or records, through
the one error table of :mod:`arbiter.http.errors`: a refused connection is
``SystemUnreachable``, no answer in time or a task still running at the deadline
``SystemTimeout``, an error status ``SystemHTTPError``, an answer that is not JSON or not
of the mapped shape ``InvalidSystemResponse``, a mapped id or status absent
``MissingField``. A task the agent reports failed is not an error of the executor: it is
a trajectory with status ``error``, which the scorers grade. A case that fails midway is
run again whole by the harness's retries (a new session): a turn cannot be resumed.

The turn record is mapped into a trajectory by the small mapping of
:class:`~arbiter.trajectories.agent_http_config.ResultMapping` (dotted paths, per-kind
step fields); the general mapping importer can replace it once it exists.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from arbiter.contract import Example, Output, Trajectory
from arbiter.errors import InputError, InvalidSystemResponse, MissingField, SystemTimeout
from arbiter.http.client import NO_BODY, HttpClient
from arbiter.http.redact import redact_url
from arbiter.systems.base import check_headers, lookup_path
from arbiter.trajectories.agent_http_config import (
    AgentHttpConfig,
    PollStep,
    Step,
    load_agent_config,
    placeholders,
    render_body,
    render_text,
)
from arbiter.validation import describe_validation_error

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpStepsExecutor"]

_MAX_ID_CHARS = 1_000
"""Longest session or task id taken from an answer."""


class HttpStepsExecutor:
    """Run each case through a REST agent, as the configured steps say.

    Args:
        config: The steps and mappings.
        source: The agent file it came from (stored with the run).
        transport: An httpx transport instead of the network (tests).
        environ: Where ``env:`` header values are read (default: the process's).
        clock: Seconds on a monotonic clock (default: the event loop's); with ``sleep``,
            lets tests poll without waiting on wall time.
        sleep: How to wait between polls.

    Raises:
        InputError: A header's variable is not set, or its value is not a valid header.
    """

    always_suspends = True

    def __init__(
        self,
        config: AgentHttpConfig,
        *,
        source: str | os.PathLike[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        env = os.environ if environ is None else environ
        headers = {"Accept": "application/json"}
        for name, value in config.headers.items():
            variable = value.removeprefix("env:")
            if variable not in env:
                raise InputError(f"agent headers.{name}: {variable} is not set")
            headers[name] = env[variable]
        check_headers(headers, url_has_credentials=False, owner="agent executor")
        self.config = config
        self.source = str(Path(source).resolve()) if source is not None else None
        self.call_timeout = config.timeout + config.request_timeout
        # No retry of its own: the harness runs a failed case again whole.
        self._http = HttpClient(
            side="system",
            transport=transport,
            headers=headers,
            max_response_bytes=config.max_response_bytes,
        )
        self._clock = clock
        self._sleep = sleep

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **options: Any) -> HttpStepsExecutor:
        """The executor an agent file configures (see :func:`load_agent_config`)."""
        return cls(load_agent_config(path), source=path, **options)

    @classmethod
    def from_description(
        cls, description: Mapping[str, Any], *, environ: Mapping[str, str] | None = None
    ) -> HttpStepsExecutor:
        """Rebuild from a stored description (its config holds no secret: only ``env:``).

        Raises:
            InputError: The stored config is not valid.
        """
        try:
            config = AgentHttpConfig.model_validate(description.get("config"))
        except ValidationError as exc:
            why = describe_validation_error(exc, AgentHttpConfig)
            raise InputError(f"the run's agent config is not valid: {why}") from None
        target = description.get("target")
        executor = cls(config, environ=environ)
        executor.source = target if isinstance(target, str) else None
        return executor

    async def __aenter__(self) -> HttpStepsExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; the next case opens a new one."""
        await self._http.aclose()

    def describe(self) -> dict[str, Any]:
        """``{"kind": "agent-http", "target": FILE, "config": {...}}`` (no header value)."""
        return {
            "kind": "agent-http",
            "target": self.source or redact_url(self.config.base_url),
            "config": self.config.model_dump(mode="json"),
        }

    def validate_input(self, input: Mapping[str, Any]) -> None:
        """Refuse an input without a query, or lacking a field a template names.

        Raises:
            InputError: What is missing.
        """
        if not isinstance(input.get("query"), str):
            raise InputError("the case has no query (input.query) to submit")
        for label, step in self.config.steps():
            for name in placeholders(step.url) | placeholders(step.body):
                field = name.removeprefix("input.")
                if name.startswith("input.") and field not in input:
                    raise InputError(f"agent {label} step names {{{name}}}, which the case lacks")

    async def run(self, case: Example) -> Output:
        """Run one case: session, submit, poll until done, read; the turn as a trajectory.

        Raises:
            SystemUnreachable: A request could not be sent or its answer broke off.
            SystemTimeout: A request took longer than ``request_timeout``, or the task was
                still running after ``timeout``.
            SystemHTTPError: An answer had an error status.
            InvalidSystemResponse: An answer is not JSON, or not of the mapped shape.
            MissingField: A mapped id or status is absent from an answer.
        """
        self.validate_input(case.input)
        config = self.config
        now = self._clock or asyncio.get_running_loop().time
        deadline = now() + config.timeout
        values: dict[str, Any] = {
            "base_url": config.base_url.rstrip("/"),
            "query": case.input["query"],
            "case_id": case.id,
            **{f"input.{key}": value for key, value in case.input.items()},
        }
        if config.session is not None:
            answer = await self._send("session", config.session, values)
            values["session_id"] = _id_at(answer, config.session.session_id, "session")
        answer = await self._send("submit", config.submit, values)
        if config.submit.task_id is not None:
            values["task_id"] = _id_at(answer, config.submit.task_id, "submit")
        failure: str | None = None
        failed = False
        if config.poll is not None:
            answer, failed, failure = await self._poll(config.poll, values, deadline, now)
        if config.read is not None and not failed:
            answer = await self._send("read", config.read, values)
        return Output(trajectory=self._trajectory(answer, values, failed, failure))

    async def _poll(
        self,
        poll: PollStep,
        values: Mapping[str, Any],
        deadline: float,
        now: Callable[[], float],
    ) -> tuple[Any, bool, str | None]:
        while True:
            answer = await self._send("poll", poll, values)
            status = _required(answer, poll.status, "poll")
            shown = status if isinstance(status, str) else json.dumps(status)
            if shown in poll.done:
                return answer, False, None
            if shown in poll.failed:
                message = _optional(answer, poll.error)
                return answer, True, _text(message) if message is not None else shown
            left = deadline - now()
            if left <= 0:
                raise SystemTimeout(
                    f"the agent's task was still {shown[:80]!r} after {self.config.timeout:g}s"
                )
            await self._sleep(min(poll.interval, left))

    async def _send(self, label: str, step: Step, values: Mapping[str, Any]) -> Any:
        url = render_text(step.url, values, in_url=True)
        body = render_body(step.body, values) if step.body is not None else NO_BODY
        answer = await self._http.request(
            step.method,
            url,
            where=f"agent {label}: {step.method} {redact_url(url)}",
            json=body,
            timeout=self.config.request_timeout,
        )
        return answer.document

    def _trajectory(
        self, answer: Any, values: Mapping[str, Any], failed: bool, failure: str | None
    ) -> Trajectory:
        mapping = self.config.result
        where = "agent result"
        try:
            record = _required(answer, mapping.path, "result") if mapping.path else answer
        except MissingField:
            if not failed:
                raise
            record = {}  # a failed task may carry no turn record at all
        if not isinstance(record, dict):
            raise InvalidSystemResponse(
                f"{where}: the turn record is not an object: {record!r}"[:300]
            )
        steps, skipped = self._steps(record)
        metadata: dict[str, Any] = {
            name: found
            for name, path in mapping.metadata.items()
            if (found := _optional(record, path)) is not None
        }
        if skipped:
            metadata["skipped_events"] = skipped
        error = _optional(record, mapping.error)
        answer_text = _optional(record, mapping.final_answer)
        turn_id = _optional(record, mapping.id)
        document = {
            "id": _text(turn_id) if turn_id is not None else values.get("task_id"),
            "agent": {
                "name": self.config.name,
                "version": self.config.version,
                "agent_class": self.config.agent_class,
            },
            "conversation_id": values.get("session_id"),
            "steps": steps,
            "final_answer": _text(answer_text) if answer_text is not None else None,
            "status": "error" if failed else "completed",
            "error": _text(error) if error is not None else failure,
            "metadata": metadata,
        }
        for key in ("id", "conversation_id"):
            if document[key] is not None:
                document[key] = str(document[key])
        try:
            return Trajectory.model_validate(document)
        except ValidationError as exc:
            why = describe_validation_error(exc, Trajectory)
            raise InvalidSystemResponse(f"{where}: not a valid trajectory: {why}") from None

    def _steps(self, record: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
        mapping = self.config.result
        if mapping.steps is None:
            return [], 0
        events = _optional(record, mapping.steps)
        if events is None:
            return [], 0
        if not isinstance(events, list):
            raise InvalidSystemResponse(f"agent result: {mapping.steps!r} is not a list of events")
        steps: list[dict[str, Any]] = []
        skipped = 0
        for event in events:
            raw_kind = _optional(event, mapping.kind) if isinstance(event, dict) else None
            kind = mapping.kinds.get(raw_kind) if isinstance(raw_kind, str) else None
            if kind is None:
                skipped += 1
                continue
            fields: Mapping[str, str] = getattr(mapping, kind)
            step: dict[str, Any] = {"kind": kind}
            for name, path in fields.items():
                value = _optional(event, path)
                if value is not None:
                    step[name] = value
            steps.append(step)
        return steps, skipped


def _optional(document: Any, path: str | None) -> Any:
    """The value at ``path``, or None when the path is not configured or absent."""
    if path is None:
        return None
    if path == "":
        return document
    try:
        return lookup_path(document, path)
    except MissingField:
        return None


def _required(answer: Any, path: str, label: str) -> Any:
    """The value at ``path``; a ``MissingField`` naming the step when it is absent."""
    try:
        return lookup_path(answer, path)
    except MissingField as exc:
        raise MissingField(f"agent {label}: {exc}") from None


def _id_at(answer: Any, path: str, label: str) -> str:
    value = _required(answer, path, label)
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise InvalidSystemResponse(f"agent {label}: {path!r} is not an id: {value!r}"[:300])
    text = str(value)
    if len(text) > _MAX_ID_CHARS:
        raise InvalidSystemResponse(f"agent {label}: {path!r} is longer than {_MAX_ID_CHARS} chars")
    return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
