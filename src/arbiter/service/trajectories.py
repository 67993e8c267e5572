"""Agent runs kept by the server: import a submitted record, score it online, store it.

Whatever the way in (``POST /v1/trajectories``, ``POST /v1/traces``, ``arbiter demo``),
a run is scored by the deterministic trajectory scorers through the online pipeline of
:func:`~arbiter.service.online_agents.agent_pipeline` (built once:
:func:`agent_run_scoring`), given its verdict, and stored with its whole score set as a
:class:`~arbiter.contract.StoredTrajectory`::

    scoring = agent_run_scoring()
    runs = import_record(record, format=None)       # any importer's format, told apart
    stored = await score_and_store(store, runs, scoring=scoring, owner=None)

A run's verdict is the one predicate every pass rate is built on
(:func:`~arbiter.trajectories.verdict.turn_failed`): it fails when a rule (a
deterministic scorer, or a benchmark's imported reward) failed it or put it in the
danger band; it passes when some scorer passed it and none convicted; it is not
evaluated (``passed=None``) when every scorer abstained.
"""

from __future__ import annotations

import hashlib
import math
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from arbiter.contract import (
    UNNAMED_AGENT,
    Band,
    FlowRun,
    LlmCall,
    OnlineResult,
    Score,
    ScorerSpec,
    StoredTrajectory,
    Trajectory,
    run_hash,
)
from arbiter.datasets.jsonio import iter_json_lines, read_text
from arbiter.errors import InputError
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.scorers_layer import ScorersFinding
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.attestation import CONFIGURED, attest_trajectories, resolve_signer
from arbiter.service.online_agents import agent_pipeline, score_trajectory, trajectory_scorers
from arbiter.service.safety_events import record_firewall_events
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.telemetry import Telemetry
from arbiter.trajectories.formats import ImportedRun, ImportOptions, TrajectoryFormatRegistry
from arbiter.trajectories.mapping_schema import RecordMapping
from arbiter.trajectories.verdict import turn_failed
from arbiter.validation import validate_document

__all__ = [
    "CONTRACT_FORMATS",
    "AgentRunScoring",
    "agent_run_scoring",
    "import_record",
    "named_run",
    "run_id_for",
    "run_of",
    "score_and_store",
    "score_run",
    "store_sample_trajectories",
    "stored_from_scores",
    "stored_record",
    "submit_formats",
]

CONTRACT_FORMATS = ("trajectory", "flow")
"""The formats of a submitted record besides the registered ones: the contract's own
``Trajectory`` and ``FlowRun`` documents."""

_BODY = "request body"


@dataclass
class AgentRunScoring:
    """The online pipeline that scores agent runs, and what its scorers are."""

    pipeline: OnlinePipeline
    """The pipeline (its free layer runs every deterministic trajectory scorer)."""
    specs: dict[str, ScorerSpec] = field(default_factory=dict)
    """Each scorer's spec by the name its scores carry."""
    defaults: Callable[[], Mapping[str, Any]] | None = None
    """The deployment's default band thresholds as assertions (``<key>``,
    ``<key>__healthy``), read for each run; a run's and a request's assertions override
    them metric by metric. None: the shipped defaults."""

    @property
    def rules(self) -> frozenset[str]:
        """The scorers whose failure convicts a run (all of them are deterministic)."""
        return frozenset(self.specs)


def agent_run_scoring(
    *, registry: ScorerRegistry | None = None, telemetry: Telemetry | None = None
) -> AgentRunScoring:
    """Build the scoring of agent runs once (a process or an app keeps it).

    Args:
        registry: Where the trajectory scorers are looked up; None: the default one.
        telemetry: When enabled, every run's verdicts are also emitted as
            ``gen_ai.evaluation.result`` events linked to the trace they grade.
    """
    selection = trajectory_scorers(registry)
    pipeline = agent_pipeline(scorers=selection, telemetry=telemetry)
    return AgentRunScoring(
        pipeline=pipeline, specs={s.spec.label: s.spec for s in selection.scorers}
    )


def submit_formats(registry: TrajectoryFormatRegistry | None = None) -> tuple[str, ...]:
    """What a submitted record may be: the contract's own ``Trajectory`` or ``FlowRun``,
    or a record of a registered format that reads records."""
    registry = registry or TrajectoryFormatRegistry.default()
    return (*CONTRACT_FORMATS, *registry.record_formats())


