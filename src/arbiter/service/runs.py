"""Offline runs as library functions: start, resume, read back, compare and gate.

The command line and a server call these; they print nothing, never start an event
loop of their own, and report progress through the callbacks they are given. Every
check that can fail on user input runs before anything is written or called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.contract import (
    Completeness,
    Dataset,
    Example,
    PairResult,
    Report,
    RunConfig,
    RunGate,
    RunInfo,
)
from arbiter.engines.base import Engine
from arbiter.errors import InputError, StoreError
from arbiter.harness.comparability import baseline_refusals
from arbiter.harness.describe import describe_system_short
from arbiter.harness.gate import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_UNDECIDED_RATE,
    DEFAULT_MIN_DECIDED,
    GateResult,
    evaluate_gate,
)
from arbiter.harness.report import build_report, per_example_outcomes
from arbiter.harness.runner import (
    ProgressCallback,
    RunParts,
    resume_eval_async,
    run_eval_async,
    stored_scorers,
)
from arbiter.http.redact import REDACTED, redact_url
from arbiter.scoring.base import Scorer, ScoringContext
from arbiter.service.attestation import CONFIGURED, Signer, attest_gate, attest_run, resolve_signer
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store
from arbiter.systems.base import SystemUnderTest
from arbiter.systems.factory import build_system
from arbiter.systems.registry import SystemOptions, SystemRegistry
from arbiter.telemetry import Telemetry

__all__ = [
    "RESUMABLE_OPTIONS",
    "GateFloors",
    "StoredRun",
    "check_inputs",
    "check_resume_options",
    "gate_run",
    "incomplete_note",
    "load_run",
    "resume_run",
    "start_run",
    "system_description",
]

RESUMABLE_OPTIONS = ("k", "concurrency", "timeout", "retries", "label_map", "limit", "seed")
"""Run options a resume repeats from the stored run; giving another value is refused."""


@dataclass(frozen=True)
class StoredRun:
    """A run read back from the store, with its recomputed report."""

    info: RunInfo
    """The run's header."""
    config: RunConfig
    """Its options."""
    examples: list[Example]
    """The examples in scope, in dataset order."""
    results: list[PairResult]
    """Every stored pair result."""
    report: Report
    """The report recomputed from the results."""

    @property
    def correct(self) -> dict[str, list[bool | None]]:
        """Per-example outcome per repetition (None: unknown)."""
        return per_example_outcomes(self.examples, self.results)

    @property
    def complete(self) -> bool:
        """Whether every (example, repetition) pair has a result."""
        return len(self.results) >= self.info.n_pairs


def system_description(
    kind: str,
    target: str | None,
    *,
    method: str = "POST",
    body_template: Any = None,
    label_path: str | None = None,
    confidence_path: str | None = None,
    id_path: str | None = None,
    header_names: list[str] | None = None,
    tool: str | None = None,
    fixed_arguments: Mapping[str, Any] | None = None,
    timeout: float = 30.0,
    output_field: str = "output",
    systems: SystemRegistry | None = None,
) -> dict[str, Any]:
    """The stored, rebuildable description of a system under test, from run options.

    Args:
        kind: A registered system kind (``python``, ``http``, ``mcp``, ``precomputed``
            or a plugin's; see :mod:`arbiter.systems.registry`).
        target: What the kind calls: a callable (``package.module:function`` or
            ``path/to/file.py:function``), a URL, ...
        method: http: request method.
        body_template: http: parsed JSON template with ``{{input.field}}`` placeholders.
        label_path: http/mcp: dotted path of the label in the answer.
        confidence_path: http/mcp: dotted path of the confidence.
        id_path: http/mcp: dotted path of the answer's id.
        header_names: Names of the headers sent (their values are never stored).
        tool: mcp: the tool to call.
        fixed_arguments: mcp: arguments merged into every call.
        timeout: Seconds per call.
        output_field: precomputed: where each row's output sits (top level or in input).
        systems: Where kinds are looked up; None: the built-ins and installed plugins.

    Raises:
        InputError: The kind is unknown, or the kind refuses the options (a target or
            tool missing, a precomputed system given one).
    """
    registry = systems if systems is not None else SystemRegistry.default()
    options = SystemOptions(
        target=target,
        method=method,
        body_template=body_template,
        label_path=label_path,
        confidence_path=confidence_path,
        id_path=id_path,
        header_names=tuple(header_names or ()),
        tool=tool,
        fixed_arguments=dict(fixed_arguments or {}),
        timeout=timeout,
        output_field=output_field,
    )
    return registry.describe(kind, options)


