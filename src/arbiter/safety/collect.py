"""Building one detector's scan: the bounded text, the findings, what was capped.

Every detector reads its text through a :class:`Collector`: the text cut to the scan's
limit (and made readable by RE2), the findings added as they are found, at most
:data:`MAX_FINDINGS` of them, overlapping findings of one category merged, and each
bound that was reached said in the scan (``truncated``, ``capped``).
"""

from __future__ import annotations

from arbiter.contract.safety import DetectorName, SafetyFinding, SafetyScan, Severity
from arbiter.safety.patterns import Subject
from arbiter.safety.text import PREVIEW_CHARS, bounded

__all__ = ["MAX_CANDIDATES", "MAX_FINDINGS", "SEVERITY_RANK", "Collector", "check_limit"]

MAX_FINDINGS = 200
"""Findings kept per scan; past it the scan says so in ``capped``."""
MAX_CANDIDATES = 2_000
"""Matches a detector examines per kind of candidate (phone-shaped numbers, base64
blocks) before it stops examining that kind and says so."""

SEVERITY_RANK: dict[Severity, int] = {"low": 0, "medium": 1, "high": 2}
"""Severities in order."""


def check_limit(limit: int | None) -> None:
    """Refuse a limit that is not a positive int (None: no limit).

    Raises:
        ValueError: ``limit`` is zero, negative or not an int.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"The 'limit' parameter must be a positive int or None. Got {limit!r}.")


class Collector:
    """One scan in the making.

    Args:
        detector: The detector scanning.
        text: The whole text; only its first ``limit`` characters are read.
        limit: Characters read; None reads all of it.
    """

    def __init__(self, detector: DetectorName, text: str, limit: int | None) -> None:
        check_limit(limit)
        self.detector: DetectorName = detector
        self.total = len(text)
        cut, self.truncated = bounded(text, limit)
        self.subject = Subject(cut)
        """The text as RE2 searches it (bytes, offsets turned back into characters)."""
        self.text = self.subject.text
        """What the detector reads: bounded, valid UTF-8, as long as the part read."""
        self.findings: list[SafetyFinding] = []
        self.capped: list[str] = []

    @property
    def full(self) -> bool:
        """No more findings are kept."""
        return len(self.findings) >= MAX_FINDINGS

    def add(
        self,
        category: str,
        severity: Severity,
        start: int,
        end: int,
        preview: str,
        note: str = "",
    ) -> None:
        """Keep a finding (dropped, and said once, past :data:`MAX_FINDINGS`)."""
        if self.full:
            self.cap(f"findings: first {MAX_FINDINGS} kept")
            return
        self.findings.append(
            SafetyFinding(
                detector=self.detector,
                category=category,
                severity=severity,
                span=(start, end),
                preview=preview[:PREVIEW_CHARS],
                note=note,
            )
        )

    def cap(self, line: str) -> None:
        """Say that a bound was reached (once per line)."""
        if line not in self.capped:
            self.capped.append(line)

    def scan(self) -> SafetyScan:
        """The scan: findings by span, overlapping ones of one category merged into the
        most severe."""
        ordered = sorted(self.findings, key=lambda f: (f.span[0], -SEVERITY_RANK[f.severity]))
        kept: list[SafetyFinding] = []
        last_end: dict[str, int] = {}
        last_index: dict[str, int] = {}
        for finding in ordered:
            start, end = finding.span
            if start < last_end.get(finding.category, -1):
                index = last_index[finding.category]
                if SEVERITY_RANK[finding.severity] > SEVERITY_RANK[kept[index].severity]:
                    kept[index] = finding
                last_end[finding.category] = max(last_end[finding.category], end)
                continue
            last_end[finding.category] = end
            last_index[finding.category] = len(kept)
            kept.append(finding)
        return SafetyScan(
            detector=self.detector,
            findings=kept,
            scanned_chars=len(self.text),
            total_chars=self.total,
            truncated=self.truncated,
            capped=list(self.capped),
        )