def import_record(
    record: JsonValue,
    *,
    format: str | None = None,
    mapping: str | None = None,
    registry: TrajectoryFormatRegistry | None = None,
) -> list[ImportedRun]:
    """The runs of one submitted record (a request body's).

    Args:
        record: The parsed record: a ``Trajectory`` or ``FlowRun`` document, or a record
            of a registered format (an OpenAI conversation, a τ-bench result or a list
            of them, a τ²-bench results document, an OTLP / OpenInference export
            request, a platform record).
        format: One of :func:`submit_formats`; None: told from the record (the format it
            wholly resembles, else a trajectory or a flow).
        mapping: The shipped mapping of the ``mapping`` format (e.g. ``uderia_turn``).
        registry: The formats; None: the built-in ones and the installed plugins'.

    Raises:
        InputError: An unknown format, a mapping that is not shipped, or a record that is
            not what its format says (``request body: why``).
    """
    registry = registry or TrajectoryFormatRegistry.default()
    if format is not None and format not in submit_formats(registry):
        listed = ", ".join(submit_formats(registry))
        raise InputError(f"format {format!r}: unknown format; expected one of {listed}")
    chosen = format or ("mapping" if mapping is not None else None)
    chosen = chosen or registry.format_of_record(record)
    chosen = chosen or ("flow" if _looks_like_flow(record) else None)
    if chosen is None:
        if not (isinstance(record, dict) and record.keys() & Trajectory.model_fields.keys()):
            closest, score = registry.resembled(record)
            if closest is not None and closest.read_record is not None and score > 0:
                return _imported(record, closest.name, mapping, registry)
            listed = ", ".join(submit_formats(registry))
            raise InputError(
                f"{_BODY}: cannot tell the record's format; name it with 'format' (one of {listed})"
            )
        chosen = "trajectory"
    if chosen == "trajectory":
        return [run_of(validate_document(Trajectory, record, where=_BODY))]
    if chosen == "flow":
        return [run_of(validate_document(FlowRun, record, where=_BODY))]
    return _imported(record, chosen, mapping, registry)


def _looks_like_flow(record: JsonValue) -> bool:
    return isinstance(record, dict) and isinstance(record.get("nodes"), list)


def run_of(subject: Trajectory | FlowRun, format: str | None = None) -> ImportedRun:
    """A run given in the contract's own shape, as an imported run."""
    trajectory = subject if isinstance(subject, Trajectory) else None
    flow = subject if isinstance(subject, FlowRun) else None
    kind = format or ("trajectory" if trajectory is not None else "flow")
    return ImportedRun(trajectory, flow, subject.id or _BODY, 0, source_format=kind)


def _imported(
    record: JsonValue, format: str, mapping: str | None, registry: TrajectoryFormatRegistry
) -> list[ImportedRun]:
    reader = registry.format(format).read_record
    if reader is None:  # submit_formats() lists only formats that read records
        raise InputError(f"format {format!r} does not read a submitted record")
    options = ImportOptions(mapping=_shipped_mapping(mapping), source=_BODY)
    return reader(record, options)


def _shipped_mapping(mapping: str | None) -> RecordMapping | None:
    """The shipped mapping a request names: a request must never name a server's file."""
    from arbiter.trajectories.mapping_schema import BUILTIN_MAPPINGS, load_mapping

    if mapping is None:
        return None
    if mapping not in BUILTIN_MAPPINGS:
        shipped = ", ".join(BUILTIN_MAPPINGS)
        raise InputError(f"the mapping format needs a shipped mapping ({shipped}), got {mapping!r}")
    return load_mapping(mapping)


def run_id_for(run: Trajectory | FlowRun, *, owner: str | None = None) -> str:
    """The stored id of a run: one per trace and root span for a traced run (so a trace
    exported again replaces its runs), else a new random one."""
    source = run.source
    if source is not None and source.trace_id and (source.span_ids or run.id):
        root = source.span_ids[0] if source.span_ids else run.id
        key = f"{owner or ''}\x00{source.trace_id}\x00{root}"
        return "tr-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return "tr-" + uuid.uuid4().hex[:24]