def check_inputs(system: SystemUnderTest, examples: list[Example], source: str) -> None:
    """Ask the system whether it can be called with every example, before any call.

    A system that can tell (the ``http`` system renders its body template) refuses an
    input it could never send; that is invalid input, not a failed call.

    Raises:
        InputError: ``source: example 'id': why``.
    """
    validate = getattr(system, "validate_input", None)
    if not callable(validate):
        return
    for example in examples:
        try:
            validate(example.input)
        except InputError as exc:
            raise InputError(f"{source}: example {example.id!r}: {exc}") from None


async def start_run(
    system: SystemUnderTest,
    dataset: Dataset,
    *,
    config: RunConfig,
    store: Store | None,
    source: str | None = None,
    progress: ProgressCallback | None = None,
    on_start: Callable[[str], None] | None = None,
    telemetry: Telemetry | None = None,
    checked: bool = False,
    scorers: Sequence[Scorer] | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    signer: Signer = CONFIGURED,
    engine: Engine | None = None,
    parts: RunParts | None = None,
) -> Report:
    """Check every input against the system, then run the dataset through it.

    Args:
        system: The system under test (built from a description, or any object).
        dataset: The examples.
        config: The run's options (``cache``, ``eval_file_hash`` and ``gate`` included).
        store: Where results go as they complete; None keeps them in memory.
        source: Where the dataset came from, for messages.
        progress: Called with ``(done, total)``.
        on_start: Called with the run id once it is stored.
        telemetry: Where the run's span and figures go.
        checked: The caller ran :func:`check_inputs` already (before opening the store).
        scorers: The run's scorers (see :mod:`arbiter.service.scoring`); None: ``label``.
        name: A name for the stored run.
        tags: Tags for the stored run.
        signer: Who signs the stored report when the run ends (default: the configured
            key, if any; see :mod:`arbiter.service.attestation`).
        engine: Where the pairs run (see :mod:`arbiter.service.engines`); None: here.
        parts: How a worker of ``engine`` builds the system and scorers
            (:func:`~arbiter.service.engines.run_parts`); needed by the Ray engine.

    Raises:
        InputError: An example cannot be sent to the system, or the configured signing
            key cannot be read (nothing is written).
    """
    if not checked:
        examples = dataset.examples[: config.limit] if config.limit else list(dataset.examples)
        check_inputs(system, examples, source or dataset.name)
    key = resolve_signer(signer) if store is not None else None
    report = await run_eval_async(
        system,
        dataset,
        k=config.k,
        concurrency=config.concurrency,
        timeout=config.timeout,
        retries=config.retries,
        label_map=config.label_map,
        limit=config.limit,
        seed=config.seed,
        scorers=scorers,
        cache=config.cache,
        eval_file_hash=config.eval_file_hash,
        gate=config.gate,
        name=name,
        tags=tags,
        store=store,
        progress=progress,
        on_start=on_start,
        telemetry=telemetry,
        engine=engine,
        parts=parts,
    )
    if store is not None and key is not None and report.run_id is not None:
        attest_run(store, load_run(store, report.run_id), signer=key)
    return report


def check_resume_options(info: RunInfo, given: Mapping[str, Any]) -> None:
    """Refuse run options that contradict the ones the run was started with.

    A resume repeats the stored options exactly (anything else would mix two runs in
    one); an option given again with its stored value is fine.

    Args:
        info: The stored run.
        given: The options given with the resume, by name (``k``, ``dataset_hash``,
            ``system``, ...); only those the user actually gave.

    Raises:
        InputError: One line naming each conflicting option and its stored value.
    """
    stored = info.run_config.model_dump(mode="json")
    conflicts = []
    for name, value in given.items():
        if name in RESUMABLE_OPTIONS and value != stored.get(name):
            conflicts.append(
                f"--{name.replace('_', '-')} {value!r} (the run has {stored.get(name)!r})"
            )
        elif name == "dataset_hash" and value != info.dataset_hash:
            conflicts.append(
                f"--dataset (hash {value[:12]}; the run's is {info.dataset_hash[:12]})"
            )
        elif name == "system" and _shown(value) != describe_system_short(info.system):
            conflicts.append(
                f"the system {_shown(value)} (the run's is {describe_system_short(info.system)})"
            )
    if conflicts:
        raise InputError(
            f"--resume {info.id}: a resume repeats the run's own options; these differ: "
            + "; ".join(conflicts)
            + " (start a new run to change them)"
        )


