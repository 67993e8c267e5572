"""The free online layer that runs the safety detectors on every item.

Deterministic and token-free, so never sampled: each item is read on both sides. An
item that carries an agent run (``trajectory`` at its top or under ``metadata``, as the
scorers layer reads it) is read as the safety scorers read a run: what the agent read
(tool results, retrieved chunks, user turns) for injection and exfiltration, what it
said (answer, messages, tool arguments) for exfiltration, personal data, secrets and
toxicity; every tool result that carries an injection is flagged observe only, nothing
is withheld. Any other item is read as a classifier's prediction: its ``raw_output``
strings are what was said, its ``metadata.input`` strings what was read.

A finding at or above ``flag_on`` (``high`` by default) flags the item, which escalates
it. Bounded: at most ``max_chars`` characters of an item are read. Configured in an
online config as ``"safety": {}`` (see :class:`SafetyLayerConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import LayerPayload, Trajectory
from arbiter.contract.safety import FirewallFlag, SafetyFinding, Severity, Surface
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item
from arbiter.online.run_bounds import UnusableRun, bounded_run
from arbiter.online.scorers_layer import carried_run
from arbiter.safety.collect import SEVERITY_RANK
from arbiter.safety.detectors import SURFACE_DETECTORS, scan_texts
from arbiter.safety.firewall import flags_of
from arbiter.safety.reading import RunText, run_texts, string_leaves

__all__ = ["SafetyLayer", "SafetyLayerConfig", "SafetyReport"]

_SHOWN = 5


class SafetyLayerConfig(BaseModel):
    """The safety layer's settings (all optional: ``"safety": {}`` turns it on)."""

    model_config = ConfigDict(extra="forbid")

    read: bool = True
    """Scan what the agent read (injection, exfiltration)."""
    said: bool = True
    """Scan what it said (exfiltration, personal data, secrets, toxicity)."""
    allow: list[str] = Field(default_factory=list, max_length=1_000)
    """Values the agent may state (its own support address): never findings."""
    flag_on: Severity = "high"
    """The severity from which a finding flags (escalates) the item."""
    max_chars: int = Field(default=1_000_000, ge=1, le=4_000_000)
    """Characters read of one item, all its texts together."""


class SafetyReport(BaseModel):
    """What the safety layer found in one item."""

    flagged: bool
    """A finding reached ``flag_on``: the item is escalated."""
    findings: list[SafetyFinding] = Field(default_factory=list)
    """Every finding, each with the text it is in (``where``); previews redacted."""
    firewall: list[FirewallFlag] = Field(default_factory=list)
    """The tool results that carry an injection (observe only)."""
    texts: int = 0
    """Texts read."""
    chars: int = 0
    """Characters read."""
    bounded: list[str] = Field(default_factory=list)
    """Bounds that were reached, one line each."""


class SafetyLayer:
    """Runs the safety detectors on each item; free (it runs on every item).

    Args:
        config: Its settings; None: the defaults.
    """

    name = "safety"
    expensive = False
    budget_floor = None

    def __init__(self, config: SafetyLayerConfig | None = None) -> None:
        self.config = config or SafetyLayerConfig()

    async def run(self, item: Item, context: LayerContext) -> LayerPayload | None:
        """The item's findings; abstains (``NotRun``) when it holds no text to read."""
        texts, bounded = self._texts(item, context.input)
        if not texts:
            raise NotRun("no text to read")
        report = SafetyReport(flagged=False, texts=len(texts), bounded=bounded)
        for surface in ("read", "said"):
            own = [t for t in texts if t.surface == surface]
            if not own:
                continue
            scan = scan_texts(own, SURFACE_DETECTORS[surface], allowed=self.config.allow)
            report.findings.extend(scan.findings)
            report.chars += sum(len(t.text) for t in own)
            report.bounded.extend(scan.capped)
        report.firewall = flags_of(texts, report.findings)
        threshold = SEVERITY_RANK[self.config.flag_on]
        flagging = [f for f in report.findings if SEVERITY_RANK[f.severity] >= threshold]
        if flagging:
            report.flagged = True
            kinds = list(dict.fromkeys(f"{f.detector}/{f.category}" for f in flagging))
            more = len(kinds) - _SHOWN
            context.flag(", ".join(kinds[:_SHOWN]) + (f" and {more} more" if more > 0 else ""))
        for line in report.bounded[:_SHOWN]:
            context.note(line)
        return report

    def _texts(
        self, item: Item, given_input: Mapping[str, Any] | None
    ) -> tuple[list[RunText], list[str]]:
        wanted: tuple[tuple[Surface, bool], ...] = (
            ("read", self.config.read),
            ("said", self.config.said),
        )
        surfaces = {surface for surface, on in wanted if on}
        found, flow = carried_run(item.doc)
        texts: list[RunText] = []
        bounded: list[str] = []
        if found is not None and not flow:
            try:
                run, cut = bounded_run(found)
            except UnusableRun as exc:
                raise NotRun(f"unusable trajectory: {exc}", status="error") from None
            bounded.extend(cut)
            assert isinstance(run, Trajectory)
            for surface in sorted(surfaces):
                read = run_texts(run, None, surface, max_chars=self.config.max_chars)
                texts.extend(read.texts)
                bounded.extend(read.capped)
        else:
            metadata = item.doc.get("metadata")
            query = (
                given_input
                if given_input is not None
                else (metadata.get("input") if isinstance(metadata, Mapping) else None)
            )
            if "read" in surfaces:
                texts.extend(_leaves(query, "input", "read", "input"))
            if "said" in surfaces:
                texts.extend(_leaves(item.doc.get("raw_output"), "raw_output", "said", "answer"))
        return _bounded(texts, self.config.max_chars, bounded), bounded


def _leaves(value: object, where: str, surface: Surface, part: Any) -> list[RunText]:
    return [RunText(path, text, surface, part) for path, text in string_leaves(value, where)]


def _bounded(texts: Sequence[RunText], max_chars: int, bounded: list[str]) -> list[RunText]:
    """The texts up to ``max_chars`` characters in all (the rest said in ``bounded``)."""
    kept: list[RunText] = []
    total = 0
    for text in texts:
        if total + len(text.text) > max_chars:
            bounded.append(f"characters: first {max_chars} of the item read")
            break
        total += len(text.text)
        kept.append(text)
    return kept
