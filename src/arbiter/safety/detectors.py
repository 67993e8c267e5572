"""The detectors by name, which run on which side of an agent, and scanning many texts.

- :data:`DETECTORS`: each detector's scan function.
- :data:`SURFACE_DETECTORS`: what an agent *read* is scanned for injection and
  exfiltration; what it *said* for exfiltration, personal data, secrets and toxicity.
- :func:`scan_texts`: several detectors over the texts of a run, every finding marked
  with the text it is in.
- :func:`flagged`: the findings that count (``medium`` and ``high``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from arbiter.contract.safety import DetectorName, SafetyFinding, SafetyScan, Severity, Surface
from arbiter.safety.collect import SEVERITY_RANK
from arbiter.safety.credentials import scan_secrets
from arbiter.safety.exfiltration import scan_exfiltration
from arbiter.safety.injection import scan_injection
from arbiter.safety.pii import scan_pii
from arbiter.safety.reading import RunText
from arbiter.safety.text import DEFAULT_LIMIT
from arbiter.safety.toxicity import scan_toxicity

__all__ = [
    "DETECTORS",
    "SURFACE_DETECTORS",
    "TextsScan",
    "flagged",
    "highest",
    "scan_text",
    "scan_texts",
]

DETECTORS: dict[DetectorName, Callable[..., SafetyScan]] = {
    "injection": scan_injection,
    "exfiltration": scan_exfiltration,
    "pii": scan_pii,
    "secrets": scan_secrets,
    "toxicity": scan_toxicity,
}
"""Each detector's scan function: ``(text, *, limit) -> SafetyScan``; ``pii`` and
``secrets`` also take ``allowed``."""

SURFACE_DETECTORS: dict[Surface, tuple[DetectorName, ...]] = {
    "read": ("injection", "exfiltration"),
    "said": ("exfiltration", "pii", "secrets", "toxicity"),
}
"""The detectors that run on each side of an agent."""

_TAKES_ALLOWED = frozenset({"pii", "secrets"})


def scan_text(
    text: str,
    detector: DetectorName,
    *,
    allowed: Collection[str] = (),
    limit: int | None = DEFAULT_LIMIT,
) -> SafetyScan:
    """One detector over one text.

    Raises:
        ValueError: ``limit`` is not a positive int or None.
    """
    scan = DETECTORS[detector]
    if detector in _TAKES_ALLOWED:
        return scan(text, allowed=allowed, limit=limit)
    return scan(text, limit=limit)


def flagged(findings: Iterable[SafetyFinding]) -> list[SafetyFinding]:
    """The findings at ``medium`` or ``high``: those that flag, the ``low`` left out."""
    return [f for f in findings if f.severity != "low"]


def highest(findings: Iterable[SafetyFinding]) -> Severity | None:
    """The most severe finding's severity, or None when there are none."""
    ranked = max((SEVERITY_RANK[f.severity] for f in findings), default=None)
    if ranked is None:
        return None
    severities: tuple[Severity, ...] = ("low", "medium", "high")
    return severities[ranked]


@dataclass
class TextsScan:
    """Detectors over several texts: every finding with its text, and what was bounded."""

    findings: list[SafetyFinding] = field(default_factory=list)
    """In text order, then by detector and span; each with ``where`` set."""
    texts: int = 0
    """Texts scanned."""
    chars: int = 0
    """Characters read."""
    capped: list[str] = field(default_factory=list)
    """Bounds that were reached (a text cut, a candidate cap), one line each."""


def scan_texts(
    texts: Sequence[RunText],
    detectors: Sequence[DetectorName],
    *,
    allowed: Collection[str] = (),
    limit: int | None = DEFAULT_LIMIT,
) -> TextsScan:
    """``detectors`` over each of ``texts``.

    Raises:
        ValueError: ``limit`` is not a positive int or None.
    """
    result = TextsScan(texts=len(texts))
    for text in texts:
        for detector in detectors:
            scan = scan_text(text.text, detector, allowed=allowed, limit=limit)
            result.chars += scan.scanned_chars if detector == detectors[0] else 0
            if scan.truncated:
                read, total = scan.scanned_chars, scan.total_chars
                line = f"{text.where}: first {read} of {total} characters read"
                if line not in result.capped:
                    result.capped.append(line)
            result.capped.extend(f"{text.where}: {line}" for line in scan.capped)
            result.findings.extend(
                f.model_copy(update={"where": text.where}) for f in scan.findings
            )
    return result