async def score_and_store(
    store: Store,
    runs: Sequence[ImportedRun],
    *,
    scoring: AgentRunScoring,
    owner: str | None = None,
    assertions: Mapping[str, JsonValue] | None = None,
    input: Mapping[str, Any] | None = None,
    run_ids: Sequence[str] | None = None,
) -> list[StoredTrajectory]:
    """Score each run online and store them all in one transaction.

    Args:
        store: The store.
        runs: The imported runs.
        scoring: Built once with :func:`agent_run_scoring`.
        owner: The key that submitted them (their owner); None: nobody.
        assertions: The case's assertions every run is scored against, over what the
            import carried (τ-bench's gold actions) and the default thresholds.
        input: The query, for the scorers that read it.
        run_ids: The runs' ids, in order (a run stored under an id again replaces it);
            None: :func:`run_id_for` each.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    ids = list(run_ids) if run_ids is not None else [None] * len(runs)
    records = [
        await score_run(
            run, scoring=scoring, owner=owner, assertions=assertions, input=input, run_id=run_id
        )
        for run, run_id in zip(runs, ids, strict=True)
    ]
    key = resolve_signer(CONFIGURED)  # a key that cannot be read fails before the write
    save_trajectories(store, records, owner=owner)
    attest_trajectories(store, records, signer=key)  # signed when a key is configured
    record_firewall_events(store, records, owner=owner)  # never raises: observe only
    await evaluate_breaker(store, records, owner=owner)  # never raises: ingest is untouched
    return records


async def score_run(
    run: ImportedRun,
    *,
    scoring: AgentRunScoring,
    owner: str | None = None,
    assertions: Mapping[str, JsonValue] | None = None,
    input: Mapping[str, Any] | None = None,
    run_id: str | None = None,
) -> StoredTrajectory:
    """One run scored online, as it would be stored (nothing is written)."""
    subject = run.trajectory or run.flow
    if subject is None:  # an ImportedRun always carries one of the two
        raise InputError(f"{_BODY}: the run holds neither a trajectory nor a flow")
    merged: dict[str, Any] = {**run.assertions, **(assertions or {})}
    if scoring.defaults is not None:
        from arbiter.trust.thresholds import under_case

        merged = under_case(merged, scoring.defaults())
    result = await score_trajectory(
        subject, pipeline=scoring.pipeline, input=input, assertions=merged or None
    )
    return stored_record(
        run, result, scoring=scoring, run_id=run_id or run_id_for(subject, owner=owner)
    )


def stored_record(
    run: ImportedRun,
    result: OnlineResult,
    *,
    scoring: AgentRunScoring,
    run_id: str,
    now: datetime | None = None,
) -> StoredTrajectory:
    """The stored shape of a run and its online result: scores, verdict, band, totals."""
    scored = result.payload("scorers", ScorersFinding)
    return stored_from_scores(
        run,
        scored.scores if scored is not None else [],
        specs=scoring.specs,
        rules=scoring.rules,
        run_id=run_id,
        not_applicable=scored.not_applicable if scored is not None else [],
        notes=[*(scored.cut if scored is not None else []), *result.errors],
        now=now,
    )


def stored_from_scores(
    run: ImportedRun,
    found: Sequence[Score],
    *,
    specs: Mapping[str, ScorerSpec],
    rules: frozenset[str],
    run_id: str,
    not_applicable: Sequence[str] = (),
    notes: Sequence[str] = (),
    now: datetime | None = None,
) -> StoredTrajectory:
    """The stored shape of a run and the scores its scorers gave, as the server stores it.

    Args:
        run: The imported run (its imported scores come first).
        found: The scorers' scores, in scorer order.
        specs: Each scorer's spec by the name its scores carry.
        rules: The scorers whose failure convicts the run.
        run_id: The stored id.
        not_applicable: Scorers that do not measure runs of its agent class.
        notes: What the scoring noted (after what the import repaired).
        now: The time stored as its creation.
    """
    subject = run.trajectory or run.flow
    if subject is None:  # an ImportedRun always carries one of the two
        raise InputError(f"{_BODY}: the run holds neither a trajectory nor a flow")
    scores = [*run.scores, *found]
    verdict = turn_failed(scores, rule_scorers=rules | {s.name for s in run.scores})
    decided = any(s.passed is not None and s.error is None for s in scores)
    passed = (not verdict.failed) if decided else None
    band: Band | None = None
    if passed is not None:
        reviewed = any(s.band == "review" for s in scores)
        band = "danger" if verdict.failed else "review" if reviewed else "healthy"
    cost, duration, tokens = _totals(subject)
    return StoredTrajectory(
        id=run_id,
        created_at=now or datetime.now(UTC),
        kind="flow" if isinstance(subject, FlowRun) else "trajectory",
        agent=subject.agent.name or UNNAMED_AGENT,
        agent_class=subject.agent.agent_class,
        agent_version=subject.agent.version,
        conversation_id=subject.conversation_id if isinstance(subject, Trajectory) else None,
        source_format=_source_format(run, subject),
        trace_id=subject.source.trace_id if subject.source is not None else None,
        trajectory_hash=run_hash(subject),
        status=subject.status,
        passed=passed,
        band=band,
        convicted_by=verdict.convicted_by,
        scores=scores,
        not_applicable=list(not_applicable),
        scorers=[specs[s.name] for s in found if s.name in specs],
        # What the importer repaired comes first: it is about the record itself.
        notes=[*run.warnings, *notes],
        cost_usd=cost,
        duration_ms=duration,
        total_tokens=tokens,
        trajectory=subject if isinstance(subject, Trajectory) else None,
        flow=subject if isinstance(subject, FlowRun) else None,
    )


def _source_format(run: ImportedRun, subject: Trajectory | FlowRun) -> str:
    if subject.source is not None and subject.source.format:
        return subject.source.format
    return run.source_format or ("flow" if isinstance(subject, FlowRun) else "trajectory")


def _totals(subject: Trajectory | FlowRun) -> tuple[float | None, float | None, int | None]:
    """Cost, wall-clock duration and tokens of a run, each None when it reports none."""
    try:
        duration = subject.duration
    except TypeError:  # zoned and zoneless step times cannot be ordered
        duration = None
    if isinstance(subject, FlowRun):
        tokens = [n.tokens for n in subject.nodes if n.tokens is not None]
        return subject.cost_usd, duration, sum(tokens) if tokens else None
    calls = [step for step in subject.walk() if isinstance(step, LlmCall)]
    reported = [c for c in calls if c.input_tokens is not None or c.output_tokens is not None]
    tokens_total = sum((c.input_tokens or 0) + (c.output_tokens or 0) for c in reported)
    costs = [c.cost_usd for c in calls if c.cost_usd is not None]
    return (math.fsum(costs) if costs else None), duration, (tokens_total if reported else None)


async def store_sample_trajectories(
    store: Store, path: str | os.PathLike[str], *, scoring: AgentRunScoring | None = None
) -> list[StoredTrajectory]:
    """Score and store the sample runs of a submissions file (``arbiter demo``'s).

    Each line is a submission: ``record``, its ``format`` (and ``mapping``), the
    ``assertions`` to score it against, and the ``agent`` name (and ``version``) to give
    its runs. The runs' ids follow from the line,
    so storing the samples again replaces them.

    Raises:
        InputError: The file cannot be read, or a line is not a valid submission.
    """
    scoring = scoring or agent_run_scoring()
    source = str(path)
    records: list[StoredTrajectory] = []
    for number, row in iter_json_lines(read_text(path, what="samples file"), source=source):
        if not isinstance(row, dict) or "record" not in row:
            raise InputError(f"{source}:{number}: expected a submission with a 'record'")
        found = import_record(row["record"], format=row.get("format"), mapping=row.get("mapping"))
        assertions = row.get("assertions")
        for index, run in enumerate(found):
            digest = hashlib.sha256(f"sample\x00{number}\x00{index}".encode()).hexdigest()
            records.append(
                await score_run(
                    named_run(run, row.get("agent"), row.get("version")),
                    scoring=scoring,
                    assertions=assertions if isinstance(assertions, dict) else None,
                    run_id="tr-" + digest[:24],
                )
            )
    key = resolve_signer(CONFIGURED)
    save_trajectories(store, records)
    attest_trajectories(store, records, signer=key)  # signed when a key is configured
    return records


def named_run(run: ImportedRun, agent: Any, version: Any = None) -> ImportedRun:
    """The run with its agent renamed (and versioned) when the submission says."""
    update = {key: value for key, value in (("name", agent), ("version", version)) if value}
    if not update:
        return run
    if run.trajectory is not None:
        identity = run.trajectory.agent.model_copy(update=update)
        run.trajectory = run.trajectory.model_copy(update={"agent": identity})
    if run.flow is not None:
        identity = run.flow.agent.model_copy(update=update)
        run.flow = run.flow.model_copy(update={"agent": identity})
    return run
