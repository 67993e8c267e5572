"""An eval log another framework wrote, stored as a run of Arbiter's own.

A log is read by its trajectory format (:mod:`arbiter.trajectories.formats`: Inspect AI's
``inspect``, or any format whose runs carry the scores their source gave them), and
becomes what ``arbiter run`` stores: the log's cases are the examples, each run of a
case a repetition (an Inspect sample's epochs: pass^k and the intervals come from
them), the agent's messages the output's trajectory, and the log's scores the pair's
scores, every one of them gating. ``arbiter report``, ``diff``, ``gate``, ``verify`` and
the web UI then read it like any run::

    imported = import_log("logs/addition.eval", format="inspect", store=Store(url))
    imported.run_id, imported.report.pass_hat_k

The whole log is read and checked before the store is written: a malformed log stores
nothing. Nothing here prints or starts an event loop.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from arbiter.contract import (
    Completeness,
    Dataset,
    Example,
    Output,
    PairResult,
    Report,
    RunConfig,
    ScorerSpec,
    Trajectory,
)
from arbiter.contract.runs import RunStatus
from arbiter.errors import InputError
from arbiter.harness.describe import describe_system_short, run_summary
from arbiter.harness.report import build_report
from arbiter.scoring.base import repetition_passed
from arbiter.service.attestation import CONFIGURED, Signer, attest_run, resolve_signer
from arbiter.service.runs import IMPORTED_KIND, load_run
from arbiter.store import Store
from arbiter.trajectories.formats import ImportedRun, TrajectoryFormatRegistry
from arbiter.trajectories.loader import load_runs

__all__ = [
    "IMPORTED_KIND",
    "IMPORTED_SCORER_VERSION",
    "ImportedLog",
    "LogPairs",
    "import_log",
    "log_pairs",
]

IMPORTED_SCORER_VERSION = "imported"
"""The version of a scorer spec that stands for scores a log carries: nothing rebuilds
it, the scores are the log's."""

_INPUT_CHARS = 4_000
_RUN_NAME_CHARS = 200  # what the store keeps of a run's name; a name given is not cut


@dataclass(frozen=True)
class ImportedLog:
    """A log stored as a run."""

    run_id: str
    """The stored run's id."""
    report: Report
    """Its report, as ``arbiter report`` recomputes it."""
    n_examples: int
    """Cases of the log (examples of the run)."""
    k: int
    """Repetitions per case (Inspect's epochs)."""
    warnings: list[str] = field(default_factory=list)
    """What the importer repaired, one line each."""


@dataclass(frozen=True)
class LogPairs:
    """A log read as a run's parts, before anything is stored."""

    dataset: Dataset
    """The cases as examples, in id order."""
    pairs: list[PairResult]
    """One result per run of a case, with the log's scores and the outcome they give."""
    scorers: list[ScorerSpec]
    """One spec per score name of the log, each gating."""
    k: int
    """Repetitions per case: the most any case has."""
    system: dict[str, Any]
    """The run's system description (:data:`IMPORTED_KIND`, the format and the file)."""
    name: str | None
    """The log's agent or task, when it names one."""
    warnings: list[str]
    """What the importer repaired, one line each, without repeats."""


def log_pairs(
    path: str | os.PathLike[str],
    *,
    format: str,
    registry: TrajectoryFormatRegistry | None = None,
) -> LogPairs:
    """Read a log into the examples, pair results and scorer specs of a run.

    A run without a score of its own (an Inspect sample that raised) has an unknown
    outcome, or a failed one when the agent's run ended in an error.

    Raises:
        InputError: The file cannot be read or is malformed (``file: location: why``),
            holds no run, gives one case's repetition twice, or no run carries a score
            to judge it by.
    """
    source = str(path)
    runs = load_runs([path], format=format, registry=registry)
    if not runs:
        raise InputError(f"{source}: the log holds no runs; there is nothing to import")
    if not any(run.scores for run in runs):
        raise InputError(
            f"{source}: no run of the log carries a score; a log is imported with the "
            "scores it holds (score trajectories without them with: arbiter agent score FILE)"
        )
    examples: dict[str, Example] = {}
    names: dict[str, None] = {}
    pairs: list[PairResult] = []
    warnings: list[str] = []
    seen: set[tuple[str, int]] = set()
    for run in runs:
        warnings.extend(run.warnings)
        if (run.case_id, run.repetition) in seen:
            raise InputError(
                f"{source}: case {run.case_id[:80]!r} repetition {run.repetition} is given "
                "twice; a run holds one result per case and repetition"
            )
        seen.add((run.case_id, run.repetition))
        if run.case_id not in examples:
            examples[run.case_id] = _example(run)
        for score in run.scores:
            names.setdefault(score.name)
        pairs.append(_pair(run))
    gating = frozenset(names)
    for pair in pairs:
        pair.passed = repetition_passed(pair.scores, gating) if pair.error_type is None else False
    first = runs[0].trajectory
    task = first.agent.name if first is not None and first.agent.name else None
    # In id order: a log's two layouts (an .eval archive, a .json log) hold the same
    # task's samples in different orders, and the dataset's hash follows its order.
    ordered = [examples[case] for case in sorted(examples)]
    return LogPairs(
        dataset=Dataset(name=task or Path(path).stem, examples=ordered),
        pairs=pairs,
        scorers=[
            ScorerSpec(name=name, version=IMPORTED_SCORER_VERSION, kind="deterministic")
            for name in names
        ],
        k=max(pair.repetition for pair in pairs) + 1,
        system={
            "kind": IMPORTED_KIND,
            "format": runs[0].source_format or format,
            "target": source,
            **({"agent": task} if task else {}),
        },
        name=task,
        warnings=list(dict.fromkeys(warnings)),
    )


