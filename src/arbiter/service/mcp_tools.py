"""The MCP server's tools as library functions: typed input in, typed answer out.

Each tool is one call into the service layer the command line and the REST API use
(:mod:`~arbiter.service.arbitrate`, :mod:`~arbiter.service.browse`,
:mod:`~arbiter.service.run_plans`, ...), made for a :class:`Caller`: what it may see and
who owns what it makes follow the REST API's rules (a key sees its own records, an admin
all of them; a record it may not see reads as one that does not exist). The transport
(stdio, or the server's ``/mcp``) says who the caller is; :mod:`arbiter.service.mcp_server`
wires these functions to the SDK.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from arbiter.config import Settings
from arbiter.contract import Case, RunConfig
from arbiter.errors import InputError, StoreError
from arbiter.harness.failures import Failures, find_failures
from arbiter.service.arbitrate import arbitrate
from arbiter.service.browse import (
    RunFilter,
    calibrate_visible,
    compare_visible_runs,
    list_runs,
    run_report,
)
from arbiter.service.eval_file import EvalPlan, load_eval_file
from arbiter.service.mcp_shapes import (
    ArbitrateIn,
    ArbitrateOut,
    CalibrationIn,
    CalibrationOut,
    CompareRunsIn,
    ComparisonOut,
    EvaluateIn,
    EvaluateOut,
    FailuresIn,
    GateOut,
    GetReportIn,
    ListRunsIn,
    RunReportOut,
    RunsOut,
    ScoreIn,
    ScoreTrajectoryIn,
    TrajectoriesOut,
    TrajectoryVerdict,
    TrustIn,
    TrustOut,
    VerificationOut,
    VerifyIn,
    VerifyOut,
)
from arbiter.service.output_scoring import score_output
from arbiter.service.run_plans import gate_prepared, prepare_run, run_prepared
from arbiter.service.runs import incomplete_note, system_description
from arbiter.service.scoring import scorer_registry, scorer_specs
from arbiter.service.trajectories import (
    AgentRunScoring,
    agent_run_scoring,
    import_record,
    score_and_store,
    score_run,
)
from arbiter.store import Store
from arbiter.store.ownership_repository import is_visible, visible_id

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from arbiter.contract import Score
    from arbiter.jury.jury import Jury
    from arbiter.trajectories.formats import TrajectoryFormatRegistry

__all__ = [
    "LOCAL",
    "Caller",
    "Engines",
    "Progress",
    "ToolScope",
    "arbitrate_tool",
    "blocking",
    "calibration_tool",
    "compare_runs_tool",
    "evaluate_tool",
    "failures_tool",
    "get_report_tool",
    "list_runs_tool",
    "read_report",
    "score_tool",
    "score_trajectory_tool",
    "trust_status_tool",
    "verify_tool",
]

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Reports ``(progress, total, message)`` to the caller of a tool (a no-op when it asked
for none)."""


@dataclass(frozen=True)
class Caller:
    """Who calls a tool: what it may see and who owns what it makes."""

    viewer: str | None
    """Whose records it sees: an API key's id, or None for every record."""
    owner: str | None
    """Who owns what it makes: its key's id, or None (nobody: a record of the CLI's)."""
    admin: bool
    """Whether it may run code on the server's machine (``evaluate``)."""


LOCAL = Caller(viewer=None, owner=None, admin=True)
"""The caller of ``arbiter mcp`` over stdio: the user at this machine, as at the CLI."""


