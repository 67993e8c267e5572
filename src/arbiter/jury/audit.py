"""The audit artifact: one self-contained JSON file per judgment.

It holds everything needed to check a verdict without the store: the inputs, every
critic's raw answer and parsed critique, the synthesis trace (reasons, findings with
the critics behind them, opinions, aggregate scores, flip margin, agreement), the
verdict, per-critic timings and the summed token usage and cost. Files are written
atomically (a temporary file renamed into place), so a reader never sees half of one.

Replay is the other half of the audit: :func:`replay_judgment` re-synthesizes stored
critiques with the current code and reports a verdict that no longer comes out the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from arbiter.contract import SCHEMA_VERSION, Case, CriticOutcome, Decision, Verdict
from arbiter.jury.synthesis import synthesize

__all__ = [
    "VerdictChange",
    "VerdictSummary",
    "artifact_path",
    "audit_record",
    "replay_judgment",
    "write_artifact",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


_PREFIX_CHARS = 48


def artifact_path(directory: str | os.PathLike[str], run_id: str, case_id: str) -> Path:
    """Where :func:`write_artifact` puts the artifact of one case of one run.

    The file name is a readable prefix of the case id (letters, digits, ``.``, ``_``,
    ``-``; at most 48 characters) and a hash of the whole id, so two ids never share a
    file (``a/b`` and ``a_b`` differ) and no id makes a name too long for the file system.

    Examples:
        >>> artifact_path("audit", "r1", "a/b").name
        'a_b-c14cddc033f6.json'
    """
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    prefix = _UNSAFE.sub("_", case_id)[:_PREFIX_CHARS].lstrip(".") or "case"
    return Path(directory) / _safe(run_id) / f"{prefix}-{digest}.json"


def _safe(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name)[: _PREFIX_CHARS * 2].lstrip(".")
    return cleaned or "_"


def _critique_record(outcome: CriticOutcome) -> dict[str, Any]:
    return {
        "critic": outcome.critic,
        "lens": outcome.lens,
        "model": outcome.model,
        "status": outcome.status,
        "error": outcome.error,
        "raw": outcome.raw,
        "parsed": outcome.critique.model_dump(mode="json") if outcome.critique else None,
        "latency_ms": outcome.latency_ms,
        "usage": outcome.usage.model_dump(mode="json") if outcome.usage else None,
    }


def _usage(outcomes: list[CriticOutcome]) -> dict[str, Any]:
    reported = [o.usage for o in outcomes if o.usage is not None]
    costs = [u.cost_usd for u in reported if u.cost_usd is not None]
    return {
        "calls": len(outcomes),
        "calls_with_usage": len(reported),
        "input_tokens": sum(u.input_tokens for u in reported),
        "output_tokens": sum(u.output_tokens for u in reported),
        "cost_usd": round(sum(costs), 8) if costs else None,
    }


def audit_record(run_id: str, case: Case, verdict: Verdict) -> dict[str, Any]:
    """The content of one judgment's artifact, as plain JSON data.

    Args:
        run_id: The jury run the judgment belongs to.
        case: The judged case.
        verdict: The verdict; its ``critiques`` are every critic's outcome.

    Returns:
        A dict with ``inputs``, ``critiques``, ``synthesis``, ``verdict``, ``timings``
        and ``usage``.
    """
    outcomes = list(verdict.critiques)
    latencies = {o.critic: o.latency_ms for o in outcomes}
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "case_id": case.id,
        "inputs": {
            "task": case.task,
            "context": case.context,
            "output": case.output,
            "expected": case.expected,
            "defective": case.defective,
        },
        "critiques": [_critique_record(o) for o in outcomes],
        "synthesis": {
            "reasons": list(verdict.reasons),
            "findings": [f.model_dump(mode="json") for f in verdict.findings],
            "opinions": [o.model_dump(mode="json") for o in verdict.opinions],
            "scores": dict(verdict.scores),
            "flip_margin": verdict.flip_margin,
            "agreement": verdict.agreement,
        },
        "verdict": {
            "decision": verdict.decision,
            "confidence": verdict.confidence,
            "escalate": verdict.escalate,
            "flip_margin": verdict.flip_margin,
            "agreement": verdict.agreement,
        },
        "timings": {
            "per_critic_ms": latencies,
            # Critics run concurrently: the slowest one bounds the judgment's wall time.
            "slowest_critic_ms": max(latencies.values(), default=0.0),
            "total_critic_ms": round(sum(latencies.values()), 3),
        },
        "usage": _usage(outcomes),
    }


def write_artifact(
    directory: str | os.PathLike[str], run_id: str, case: Case, verdict: Verdict
) -> Path:
    """Write one judgment's artifact to ``<directory>/<run_id>/`` (see :func:`artifact_path`),
    atomically.

    Args:
        directory: Root of the audit trail (``Settings().home / "audit"`` in the CLI).
        run_id: The jury run.
        case: The judged case.
        verdict: The verdict.

    Returns:
        The path written.
    """
    path = artifact_path(directory, run_id, case.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(audit_record(run_id, case, verdict), indent=2, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


class VerdictSummary(BaseModel):
    """The part of a verdict replay compares."""

    decision: Decision
    """ACCEPT, REVISE or REJECT."""
    confidence: float
    """The verdict's confidence."""
    escalate: bool
    """Whether it escalates."""

    @classmethod
    def of(cls, verdict: Verdict) -> VerdictSummary:
        """The summary of ``verdict``."""
        return cls(
            decision=verdict.decision, confidence=verdict.confidence, escalate=verdict.escalate
        )


class VerdictChange(BaseModel):
    """A stored verdict that the current synthesis no longer reaches."""

    case_id: str
    """The case."""
    old: VerdictSummary
    """As stored."""
    new: VerdictSummary
    """As the current synthesis code decides from the same stored critiques."""


def replay_judgment(
    case: Case,
    outcomes: Sequence[CriticOutcome],
    stored: Verdict,
    *,
    synthesize_fn: Callable[[str, Sequence[CriticOutcome]], Verdict] = synthesize,
) -> VerdictChange | None:
    """Re-synthesize stored critiques and say whether the verdict changed.

    Args:
        case: The judged case (its output is what quotes are checked against).
        outcomes: The critics' stored outcomes, in roster order.
        stored: The verdict as stored.
        synthesize_fn: The synthesis to replay with (the current code by default).

    Returns:
        The change in decision, confidence or escalation, or None when there is none.
    """
    old = VerdictSummary.of(stored)
    new = VerdictSummary.of(synthesize_fn(case.output, outcomes))
    return None if old == new else VerdictChange(case_id=case.id, old=old, new=new)