def _shown(description: Mapping[str, Any]) -> str:
    """A description's short form with the URL's secrets hidden, as it is stored."""
    url = description.get("url")
    if isinstance(url, str):
        description = {**description, "url": redact_url(url)}
    return describe_system_short(description)


def _resumed_system(info: RunInfo, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The description to rebuild: the stored one, with the URL given again if it held a
    secret (a password or ``?api_key=``) that was never stored."""
    description = dict(info.system)
    url = description.get("url")
    if not isinstance(url, str) or REDACTED not in url:
        return description
    again = (given or {}).get("system")
    if isinstance(again, Mapping) and isinstance(again.get("url"), str):
        return {**description, "url": again["url"]}
    raise InputError(
        f"--resume {info.id}: the run's URL held a secret that is not stored ({url}); "
        "give the URL again with --target"
    )


async def resume_run(
    store: Store,
    run_id: str,
    *,
    headers: Mapping[str, str] | None = None,
    given: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    telemetry: Telemetry | None = None,
    context: ScoringContext | None = None,
    signer: Signer = CONFIGURED,
    engine: Engine | None = None,
) -> Report:
    """Continue a stored run with only its missing pairs, system and scorers rebuilt.

    Args:
        store: The store holding the run.
        run_id: Its id (a unique prefix is enough).
        headers: Header values the system needs again (never stored).
        given: Options given with the resume (see :func:`check_resume_options`).
        progress: Called with ``(done, total)``.
        telemetry: Where the run's span and figures go.
        context: Providers and cache of model scorers; None: as the run was started.
        signer: Who signs the stored report when the run ends (default: the configured key).
        engine: Where the missing pairs run; None: here (any engine may resume any run).

    Raises:
        StoreError: No such run.
        InputError: A given option contradicts the stored run, or a header is missing.
        RunBusy: Another live process is executing the run.
    """
    info = store.get_run(run_id)
    check_resume_options(info, given or {})
    config = info.run_config
    scorers = stored_scorers(
        config, scorer_registry(), context=context or ScoringContext(use_cache=config.uses_cache)
    )
    description = _resumed_system(info, given)
    system = build_system(description, headers=headers)
    key = resolve_signer(signer)
    parts = None
    if engine is not None and engine.name != "local":
        from arbiter.service.engines import run_parts

        specs = [s.spec for s in scorers]
        parts = run_parts(
            description, headers, specs, use_cache=config.uses_cache, cache_url=store.url
        )
    report = await resume_eval_async(
        store,
        info.id,
        system,
        scorers=scorers,
        progress=progress,
        telemetry=telemetry,
        engine=engine,
        parts=parts,
    )
    if key is not None:
        attest_run(store, load_run(store, info.id), signer=key)
    return report


def load_run(store: Store, run_id: str) -> StoredRun:
    """Read a run and recompute its report from the stored results.

    Raises:
        StoreError: No such run, or it has no result yet.
    """
    info = store.get_run(run_id)
    config = info.run_config
    dataset = store.load_dataset(info.dataset_hash)
    examples = dataset.examples[: config.limit] if config.limit else list(dataset.examples)
    results = store.results(info.id)
    if not results:
        raise StoreError(f"run {info.id} has no results yet")
    report = build_report(
        examples,
        results,
        dataset_name=dataset.name,
        dataset_hash=dataset.content_hash,
        system=describe_system_short(info.system),
        k=config.k,
        seed=config.seed,
        scorers=config.scorers or [s.spec for s in stored_scorers(config)],
        run_id=info.id,
        elapsed_seconds=info.elapsed_seconds or None,
        status=info.status,
        completeness=Completeness(done=len(results), expected=info.n_pairs),
    )
    return StoredRun(info=info, config=config, examples=examples, results=results, report=report)


IMPORTED_KIND = "imported-log"
"""The ``kind`` of an imported run's system description (its ``format`` and ``target``
say which log)."""


def incomplete_note(run: StoredRun) -> str | None:
    """A line saying a run is not complete and how to finish it; None when it is."""
    return run_note(run.info, done=len(run.results))


def run_note(info: RunInfo, *, done: int | None = None) -> str | None:
    """:func:`incomplete_note` from a run's header: ``done`` pairs (default: its
    ``n_done``)."""
    done = info.n_done if done is None else done
    if done >= info.n_pairs and info.status == "completed":
        return None
    kind = info.system.get("kind")
    if kind == IMPORTED_KIND:
        # An imported log has no system to call again: only a complete log completes it.
        return (
            f"run {info.id} is {info.status} with {done}/{info.n_pairs} "
            "pairs; it was imported from a log that lacks some epochs, so import the "
            "complete log again"
        )
    # Agent runs are resumed by the agent command, which rebuilds their executor.
    command = "agent run" if isinstance(kind, str) and kind.startswith("agent-") else "run"
    return (
        f"run {info.id} is {info.status} with {done}/{info.n_pairs} "
        f"pairs; finish it with: arbiter {command} --resume {info.id}"
    )


@dataclass(frozen=True)
class GateFloors:
    """What a run must reach to pass the gate."""

    min_accuracy: float | None = None
    """Floor on accuracy (mapped when a label map was used)."""
    min_pass_k: float | None = None
    """Floor on pass^k."""
    cohorts: dict[str, float] = field(default_factory=dict)
    """Floor on accuracy per cohort."""
    epsilon: float = 0.0
    """Drop against the baseline tolerated even when significant."""
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    """Largest share of pairs whose call failed; past it the run fails whatever the floors."""
    max_undecided_rate: float = DEFAULT_MAX_UNDECIDED_RATE
    """Largest share of pairs without a decided outcome; past it the run fails."""
    min_decided: int = DEFAULT_MIN_DECIDED
    """Fewest decided pairs the run needs to pass."""

    @classmethod
    def of(cls, gate: RunGate) -> GateFloors:
        """The floors and run checks of a run's stored gate (its baseline is apart:
        ``gate.baseline``)."""
        return cls(
            min_accuracy=gate.min_accuracy,
            min_pass_k=gate.min_pass_k,
            cohorts=dict(gate.cohorts),
            epsilon=gate.epsilon,
            max_error_rate=gate.max_error_rate,
            max_undecided_rate=gate.max_undecided_rate,
            min_decided=gate.min_decided,
        )


def gate_run(
    store: Store,
    run_id: str,
    floors: GateFloors,
    *,
    baseline: str | None = None,
    signer: Signer = CONFIGURED,
) -> GateResult:
    """Pass or fail a stored run; a run that is not complete never passes, nor one whose
    calls failed or whose pairs are undecided past the floors' run checks.

    With a signing key (``signer``, default: the configured one) the decision is signed
    and kept, bound to the run's dataset, results and these floors.

    Raises:
        StoreError: A run does not exist or has no result.
        InputError: The baseline is not comparable (another k or label map, other
            gating scorers).
    """
    current = load_run(store, run_id)
    base = load_run(store, baseline) if baseline else None
    cautions: list[str] = []
    if base is not None:
        blocking, cautions = baseline_refusals(
            current.info, base.info, current.report.scorers, base.report.scorers
        )
        if blocking:
            raise InputError(
                f"cannot gate {current.info.id} against baseline {base.info.id}: "
                + "; ".join(blocking)
            )
    result = evaluate_gate(
        current.report,
        current.correct,
        baseline=base.report if base else None,
        baseline_correct=base.correct if base else None,
        min_accuracy=floors.min_accuracy,
        min_pass_k=floors.min_pass_k,
        cohort_floors=floors.cohorts,
        epsilon=floors.epsilon,
        seed=current.config.seed,
        max_error_rate=floors.max_error_rate,
        max_undecided_rate=floors.max_undecided_rate,
        min_decided=floors.min_decided,
    )
    late = [f"baseline: {note}"] if base is not None and (note := incomplete_note(base)) else []
    if cautions or late:
        result = result.model_copy(update={"warnings": [*cautions, *result.warnings, *late]})
    attest_gate(store, current, floors, base.info.id if base else None, result, signer=signer)
    return result