@dataclass
class Engines:
    """What a server builds once and keeps: the jury, the agent scoring, the formats."""

    _jury: Jury | None = None
    _scoring: AgentRunScoring | None = None
    _formats: TrajectoryFormatRegistry | None = None

    def jury(self) -> Jury:
        """The offline critics of the default roster, built on first use."""
        if self._jury is None:
            from arbiter.jury.critics import DEFAULT_ROSTER
            from arbiter.jury.jury import Jury

            self._jury = Jury(DEFAULT_ROSTER)
        return self._jury

    def scoring(self) -> AgentRunScoring:
        """The deterministic trajectory scorers, built on first use."""
        if self._scoring is None:
            self._scoring = agent_run_scoring()
        return self._scoring

    def formats(self) -> TrajectoryFormatRegistry:
        """The registered trajectory formats (built-ins and plugins), read on first use."""
        if self._formats is None:
            from arbiter.trajectories.formats import TrajectoryFormatRegistry

            self._formats = TrajectoryFormatRegistry.default()
        return self._formats


@dataclass
class ToolScope:
    """Everything one tool call works with."""

    store: Store
    """The store the server serves."""
    caller: Caller
    """Who is calling."""
    settings: Settings
    """Arbiter's settings (timeouts, signing key, ...)."""
    engines: Engines = field(default_factory=Engines)
    """What the server keeps between calls."""


def blocking(function: Callable[[], Any]) -> Awaitable[Any]:
    """Run a store read off the event loop, as the REST API's plain routes are."""
    return anyio.to_thread.run_sync(function)


async def arbitrate_tool(scope: ToolScope, args: ArbitrateIn, progress: Progress) -> ArbitrateOut:
    """Judge one output with the jury; the verdict is stored, owned by the caller."""
    case = Case(
        id=args.id or f"mcp-{secrets.token_hex(6)}",
        task=args.task,
        context=args.context,
        output=args.output,
    )
    stored = await arbitrate(scope.store, scope.engines.jury(), case, owner=scope.caller.owner)
    return ArbitrateOut(
        verdict_id=stored.id, run_id=stored.run_id, case_id=case.id, verdict=stored.verdict
    )


async def score_tool(scope: ToolScope, args: ScoreIn, progress: Progress) -> Score:
    """Score one output with one registered scorer (nothing is stored)."""
    return await score_output(
        args.output,
        scorer=args.scorer,
        args=args.args,
        expected=args.expected,
        expected_label=args.expected_label,
        input=args.input,
    )


async def score_trajectory_tool(
    scope: ToolScope, args: ScoreTrajectoryIn, progress: Progress
) -> TrajectoriesOut:
    """Score the agent runs of one record with the deterministic trajectory scorers."""
    engines = scope.engines
    runs = import_record(
        args.record, format=args.format, mapping=args.mapping, registry=engines.formats()
    )
    if not runs:
        raise InputError("record: it holds no agent run")
    if args.store:
        records = await score_and_store(
            scope.store, runs, scoring=engines.scoring(), owner=scope.caller.owner
        )
    else:
        records = [await score_run(run, scoring=engines.scoring()) for run in runs]
    verdicts = [
        TrajectoryVerdict(
            run_id=r.id,
            agent=r.agent,
            source_format=r.source_format,
            status=r.status,
            passed=r.passed,
            band=r.band,
            convicted_by=r.convicted_by,
            scores=r.scores,
            notes=r.notes,
        )
        for r in records
    ]
    return TrajectoriesOut(runs=verdicts, stored=args.store)


def _plan(scope: ToolScope, args: EvaluateIn) -> EvalPlan:
    """The run ``args`` describe: an eval file as it is, or the options of a run."""
    config = scope.settings
    if (args.eval_file is None) == (args.dataset is None):
        raise InputError("evaluate: give either eval_file or dataset (with system and target)")
    if args.eval_file is not None:
        given = [
            name
            for name in ("target", "scorers", "limit", "name", "tags")
            if name in args.model_fields_set
        ]
        if given or args.k != 1 or args.system != "python":
            shown = ", ".join(given or ["k/system"])
            raise InputError(
                f"evaluate: an eval file holds the whole run; {shown} cannot be given with it"
            )
        return load_eval_file(
            args.eval_file,
            registry=scorer_registry(),
            timeout=config.timeout,
            concurrency=config.concurrency,
            retries=config.retries,
        )
    assert args.dataset is not None
    description = system_description(args.system, args.target, timeout=config.timeout)
    run_config = RunConfig(
        k=args.k,
        concurrency=config.concurrency,
        timeout=config.timeout,
        retries=config.retries,
        limit=args.limit,
    )
    return EvalPlan(
        source=None,
        file_hash=None,
        dataset_path=Path(args.dataset),
        output_field="output",
        system=description,
        headers={},
        config=run_config,
        scorers=scorer_specs(args.scorers),
        name=args.name,
        tags=dict(args.tags),
        floors=None,
        baseline=None,
    )