def import_log(
    path: str | os.PathLike[str],
    *,
    format: str,
    store: Store,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    signer: Signer = CONFIGURED,
    registry: TrajectoryFormatRegistry | None = None,
) -> ImportedLog:
    """Store the runs of a log as one run: its cases the examples, their runs repetitions.

    A case with fewer repetitions than the others leaves the run incomplete (status
    ``failed``), which never passes a gate. With a signing key (``signer``, default: the
    configured one) the run's report is signed, as a run of the harness is.

    Args:
        path: The log (an Inspect ``.eval`` or ``.json`` log, or a file of another
            format whose runs carry scores).
        format: Its trajectory format (a registered name: ``inspect``).
        store: Where the run goes.
        name: A name for the run (default: the log's agent or task).
        tags: Tags for the run (``imported_from`` is set to the format).
        signer: Who signs the report.
        registry: The formats; None: the built-in ones and the installed plugins'.

    Raises:
        InputError: The log is malformed or carries no scores, or the signing key
            cannot be read; nothing is stored.
    """
    read = log_pairs(path, format=format, registry=registry)
    key = resolve_signer(signer)
    config = RunConfig(k=read.k, concurrency=1, scorers=read.scorers, cache=False)
    n_pairs = len(read.dataset.examples) * read.k
    run_id = store.create_run(
        dataset=read.dataset,
        system=read.system,
        config=config.model_dump(mode="json"),
        n_pairs=n_pairs,
        name=name if name is not None else (read.name or read.dataset.name)[:_RUN_NAME_CHARS],
        tags={"imported_from": str(read.system["format"]), **dict(tags or {})},
    )
    segment = store.start_segment(run_id)
    store.add_results(run_id, read.pairs)
    status: RunStatus = "completed" if len(read.pairs) >= n_pairs else "failed"
    store.end_segment(run_id, segment, status, elapsed_seconds=0.0)
    report = build_report(
        read.dataset.examples,
        read.pairs,
        dataset_name=read.dataset.name,
        dataset_hash=read.dataset.content_hash,
        system=describe_system_short(read.system),
        k=read.k,
        seed=config.seed,
        scorers=read.scorers,
        run_id=run_id,
        status=status,
        completeness=Completeness(done=len(read.pairs), expected=n_pairs),
    )
    store.save_summary(run_id, run_summary(report))
    if key is not None:
        attest_run(store, load_run(store, run_id), signer=key)
    return ImportedLog(
        run_id=run_id,
        report=report,
        n_examples=len(read.dataset.examples),
        k=read.k,
        warnings=read.warnings,
    )


def _example(run: ImportedRun) -> Example:
    """The case as an example: what the agent was first asked, which every repetition
    of the case shares (so two logs of one task have the same dataset)."""
    asked = _first_ask(run.trajectory)
    return Example(
        id=run.case_id,
        input={"input": asked} if asked is not None else {},
        expected=_target(run),
        metadata={"assertions": run.assertions} if run.assertions else {},
    )


def _target(run: ImportedRun) -> JsonValue:
    """The answer the source expected: the ``target`` an importer keeps under its own
    format's name in the trajectory's metadata (Inspect's sample target), if any."""
    if run.trajectory is None:
        return None
    kept = run.trajectory.metadata.get(run.source_format)
    return kept.get("target") if isinstance(kept, dict) else None


def _first_ask(trajectory: Trajectory | None) -> str | None:
    if trajectory is None:
        return None
    for step in trajectory.steps:
        messages: Sequence[Any] = getattr(step, "input_messages", None) or ()
        for message in messages:
            if message.role == "user" and isinstance(message.content, str):
                return str(message.content)[:_INPUT_CHARS]
    return None


def _pair(run: ImportedRun) -> PairResult:
    trajectory = run.trajectory
    output = Output(
        id=run.case_id,
        text=trajectory.final_answer if trajectory is not None else None,
        trajectory=trajectory,
        flow=run.flow,
    )
    error_type: str | None = None
    error_message: str | None = None
    if trajectory is not None and trajectory.status == "error":
        error_type = "AgentError"
        error_message = (trajectory.error or "the agent's run ended in an error")[:500]
    return PairResult(
        example_id=run.case_id,
        repetition=run.repetition,
        output=output,
        scores=list(run.scores),
        latency_ms=_latency_ms(trajectory),
        error_type=error_type,
        error_message=error_message,
    )


def _latency_ms(trajectory: Trajectory | None) -> float:
    if trajectory is None or trajectory.started_at is None or trajectory.ended_at is None:
        return 0.0
    return max((trajectory.ended_at - trajectory.started_at).total_seconds() * 1000, 0.0)
