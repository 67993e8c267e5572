"""An agent run as the online pipeline reads it: validated, and cut to a bound first.

Online items come from production traffic, so a run may be larger than the contract
allows (more steps than :data:`~arbiter.contract.trajectory.MAX_STEPS`, a text longer
than :data:`~arbiter.contract.trajectory.MAX_TEXT_CHARS`) or than the pipeline wants to
score per item. Instead of refusing it, :func:`bounded_run` cuts it:

- steps (and a flow's nodes) beyond ``max_steps``, counted over the whole hand-off tree
  depth first, are dropped, and hand-offs nested deeper than ``max_depth`` keep their
  sub-agent's identity and answer but not its steps;
- a text, name or list over the contract's bound is cut to it.

Each cut is named in the notes returned beside the run. Everything is linear in the
size of the input; nothing of the caller's document is modified.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from arbiter.contract import FlowRun, Handoff, Trajectory
from arbiter.contract.trajectory import MAX_STEPS
from arbiter.validation import describe_validation_error

__all__ = ["MAX_DEPTH", "AgentRun", "UnusableRun", "bounded_run"]

AgentRun = Trajectory | FlowRun
"""What the trajectory scorers read: an agent's trajectory or a flow's run."""

MAX_DEPTH = 32
"""Deepest hand-off whose sub-agent's steps are kept."""

_FIX_ROUNDS = 4
"""Validation rounds that cut what is too long: a list too long hides its items' errors
until it is cut, so nested lists (messages of a call, chunks of a retrieval) take a
round each."""
_TOO_LONG = frozenset({"string_too_long", "too_long"})


class UnusableRun(ValueError):
    """The run cannot be read even after cutting (a wrong type, an unknown field)."""


def bounded_run(
    value: object,
    *,
    flow: bool = False,
    max_steps: int = MAX_STEPS,
    max_depth: int = MAX_DEPTH,
    agent_classes: Collection[str] | None = None,
) -> tuple[AgentRun, list[str]]:
    """``value`` as a validated run within the bounds, and what was cut to get there.

    Args:
        value: A ``Trajectory`` / ``FlowRun``, or a mapping of one.
        flow: Read a mapping as a ``FlowRun`` (else as a ``Trajectory``).
        max_steps: Most steps kept over the whole hand-off tree (most nodes of a flow).
        max_depth: Deepest hand-off whose sub-agent's steps are kept.
        agent_classes: The agent classes a run may declare; None: the contract's default.

    Returns:
        The run and the notes of what was cut (empty when nothing was).

    Raises:
        UnusableRun: It is neither a run nor a mapping, or does not validate after cutting.
    """
    notes: list[str] = []
    if isinstance(value, Trajectory | FlowRun):
        if _within(value, max_steps, max_depth):
            return value, notes
        value = value.model_dump()
    if not isinstance(value, Mapping):
        what = "flow run" if flow else "trajectory"
        raise UnusableRun(f"the {what} is a {type(value).__name__}, not an object")
    cutter = _Cutter(max_steps, max_depth)
    doc = cutter.flow(value) if flow else cutter.trajectory(value, 0)
    notes.extend(cutter.notes())
    model: type[AgentRun] = FlowRun if flow else Trajectory
    context = {"agent_classes": set(agent_classes)} if agent_classes is not None else None
    texts = 0
    for _ in range(_FIX_ROUNDS):
        try:
            run = model.model_validate(doc, context=context)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            fixable = [e for e in errors if e["type"] in _TOO_LONG]
            if len(fixable) < len(errors):
                raise UnusableRun(describe_validation_error(exc, model)) from None
            doc = _cut_too_long(doc, fixable)
            texts += len(fixable)
            continue
        if texts:
            notes.append(f"{texts} texts or lists cut to the contract's bounds")
        return run, notes
    raise UnusableRun("texts or lists still over the contract's bounds after cutting")


def _within(run: AgentRun, max_steps: int, max_depth: int) -> bool:
    """Whether a validated run is inside the bounds (stops counting past them)."""
    if isinstance(run, FlowRun):
        return len(run.nodes) <= max_steps
    budget = max_steps
    stack: list[tuple[Trajectory, int]] = [(run, 0)]
    while stack:
        trajectory, depth = stack.pop()
        budget -= len(trajectory.steps)
        if budget < 0:
            return False
        for step in trajectory.steps:
            if isinstance(step, Handoff):
                if depth >= max_depth and step.trajectory.steps:
                    return False
                stack.append((step.trajectory, depth + 1))
    return True


class _Cutter:
    """Copies a run's document, keeping at most ``max_steps`` steps, depth first."""

    def __init__(self, max_steps: int, max_depth: int) -> None:
        self.budget = max_steps
        self.max_steps = max_steps
        self.max_depth = max_depth
        self.dropped = 0
        self.flattened = 0

    def notes(self) -> list[str]:
        found = []
        if self.dropped:
            found.append(f"{self.dropped} steps past the bound of {self.max_steps} dropped")
        if self.flattened:
            found.append(
                f"{self.flattened} hand-offs deeper than {self.max_depth} kept without steps"
            )
        return found

    def trajectory(self, doc: Mapping[str, Any], depth: int) -> dict[str, Any]:
        copy = dict(doc)
        steps = doc.get("steps")
        if isinstance(steps, Sequence) and not isinstance(steps, str | bytes):
            copy["steps"] = self._steps(steps, depth)
        return copy

    def _steps(self, steps: Sequence[Any], depth: int) -> list[Any]:
        kept: list[Any] = []
        for index, step in enumerate(steps):
            if self.budget <= 0:
                self.dropped += len(steps) - index
                break
            self.budget -= 1
            sub = step.get("trajectory") if isinstance(step, Mapping) else None
            if isinstance(sub, Mapping) and step.get("kind") == "handoff":
                if depth >= self.max_depth:
                    if sub.get("steps"):
                        self.flattened += 1
                    step = {**step, "trajectory": {**sub, "steps": []}}
                else:
                    step = {**step, "trajectory": self.trajectory(sub, depth + 1)}
            kept.append(step)
        return kept

    def flow(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        copy = dict(doc)
        nodes = doc.get("nodes")
        if isinstance(nodes, list | tuple) and len(nodes) > self.max_steps:
            self.dropped += len(nodes) - self.max_steps
            copy["nodes"] = list(nodes[: self.max_steps])
        return copy


def _cut_too_long(doc: dict[str, Any], errors: Sequence[Any]) -> dict[str, Any]:
    """``doc`` with each value an error names cut to its ``max_length``.

    Containers on the way are copied once (the caller's document stays as it was);
    discriminator tags in an error's location (``tool_call``) are stepped over.
    """
    owned: set[int] = {id(doc)}
    for error in errors:
        limit = (error.get("ctx") or {}).get("max_length")
        if isinstance(limit, int):
            _cut_at(doc, tuple(error["loc"]), limit, owned)
    return doc


def _cut_at(root: dict[str, Any], loc: tuple[Any, ...], limit: int, owned: set[int]) -> None:
    node: Any = root
    path = list(loc)
    while path:
        part = path.pop(0)
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            if node.get("kind") == part:
                continue  # a discriminator tag, not a field
            return
        if isinstance(node, dict) and part in node:
            key: Any = part
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            key = part
        else:
            return
        child = node[key]
        if not path:
            if isinstance(child, str | list | tuple) and len(child) > limit:
                node[key] = child[:limit]
            return
        if isinstance(child, Mapping | list | tuple) and id(child) not in owned:
            child = dict(child) if isinstance(child, Mapping) else list(child)
            owned.add(id(child))
            node[key] = child
        node = child