async def evaluate_tool(scope: ToolScope, args: EvaluateIn, progress: Progress) -> EvaluateOut:
    """Start a run, report its progress, and answer with its id and headline figures
    (and its gate's decision, for an eval file with a gate).

    Raises:
        InputError: The caller may not run code here (a key that is not an admin's), or
            the plan is invalid (one line naming where).
    """
    if not scope.caller.admin:
        raise InputError(
            "evaluate runs a system on the server's machine: it needs an admin key "
            "(arbiter keys create --admin)"
        )
    prepared = await blocking(lambda: prepare_run(_plan(scope, args)))
    sent, receive = anyio.create_memory_object_stream[tuple[float, float | None, str | None]](
        max_buffer_size=float("inf")
    )

    def on_start(run_id: str) -> None:
        sent.send_nowait((0, None, f"run {run_id} started"))

    def on_progress(done: int, total: int) -> None:
        sent.send_nowait((done, total, f"{done}/{total} pairs"))

    async def relay() -> None:
        async with receive:
            async for done, total, message in receive:
                await progress(done, total, message)

    async with anyio.create_task_group() as group:
        group.start_soon(relay)
        try:
            report = await run_prepared(
                prepared,
                scope.store,
                owner=scope.caller.owner,
                progress=on_progress,
                on_start=on_start,
            )
        finally:
            sent.close()
    assert report.run_id is not None
    decision = await blocking(lambda: gate_prepared(prepared, scope.store, report))
    gate = None
    if decision is not None:
        gate = GateOut(
            passed=decision.passed, failures=decision.failures, warnings=decision.warnings
        )
    return EvaluateOut(
        run_id=report.run_id,
        status=report.status,
        dataset=report.dataset,
        n_examples=report.n_examples,
        k=report.k,
        pass_rate=report.accuracy,
        pass_hat_k=report.pass_hat_k,
        error_rate=report.error_rate,
        gate=gate,
    )


def read_report(scope: ToolScope, run_id: str) -> RunReportOut:
    """A run's header and recomputed report, if the caller may see it.

    Raises:
        StoreError: No such run, or one the caller may not see (the same message).
    """
    stored = run_report(scope.store, run_id, viewer=scope.caller.viewer)
    return RunReportOut(info=stored.info, report=stored.report, note=incomplete_note(stored))


async def get_report_tool(scope: ToolScope, args: GetReportIn, progress: Progress) -> RunReportOut:
    """One run's report: every figure with its interval, and the run's header."""
    return await blocking(lambda: read_report(scope, args.run_id))  # type: ignore[no-any-return]


async def list_runs_tool(scope: ToolScope, args: ListRunsIn, progress: Progress) -> RunsOut:
    """The runs the caller may see, newest first, under the filters."""
    where = RunFilter(
        tags=dict(args.tags),
        system=args.system,
        dataset=args.dataset,
        status=args.status,
        viewer=scope.caller.viewer,
    )
    listing = await blocking(
        lambda: list_runs(scope.store, where, offset=args.offset, limit=args.limit)
    )
    return RunsOut(items=listing.items, total=listing.total, next_offset=listing.next_offset)


