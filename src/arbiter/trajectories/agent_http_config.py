"""The configuration of an HTTP agent executor: its steps, templates and result mapping.

An agent file is TOML with one ``[agent]`` table (an example with every key:
``docs/examples/agent-rest.toml``)::

    [agent]
    base_url = "http://127.0.0.1:8000"
    timeout = 120                     # seconds per case, every step and poll included

    [agent.session]                   # optional: create a session first
    url = "{base_url}/sessions"
    session_id = "session_id"         # where the answer keeps its id

    [agent.submit]
    url = "{base_url}/sessions/{session_id}/query"
    body = { query = "{query}" }
    task_id = "task_id"

    [agent.poll]                      # optional: until the status is done or failed
    url = "{base_url}/tasks/{task_id}"
    status = "status"
    done = ["done"]
    failed = ["failed"]
    interval = 0.5

    [agent.result]                    # the turn record, as a trajectory
    path = "result"
    final_answer = "answer"
    steps = "events"
    kind = "type"
    kinds = { tool = "tool_call", llm = "llm_call" }
    tool_call = { name = "tool", arguments = "args", result = "output" }
    llm_call = { model = "model", input_tokens = "tokens.in", cost_usd = "cost" }

Templates name ``{base_url}``, ``{query}``, ``{case_id}``, ``{input.FIELD}``,
``{session_id}`` (after a session step) and ``{task_id}`` (after a submit step that reads
one); ``{{`` and ``}}`` are literal braces. A placeholder no earlier step provides is
refused when the file is read, with the file's line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from arbiter.contract import LlmCall, Retrieval, ToolCall
from arbiter.datasets.tomlio import read_toml_file
from arbiter.errors import InputError
from arbiter.http.client import DEFAULT_MAX_RESPONSE_BYTES
from arbiter.http.redact import redact_url
from arbiter.validation import describe_validation_error

__all__ = [
    "AgentHttpConfig",
    "PollStep",
    "ReadStep",
    "ResultMapping",
    "SessionStep",
    "Step",
    "SubmitStep",
    "load_agent_config",
    "placeholders",
    "render_body",
    "render_text",
]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_INPUT_FIELD = re.compile(r"input\.[A-Za-z_][A-Za-z0-9_-]*")
_ALWAYS = frozenset({"base_url", "query", "case_id"})

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
StepKind = Literal["llm_call", "tool_call", "retrieval"]
_STEP_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(model.model_fields) - {"kind"}
    for kind, model in (("llm_call", LlmCall), ("tool_call", ToolCall), ("retrieval", Retrieval))
}


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Step(_Table):
    """One HTTP request of the run."""

    method: Method = "POST"
    """The request method."""
    url: str
    """URL template, e.g. ``{base_url}/sessions/{session_id}/query``."""
    body: JsonValue = None
    """JSON body template (a table, list or string); None: no body."""


class SessionStep(Step):
    """Create a session (optional): its answer holds the session id."""

    session_id: str = "session_id"
    """Dotted path of the session id in the answer."""


class SubmitStep(Step):
    """Submit the query: its answer holds the task id (or, without polling, the result)."""

    task_id: str | None = None
    """Dotted path of the task id in the answer; None (left out): the agent answers at
    once and this answer is the result (unless a poll follows)."""


class PollStep(Step):
    """Ask for the task's status until it is done or failed (bounded by the timeout)."""

    method: Method = "GET"
    status: str = "status"
    """Dotted path of the status in the answer."""
    done: list[str] = Field(default_factory=lambda: ["done"], min_length=1)
    """Statuses meaning the task finished; any status not listed means still running."""
    failed: list[str] = Field(default_factory=lambda: ["failed"])
    """Statuses meaning the task failed (a trajectory with status ``error``)."""
    error: str | None = "error"
    """Dotted path of the failure's message, if the answer gives one."""
    interval: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Seconds between two polls."""


class ReadStep(Step):
    """Read the result once the task is done (optional: else the last poll's answer)."""

    method: Method = "GET"


class ResultMapping(_Table):
    """Where the turn record keeps the trajectory's parts (dotted paths)."""

    path: str = ""
    """The turn record within the answer; empty: the whole answer."""
    final_answer: str | None = "answer"
    """The final answer."""
    error: str | None = None
    """Why the turn failed."""
    id: str | None = None
    """The turn's own id (default: the task id)."""
    steps: str | None = None
    """The list of events (tool calls, LLM calls, retrievals) in order."""
    kind: str = "kind"
    """Within an event: the field telling its kind."""
    kinds: dict[str, StepKind] = Field(default_factory=dict)
    """The agent's event kinds as the contract's (``tool = "tool_call"``); an event of
    another kind is skipped (and counted in ``metadata.skipped_events``)."""
    tool_call: dict[str, str] = Field(default_factory=dict)
    """Fields of a tool call (``name``, ``arguments``, ``result``, ``error``, ...) by path."""
    llm_call: dict[str, str] = Field(default_factory=dict)
    """Fields of an LLM call (``model``, ``input_tokens``, ``cost_usd``, ...) by path."""
    retrieval: dict[str, str] = Field(default_factory=dict)
    """Fields of a retrieval (``query``, ``chunks``) by path."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Turn-level values kept in the trajectory's metadata (``cost_usd = "cost"``)."""

    @model_validator(mode="after")
    def _known_fields(self) -> ResultMapping:
        for kind, fields in _STEP_FIELDS.items():
            unknown = sorted(set(getattr(self, kind)) - fields)
            if unknown:
                raise ValueError(
                    f"{kind}: {unknown[0]!r} is not a field of a {kind}; expected one of "
                    + ", ".join(sorted(fields))
                )
        return self


class AgentHttpConfig(_Table):
    """The ``[agent]`` table of an agent file."""

    base_url: str
    """The agent's address, ``{base_url}`` in templates."""
    name: str | None = None
    """The agent's name, recorded in each trajectory."""
    version: str | None = None
    """Its version."""
    agent_class: str | None = None
    """Its class (else each case's own)."""
    timeout: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    """Seconds one case may take, every step and poll included."""
    request_timeout: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    """Seconds one request may take."""
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, ge=1)
    """Larger answers are invalid responses (never read whole)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers, each ``"env:VARIABLE"`` (read from the environment; secrets never
    go in the file)."""
    session: SessionStep | None = None
    """Create a session first (optional)."""
    submit: SubmitStep
    """Submit the query."""
    poll: PollStep | None = None
    """Poll the task until it is done (optional)."""
    read: ReadStep | None = None
    """Read the result (optional)."""
    result: ResultMapping = Field(default_factory=ResultMapping)
    """Where the result keeps the trajectory."""

    @model_validator(mode="after")
    def _coherent(self) -> AgentHttpConfig:
        if not re.match(r"https?://[^/\s]+", self.base_url):
            raise ValueError(
                f"base_url must be http(s)://host..., got {redact_url(self.base_url)!r}"
            )
        for name, value in self.headers.items():
            if not value.startswith("env:") or not value.removeprefix("env:"):
                raise ValueError(
                    f"headers.{name}: write 'env:VARIABLE' (the value is read from the "
                    "environment; secrets never go in the file)"
                )
        if self.read is not None and self.poll is None and self.submit.task_id is None:
            raise ValueError("read: a read step follows a task: give submit.task_id or a poll")
        known = set(_ALWAYS)
        for label, step in self.steps():
            for name in placeholders(step.url) | placeholders(step.body):
                if name not in known and not _INPUT_FIELD.fullmatch(name):
                    later = {"session_id": "a session step", "task_id": "submit.task_id"}
                    hint = f" (it needs {later[name]} before it)" if name in later else ""
                    raise ValueError(f"{label}: unknown placeholder {{{name}}}{hint}")
            if label == "session":
                known.add("session_id")
            if label == "submit" and self.submit.task_id is not None:
                known.add("task_id")
        return self

    def steps(self) -> list[tuple[str, Step]]:
        """The configured steps in the order they run, by name."""
        named: list[tuple[str, Step | None]] = [
            ("session", self.session),
            ("submit", self.submit),
            ("poll", self.poll),
            ("read", self.read),
        ]
        return [(label, step) for label, step in named if step is not None]


