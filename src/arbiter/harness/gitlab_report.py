"""A run as a GitLab code quality report: the JSON a merge request's widget reads.

One issue per gate failure (severity ``major``) and one per example not passed by every
gating scorer (``minor``). An example's fingerprint is built from the dataset's name,
the example's id and the scorers that did not pass it, never from the run, so GitLab,
which compares the report of a merge request with its target branch's, shows the
examples that newly fail (and those fixed) rather than every failure again.

Texts that came from a dataset, a system or a model are made inert for a terminal,
kept on one line and clipped; the document is JSON (:func:`arbiter.escape.json_text`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from arbiter import escape
from arbiter.contract import Example, PairResult, Report
from arbiter.harness.failures import find_failures
from arbiter.harness.gate import GateResult

__all__ = ["MAX_ISSUES", "gitlab_report"]

MAX_ISSUES = 1_000
"""Failing examples reported at most (worst first); gate failures always are."""

_DESCRIPTION_CHARS = 500


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def _issue(description: str, check: str, fingerprint: str, severity: str, path: str) -> Any:
    return {
        "description": escape.terminal(description, limit=_DESCRIPTION_CHARS, single_line=True),
        "check_name": check,
        "fingerprint": fingerprint,
        "severity": severity,
        "location": {"path": path, "lines": {"begin": 1}},
    }


def gitlab_report(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    gate: GateResult | None = None,
    path: str | None = None,
) -> str:
    """The code quality report of a run, as JSON text.

    Args:
        report: The run's report.
        examples: The examples in scope.
        results: The run's pair results.
        gate: The gate's decision on the run, if it has a gate.
        path: The repository file the issues point at (the eval file or the dataset);
            default: the dataset's name.
    """
    where = path or report.dataset
    issues = [
        _issue(
            f"Arbiter gate failed for {report.dataset}: {failure}",
            "arbiter-gate",
            _fingerprint("gate", report.dataset, failure.split(":")[0].split(" (")[0]),
            "major",
            where,
        )
        for failure in (gate.failures if gate is not None else [])
    ]
    found = find_failures(report, examples, results, limit=MAX_ISSUES, max_chars=300)
    for example in found.examples:
        failing = sorted(
            {
                score.name
                for rep in example.repetitions
                for score in rep.scores
                if score.verdict == "fail" and score.gating
            }
        )
        crashed = any(rep.error is not None for rep in example.repetitions)
        if not failing and not crashed:
            continue  # abstentions only, or a scorer that only reports: not a failure
        why = next(
            (
                score.reason
                for rep in example.repetitions
                for score in rep.scores
                if score.verdict == "fail" and score.gating and score.reason
            ),
            example.repetitions[0].error or example.outcome,
        )
        total = len(example.repetitions) + len(example.clean_repetitions)
        scorers = ", ".join(failing) or "the call"
        issues.append(
            _issue(
                f"{report.dataset}: example {example.example_id} failed {scorers} on "
                f"{len(example.repetitions)}/{total} repetitions: {why}",
                "arbiter-example",
                _fingerprint("example", report.dataset, example.example_id, *failing),
                "minor",
                where,
            )
        )
    return escape.json_text(issues) + "\n"