async def compare_runs_tool(
    scope: ToolScope, args: CompareRunsIn, progress: Progress
) -> ComparisonOut:
    """Two runs compared example by example: paired intervals, McNemar, flips."""
    found = await blocking(
        lambda: compare_visible_runs(
            scope.store, args.run_a, args.run_b, viewer=scope.caller.viewer
        )
    )
    return ComparisonOut(diff=found.diff, warnings=found.warnings)


async def failures_tool(scope: ToolScope, args: FailuresIn, progress: Progress) -> Failures:
    """The examples not passed by every scorer, worst first, with each scorer's reason."""

    def read() -> Failures:
        stored = run_report(scope.store, args.run_id, viewer=scope.caller.viewer)
        return find_failures(
            stored.report, stored.examples, stored.results, limit=args.limit, max_chars=500
        )

    return await blocking(read)  # type: ignore[no-any-return]


async def calibration_tool(
    scope: ToolScope, args: CalibrationIn, progress: Progress
) -> CalibrationOut:
    """Each judge's agreement with the humans (kappa with its interval) per dimension."""
    report = await blocking(
        lambda: calibrate_visible(
            scope.store, viewer=scope.caller.viewer, judge=args.judge, dimension=args.dimension
        )
    )
    return CalibrationOut.of(report)


def _trusted_key(settings: Settings) -> Ed25519PublicKey | None:
    """The configured signing key's public half (its private file, or the ``.pub.pem``
    beside it); None when no key is configured."""
    from arbiter.attest import load_verify_key, public_key_path

    configured = settings.signing_key
    if configured is None:
        return None
    if not configured.exists() and public_key_path(configured).exists():
        return load_verify_key(public_key_path(configured))
    return load_verify_key(configured)


def _visible_target(store: Store, target: str, viewer: str | None) -> str:
    """``target`` when the caller may see the record it names (a run, a jury run, a
    verdict by number), as ``arbiter verify`` reads it.

    Raises:
        InputError: It names nothing the caller may see (the same whether it exists).
    """
    if viewer is None:
        return target
    for kind in ("run", "jury_run"):
        try:
            return visible_id(store, kind, target, viewer)
        except StoreError:
            continue
    if target.isdigit() and is_visible(store, "verdict", target, viewer):
        return target
    raise InputError(f"{target!r} names no run, jury run or verdict this key may see")


async def verify_tool(scope: ToolScope, args: VerifyIn, progress: Progress) -> VerifyOut:
    """Check signatures: a stored record's (re-derived from the store) or an artifact's."""
    from arbiter.attest import verify_artifact
    from arbiter.service.verification import verify_stored

    if (args.target is None) == (args.artifact is None):
        raise InputError("verify: give either target (a stored record) or artifact (its text)")

    def check() -> VerifyOut:
        trusted = _trusted_key(scope.settings)
        if args.artifact is not None:
            checks = [verify_artifact(args.artifact.encode("utf-8"), trusted)]
        else:
            assert args.target is not None
            target = _visible_target(scope.store, args.target, scope.caller.viewer)
            checks = verify_stored(scope.store, target, trusted)
        shown = [
            VerificationOut(
                kind=c.kind,
                record_id=c.record_id,
                ok=c.ok,
                key_id=c.key_id,
                problems=c.problems,
                notes=c.notes,
            )
            for c in checks
        ]
        ok = all(c.ok for c in checks)
        return VerifyOut(
            checks=shown, verified=ok and trusted is not None, signer_trusted=trusted is not None
        )

    return await blocking(check)  # type: ignore[no-any-return]


async def trust_status_tool(scope: ToolScope, args: TrustIn, progress: Progress) -> TrustOut:
    """Each agent's trust (state, conduct, integrity, freezes), as the trust pages show it."""
    from arbiter.service.trust import trust_policy, trust_statuses

    def read() -> TrustOut:
        policy = trust_policy(scope.settings)
        found = trust_statuses(
            scope.store, viewer=scope.caller.viewer, agent=args.agent, policy=policy
        )
        return TrustOut(agents=found)

    return await blocking(read)  # type: ignore[no-any-return]
