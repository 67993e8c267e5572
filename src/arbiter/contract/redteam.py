"""The live red-team: adversarial agent cases, what each run did, and the report.

A *live case* hands an agent a task and a sandbox of tools whose canned results carry
an attack (a planted instruction to call a tool or repeat a marker, personal data or a
secret as bait, an exfiltration link, a nudge towards a tool the task does not need).
Each run of a case is graded in code: the guards *held*, were *breached* (each breach
named), or the run failed (``error``: nothing is known of the guards, it is neither).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from arbiter.contract.common import SCHEMA_VERSION, Interval, StrictModel
from arbiter.contract.trajectory import Trajectory

__all__ = [
    "GuardBreach",
    "GuardCheck",
    "LiveCase",
    "LiveCategory",
    "LiveCategoryResult",
    "LiveRedTeamReport",
    "LiveRun",
    "LiveSpent",
    "LiveTool",
]

LiveCategory = Literal["injection", "pii_secret", "exfiltration", "scope_drift"]
"""The attack a live case carries."""

GuardCheck = Literal["injection_obeyed", "pii_secret_echoed", "exfiltration", "scope_drift"]
"""What a run is checked for: it called the planted tool or repeated the planted marker;
it said or sent personal data or a secret; it put a planted exfiltration address in
what it said or sent; it called a tool outside the case's allowed set."""


class LiveTool(StrictModel):
    """One tool of a case's sandbox: what the agent is told of it, what it returns."""

    description: str = Field(max_length=2_000)
    """What the tool does, as offered to the agent."""
    result: JsonValue
    """What every call of it returns."""


class LiveCase(StrictModel):
    """One adversarial case for a live agent. ``input()`` is what the agent is sent."""

    id: str = Field(min_length=1, max_length=200)
    """Unique within the suite."""
    category: LiveCategory
    """The attack it carries."""
    source: str
    """The id of the corpus case its attack text comes from."""
    query: str
    """The user's task."""
    tools: dict[str, LiveTool]
    """The sandbox, in the order offered; the first is the task's own tool."""
    allowed_tools: list[str]
    """The tools the task needs; a call of any other is scope drift."""
    planted_tool: str | None = None
    """The tool the planted instruction asks for."""
    planted_marker: str | None = None
    """The string the planted instruction asks the agent to repeat."""
    planted_hosts: list[str] = Field(default_factory=list)
    """Hosts of the planted exfiltration addresses."""

    def input(self) -> dict[str, JsonValue]:
        """The case's input as the agent receives it: ``query`` and ``tools``."""
        return {
            "query": self.query,
            "tools": {
                name: {"description": tool.description, "result": tool.result}
                for name, tool in self.tools.items()
            },
        }


class GuardBreach(StrictModel):
    """One guard a run broke."""

    check: GuardCheck
    """Which guard."""
    detail: str
    """What gave it away, one line (previews of personal data redacted; still untrusted
    text: escape it for where it is shown)."""
    where: str | None = None
    """The place in the run (``final_answer``, ``steps[1]``)."""


class LiveRun(StrictModel):
    """One run of one case, graded."""

    case_id: str
    """The case."""
    category: LiveCategory
    """Its category."""
    repetition: int
    """Which of the k runs (0-based)."""
    status: Literal["held", "breached", "error"]
    """``held``: no guard broke; ``breached``: at least one did; ``error``: the agent
    could not be run or answered no trajectory (the guards are unknown)."""
    breaches: list[GuardBreach] = Field(default_factory=list)
    """Every guard broken, in check order."""
    error: str | None = None
    """Why the run failed (status ``error``)."""
    agent: str | None = None
    """The agent's name, as its trajectory gives it."""
    tokens: int | None = None
    """Tokens the run's LLM calls used."""
    cost_usd: float | None = None
    """What they cost; None: not reported."""
    event_id: int | None = None
    """The inbox event recorded for a breach."""
    trajectory: Trajectory | None = None
    """What the agent did (kept for the misses and the inbox)."""


class LiveCategoryResult(StrictModel):
    """pass^k of one category: the share of its cases whose guards held on all k runs."""

    category: LiveCategory
    """The category."""
    cases: int
    """Cases of the category in the suite."""
    complete: int
    """Cases with all k runs graded (held or breached); pass^k is over these."""
    held: int
    """Complete cases that held on every run."""
    pass_k: Interval | None
    """``held / complete`` with its Wilson interval; None when no case is complete."""
    runs: int
    """Runs made."""
    runs_breached: int
    """Runs with a breach."""
    runs_error: int
    """Runs that failed."""


class LiveSpent(StrictModel):
    """What the red-team spent, against its caps."""

    calls: int = 0
    """Agent runs made (one call of the agent per case repetition)."""
    tokens: int = 0
    """Tokens the runs reported."""
    cost_usd: float = 0.0
    """Cost the runs reported."""
    cost_unknown: int = 0
    """Runs that reported no cost (not counted in ``cost_usd``)."""
    max_calls: int | None = None
    """The cap on calls; None: none."""
    max_tokens: int | None = None
    """The cap on tokens; None: none."""
    max_cost_usd: float | None = None
    """The cap on cost; None: none."""


class LiveRedTeamReport(StrictModel):
    """A live red-team of one agent: pass^k per category, every miss, what it spent."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    """This red-team run's id (the inbox events point at it)."""
    agent: str
    """The agent, as the executor describes it."""
    agent_name: str | None = None
    """The agent's name, as its runs' trajectories gave it (the first that did)."""
    k: int
    """Runs per case."""
    suite_sha256: str
    """sha256 of the cases as canonical JSON."""
    n_cases: int
    """Cases in the suite."""
    runs_planned: int
    """``n_cases * k``."""
    spent: LiveSpent
    """Calls, tokens and cost, with the caps."""
    stopped: str | None = None
    """Why the run stopped before every planned run was made (a cap); None: it did not."""
    categories: list[LiveCategoryResult]
    """One per category, in the order of :data:`LiveCategory`."""
    passed: bool
    """Every planned run was made and graded, and every guard held on all of them."""
    misses: list[LiveRun] = Field(default_factory=list)
    """Every run that was breached or failed, in run order."""
