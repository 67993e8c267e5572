"""The assurance pack's control map: requirements, the evidence each cites, what the pack holds.

A *control* is one requirement of a framework (an article of the EU AI Act, a function
of the NIST AI RMF) and the pack members that bear on it. A *control entry* is that
control as one pack found it: for each cited member, whether the pack holds evidence
in it, and the control's status. A status says what the pack holds, never whether a
deployment conforms: ``evidence`` (every cited member holds some), ``partial evidence``
(some do) or ``no evidence`` (none do).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from arbiter.contract.common import SCHEMA_VERSION, StrictModel

__all__ = [
    "Control",
    "ControlEntry",
    "ControlMap",
    "ControlStatus",
    "EvidenceItem",
    "MemberEvidence",
]

ControlStatus = Literal["evidence", "partial evidence", "no evidence"]
"""What a pack holds for one control: evidence in every cited member, in some, in none."""


class Control(StrictModel):
    """One requirement and the pack members that bear on it."""

    id: str
    """A stable id (``eu-ai-act-art-9``, ``nist-ai-rmf-measure``)."""
    framework: str
    """The framework (``EU AI Act``, ``NIST AI RMF 1.0``)."""
    reference: str
    """Where in it (``Article 9``, ``MEASURE``)."""
    title: str
    """The requirement's name."""
    requirement: str
    """What it asks, in a sentence."""
    evidence: list[str] = Field(min_length=1)
    """The pack members that bear on it, by file name."""
    why: dict[str, str] = Field(default_factory=dict)
    """For a cited member, how it bears on the requirement."""


class MemberEvidence(StrictModel):
    """Whether one pack member holds evidence, in one line."""

    present: bool
    """Whether it holds any (a member with nothing recorded holds none)."""
    summary: str
    """What it holds, or why it holds nothing."""


class EvidenceItem(StrictModel):
    """One cited member as a control entry shows it."""

    file: str
    """The pack member."""
    status: Literal["present", "no evidence"]
    """Whether it holds evidence."""
    summary: str
    """What it holds, or why not."""
    why: str = ""
    """How it bears on the requirement."""


class ControlEntry(StrictModel):
    """One control as a pack found it."""

    id: str
    """The control's id."""
    framework: str
    """Its framework."""
    reference: str
    """Where in the framework."""
    title: str
    """The requirement's name."""
    requirement: str
    """What it asks."""
    status: ControlStatus
    """What the pack holds for it; never a statement of conformity."""
    evidence: list[EvidenceItem]
    """Each cited member, in the control's order."""


class ControlMap(StrictModel):
    """Every control of the map as one pack found it."""

    schema_version: int = SCHEMA_VERSION
    note: str
    """What a status does and does not say."""
    controls: list[ControlEntry]
    """In the map's order."""
