"""Agent cases: one query for an agent, with what its run must satisfy.

A case file (JSONL, one case a line) is an agent's golden set. Each case is run through an
executor (a Python callable, an HTTP agent, recorded trajectories) k times, and every
run is scored by the trajectory scorers, which read the case's ``assertions``::

    {"id": "weather-paris", "input": {"query": "What is the weather in Paris?"},
     "agent_class": "tool_enabled", "cohort": "weather",
     "assertions": {"require_tools_subset": ["get_weather"], "max_cost_usd": 0.05}}

:meth:`AgentCase.to_example` is the example the offline harness runs: the input as is,
the assertions as ``expected`` (where the trajectory scorers look), the agent class in
``metadata``.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from arbiter.contract.common import storable_id
from arbiter.contract.data import Example
from arbiter.contract.trajectory import AgentIdentity

__all__ = ["AGENT_CLASS_KEY", "AgentCase", "AgentInput"]

AGENT_CLASS_KEY = "agent_class"
"""Key of an example's metadata holding its case's agent class (the scorers read it)."""


class AgentInput(BaseModel):
    """What an agent is asked: the query, and any further fields its executor sends."""

    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1, max_length=1_000_000)
    """The user's query, as the agent receives it."""

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class AgentCase(BaseModel):
    """One case of an agent's golden set."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    """Unique id of the case within its file."""
    input: AgentInput
    """The query, plus any extra fields (a profile id, a flow id) the executor sends."""
    agent_class: str | None = None
    """The agent's class, one of the configured set; None: whatever the run reports."""
    assertions: dict[str, JsonValue] = Field(default_factory=dict)
    """What the trajectory scorers check, by key (``require_tools_subset``,
    ``must_not_call``, ``expected_tool_calls``, ``max_cost_usd``, ``must_contain``,
    ...); a scorer whose key is absent abstains."""
    cohort: str | None = None
    """A group for per-cohort figures and floors."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (source, notes); not sent to the agent."""

    @field_validator("id")
    @classmethod
    def _storable_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return storable_id(value)

    @field_validator("agent_class")
    @classmethod
    def _known_class(cls, value: str | None, info: ValidationInfo) -> str | None:
        # The trajectory's own check, so a case and a run accept the same classes.
        try:
            AgentIdentity.model_validate({"agent_class": value}, context=info.context)
        except ValidationError as exc:
            message = str(exc.errors(include_url=False)[0]["msg"])
            raise ValueError(message.removeprefix("Value error, ")) from None
        return value

    @field_validator("metadata")
    @classmethod
    def _class_key_reserved(cls, value: dict[str, Any]) -> dict[str, Any]:
        if AGENT_CLASS_KEY in value:
            raise ValueError(
                f"the key {AGENT_CLASS_KEY!r} is reserved: give the class as the case's "
                "'agent_class'"
            )
        return value

    def to_example(self) -> Example:
        """The example the harness runs: input, assertions as ``expected``, class in metadata."""
        metadata = dict(self.metadata)
        if self.agent_class is not None:
            metadata[AGENT_CLASS_KEY] = self.agent_class
        return Example(
            id=self.id,
            input=self.input.model_dump(mode="json"),
            expected=dict(self.assertions) if self.assertions else None,
            cohort=self.cohort,
            metadata=metadata,
        )