def placeholders(template: Any) -> set[str]:
    """The placeholder names of a template (a string, or JSON holding strings)."""
    if isinstance(template, str):
        return {
            m.group(1).strip() for m in _PLACEHOLDER.finditer(template) if m.group(1) is not None
        }
    if isinstance(template, dict):
        return set().union(*(placeholders(v) for v in template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*(placeholders(v) for v in template)) if template else set()
    return set()


def render_text(template: str, values: Mapping[str, Any], *, in_url: bool) -> str:
    """``template`` with its placeholders filled (strings as is, other values as JSON).

    Args:
        template: The text, its placeholders checked already (every name in ``values``).
        values: The value of each placeholder name.
        in_url: Percent-encode every value but ``base_url``, so none adds a path segment
            or a query parameter.
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1).strip()
        value = values[name]
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        return quote(text, safe="") if in_url and name != "base_url" else text

    return _PLACEHOLDER.sub(replace, template)


def render_body(template: Any, values: Mapping[str, Any]) -> Any:
    """A JSON body template filled: a string that is one placeholder takes the value
    itself (its type kept), placeholders inside longer strings are interpolated."""
    if isinstance(template, dict):
        return {key: render_body(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_body(item, values) for item in template]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole is not None and whole.group(1) is not None:
        return values[whole.group(1).strip()]
    return render_text(template, values, in_url=False)


def load_agent_config(path: str | os.PathLike[str]) -> AgentHttpConfig:
    """The ``[agent]`` table of an agent file, validated.

    Raises:
        InputError: ``file:line: field 'agent.x': why`` for the first problem.
    """
    document = read_toml_file(path, what="agent file")
    unknown = sorted(set(document.data) - {"agent"})
    if unknown or "agent" not in document.data:
        why = f"unknown table {unknown[0]!r}" if unknown else "no [agent] table"
        raise InputError(f"{document.path}: {why}; an agent file holds one [agent] table")
    try:
        return AgentHttpConfig.model_validate(document.data["agent"])
    except ValidationError as exc:
        location = ("agent", *exc.errors(include_url=False)[0]["loc"])
        why = describe_validation_error(exc, AgentHttpConfig).replace("field '", "field 'agent.", 1)
        raise InputError(f"{document.where(location)}: {why}") from None
