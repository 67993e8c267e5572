"""The one protocol every online layer implements, and what a layer is given to run.

A layer is free (it runs on every item, in the order the pipeline lists it) or
expensive (it runs only when the item is escalated, concurrently with the other
expensive layers, under one budget). The pipeline owns timing, spans, metrics and
statuses; a layer computes its payload and tells its :class:`LayerContext` what it
noticed on the way: a flag that escalates the item, a note kept as its ``reason``, a
failure it survived. Adding a layer is one class with a ``name``, ``expensive``, a
``budget_floor`` and an async ``run``, handed to ``OnlinePipeline(layers=[...])``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from opentelemetry.trace import Span

from arbiter.contract import LayerPayload, LayerResult
from arbiter.online.reading import Item
from arbiter.telemetry import Telemetry

__all__ = ["Layer", "LayerContext", "NotRun", "Unconfigured"]


class Layer(Protocol):
    """One layer of the online pipeline."""

    @property
    def name(self) -> str:
        """Its key in ``OnlineResult.layers``; unique within a pipeline."""
        ...

    @property
    def expensive(self) -> bool:
        """False: runs on every item; True: runs only when the item is escalated."""
        ...

    @property
    def budget_floor(self) -> tuple[float, str] | None:
        """The longest single call it makes (seconds) and what that call is, so the
        escalation budget is raised above it; None when it has no bound of its own."""
        ...

    async def run(self, item: Item, context: LayerContext) -> LayerPayload | None:
        """What the layer found about ``item``.

        Raises:
            NotRun: It cannot judge this item (recorded with its status and reason).
            Exception: Any other is recorded as the layer's ``error``, never raised on.
        """
        ...


class NotRun(Exception):
    """Raised by a layer that cannot judge the item: no payload, no error line.

    Args:
        reason: Why, one line (the layer's ``reason``).
        status: ``abstained`` (nothing to judge) or ``error`` (the item is unusable).
    """

    def __init__(self, reason: str, *, status: Literal["abstained", "error"] = "abstained"):
        super().__init__(reason)
        self.reason = reason
        self.status: Literal["abstained", "error"] = status


@dataclass(slots=True, eq=False)
class LayerContext:
    """What one layer run may read about the item's evaluation, and where it reports.

    Valid during the run it is given to: the pipeline reuses it for the next free layer.
    """

    layer: str
    """The running layer's name (prefix of its flags and error lines)."""
    reasons: list[str]
    """Why the item is escalated so far; shared by the free layers, in order."""
    found: Mapping[str, LayerResult]
    """What the layers before it reported (the free ones, for an expensive layer)."""
    telemetry: Telemetry = field(default_factory=Telemetry.disabled)
    """Where metrics go (the judge counts its outcomes)."""
    extra_context: str | None = None
    """The caller's extra context for the judge."""
    input: Mapping[str, Any] | None = None
    """The caller's input to replay to other systems; None: ``metadata.input``."""
    deadline: float | None = None
    """Event-loop time at which the escalation budget ends; None on the free path."""
    span: Span | None = None
    """The layer's span, when tracing is on."""
    notes: list[str] = field(default_factory=list)
    """Notes of this run, joined into the layer's ``reason``."""
    errors: list[str] = field(default_factory=list)
    """Failure lines of this run, added to ``OnlineResult.errors``."""

    def flag(self, reason: str) -> None:
        """Escalate the item because of ``reason`` (free layers; recorded as ``"<layer>: ..."``)."""
        self.reasons.append(f"{self.layer}: {reason}")

    def note(self, line: str) -> None:
        """Keep a note of this run in the layer's ``reason`` (its status stays ``ran``)."""
        self.notes.append(line)

    def error(self, message: str, *, part: str | None = None) -> None:
        """Record a failure the layer survived, as ``"<layer>[ <part>]: <message>"``."""
        where = f"{self.layer} {part}" if part else self.layer
        self.errors.append(f"{where}: {message}")


class Unconfigured:
    """Stands in the list for a built-in layer that was not configured: reported as
    ``not_configured``, never run.

    Args:
        name: The layer's name.
        expensive: Whether the layer it stands for is expensive.
    """

    __slots__ = ("expensive", "name")

    budget_floor = None

    def __init__(self, name: str, *, expensive: bool = False) -> None:
        self.name = name
        self.expensive = expensive

    async def run(self, item: Item, context: LayerContext) -> LayerPayload | None:
        """Never called by the pipeline; says why if called anyway."""
        raise NotRun("not configured")
