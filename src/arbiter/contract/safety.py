"""Safety findings, the scans that produce them, red-team cases and the self-test's figures.

A *finding* is one thing a deterministic safety detector noticed in one text: which
detector (``injection``, ``exfiltration``, ``pii``, ``secrets``, ``toxicity``), what it
is (its ``category``: ``instruction_override``, ``email``, ``threat``, ...), how severe,
where (a character span, and which text of a run), and a *redacted* preview: a finding
never carries the raw value it found, so it may be printed, stored or sent anywhere.

A *scan* is one detector over one text, bounded: it reads at most its limit of
characters and says when it stopped short (``truncated``) or capped a candidate count.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from arbiter.contract.common import SCHEMA_VERSION, Interval, StrictModel

__all__ = [
    "DetectorName",
    "ExpectedFinding",
    "FirewallFlag",
    "RedTeamCase",
    "RedTeamCategory",
    "SafetyFinding",
    "SafetyScan",
    "SelfTestCategory",
    "SelfTestMiss",
    "SelfTestReport",
    "Severity",
    "Surface",
]

DetectorName = Literal["injection", "exfiltration", "pii", "secrets", "toxicity"]
"""The deterministic safety detectors."""

Severity = Literal["low", "medium", "high"]
"""``high``: fails (danger); ``medium``: flagged for review; ``low``: recorded only
(a quoted mention, a published test number)."""

Surface = Literal["read", "said"]
"""Which side of an agent a text is on: what it ``read`` (tool results, retrieved
chunks, user turns) or what it ``said`` (answers, messages, tool arguments it sent)."""

RedTeamCategory = Literal[
    "injection", "jailbreak", "pii_secret", "exfiltration", "toxicity", "benign"
]
"""The self-test's categories: five kinds of attack, and benign look-alikes."""


class SafetyFinding(StrictModel):
    """One thing a safety detector found in one text; never the raw value."""

    detector: DetectorName
    """The detector that found it."""
    category: str
    """What it is: ``instruction_override``, ``hidden_unicode``, ``email``, ``api_key``,
    ``threat``, ... (each detector's categories are listed in docs/safety.md)."""
    severity: Severity
    """``high`` fails the scorer, ``medium`` puts it under review, ``low`` is recorded."""
    span: tuple[int, int]
    """``[start, end)`` character offsets of the match in the text scanned."""
    preview: str
    """What was found, redacted (personal data and secrets masked), invisible
    characters shown as ``\\uXXXX``, at most 120 characters. Still untrusted text:
    escape it for where it is shown."""
    where: str | None = None
    """Which text of a run it is in (``steps[2].result``), when the text came from one."""
    note: str = ""
    """Why it was judged so, one line (``base64 that decodes to an instruction``)."""


class SafetyScan(StrictModel):
    """One detector over one text: its findings and how much of the text it read."""

    detector: DetectorName
    """The detector."""
    findings: list[SafetyFinding] = Field(default_factory=list)
    """In the order of their spans."""
    scanned_chars: int
    """Characters read."""
    total_chars: int
    """Characters the text had."""
    truncated: bool = False
    """Only the first ``scanned_chars`` characters were read (the scan's limit)."""
    capped: list[str] = Field(default_factory=list)
    """Other bounds that were reached, one line each (``phone candidates: first 2000``)."""


class ExpectedFinding(StrictModel):
    """What a red-team case expects a detector to find."""

    detector: DetectorName
    """The detector that should fire."""
    category: str | None = None
    """The finding's category it should report; None: any of the detector's."""


class RedTeamCase(StrictModel):
    """One case of a red-team corpus: a text, where it sits, what should be found."""

    id: str = Field(min_length=1, max_length=200)
    """Unique within the corpus."""
    category: RedTeamCategory
    """The attack category, or ``benign``."""
    surface: Surface
    """Whether the text is something an agent read or said (which detectors run)."""
    text: str = Field(max_length=1_000_000)
    """The text."""
    expect: ExpectedFinding | None
    """The finding an attack must produce; None for a benign case (nothing may be
    flagged)."""
    allow: list[str] = Field(default_factory=list, max_length=100)
    """Values the agent may state (an address it signs with): never findings."""
    family: str = Field(default="", max_length=500)
    """The attack family and where it is described."""
    note: str = Field(default="", max_length=2_000)
    """What the case is (what an encoded payload decodes to, what a look-alike mimics)."""


class SelfTestCategory(StrictModel):
    """Recall of the detectors on one attack category of a corpus."""

    category: RedTeamCategory
    """The category."""
    n: int
    """Cases."""
    detected: int
    """Cases whose expected finding was reported, at medium severity or above."""
    recall: Interval
    """``detected / n`` with its Wilson interval."""
    target: float
    """The recall the category must reach."""
    passed: bool
    """Whether ``recall.estimate`` reaches the target."""


class SelfTestMiss(StrictModel):
    """A case the detectors got wrong: an attack missed, or a benign case flagged."""

    id: str
    """The case."""
    category: RedTeamCategory
    """Its category."""
    kind: Literal["missed", "false_positive"]
    """An attack without its expected finding, or a benign case with a flagged one."""
    expected: ExpectedFinding | None
    """What should have been found."""
    found: list[SafetyFinding] = Field(default_factory=list)
    """What was found (flagged findings for a false positive, every finding for a
    miss), previews redacted."""
    note: str = ""
    """The case's own note."""


class SelfTestReport(StrictModel):
    """The detectors measured on a red-team corpus: recall per category, benign false
    positives, the targets and every miss."""

    schema_version: int = SCHEMA_VERSION
    corpus: str
    """Where the cases came from (a path, ``shipped``, ``request``)."""
    corpus_sha256: str
    """sha256 of the cases as canonical JSON, in corpus order."""
    n_cases: int
    """Cases, attacks and benign."""
    categories: list[SelfTestCategory]
    """One per attack category present, in the order of :data:`RedTeamCategory`."""
    benign_n: int
    """Benign cases."""
    benign_flagged: int
    """Benign cases with a finding at medium severity or above."""
    false_positive_rate: Interval
    """``benign_flagged / benign_n`` with its Wilson interval."""
    max_false_positive_rate: float
    """The rate the benign cases must stay under."""
    passed: bool
    """Every category reaches its recall target and the false-positive rate stays at or
    under its maximum (a corpus without benign cases, or without attacks, fails)."""
    misses: list[SelfTestMiss] = Field(default_factory=list)
    """Every missed attack and flagged benign case, in corpus order."""


class FirewallFlag(StrictModel):
    """A tool result that carries an injection, flagged on the run and nothing more: the
    result was delivered to the agent as it was (observe only)."""

    where: str
    """The result's place in the run (``steps[3].result``)."""
    tool: str | None = None
    """The tool that returned it."""
    severity: Severity
    """The most severe finding's."""
    categories: list[str]
    """The findings' categories, each once, in order."""
    findings: list[SafetyFinding]
    """The findings, previews redacted."""
    action: Literal["observe"] = "observe"
    """What was done: ``observe`` (flagged, delivered unchanged)."""
