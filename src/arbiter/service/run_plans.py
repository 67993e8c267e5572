"""A run plan made ready and run: the steps every way of starting an offline run shares.

An :class:`~arbiter.service.eval_file.EvalPlan` (an eval file, command-line options, a
tool call of the MCP server, a test of the pytest plugin) is checked whole by
:func:`prepare_run` (dataset, system, scorers, references, inputs) before anything is
called or written; :func:`run_prepared` then runs it into the store and
:func:`gate_prepared` applies its gate::

    prepared = prepare_run(plan)
    report = await run_prepared(prepared, store, owner=None)
    decision = gate_prepared(prepared, store, report)   # None when the plan has no gate
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from arbiter.contract import Dataset, Report
from arbiter.datasets import load_dataset
from arbiter.errors import InputError
from arbiter.harness.gate import GateResult
from arbiter.harness.runner import ProgressCallback
from arbiter.scoring.base import BuiltScorer, ScoringContext
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.eval_file import EvalPlan
from arbiter.service.runs import check_inputs, gate_run, start_run
from arbiter.service.scoring import build_scorers, check_references, scorer_registry
from arbiter.store import Store
from arbiter.store.ownership_repository import set_owner
from arbiter.systems.base import SystemUnderTest
from arbiter.systems.factory import build_system
from arbiter.telemetry import Telemetry

__all__ = ["PreparedRun", "gate_prepared", "prepare_run", "refuse_agent_scorers", "run_prepared"]


@dataclass
class PreparedRun:
    """A plan checked whole: its dataset read, its system and scorers built."""

    plan: EvalPlan
    """The plan it was made from."""
    dataset: Dataset
    """The examples."""
    source: str
    """Where the dataset came from, for messages."""
    system: SystemUnderTest
    """The system under test."""
    scorers: list[BuiltScorer] = field(default_factory=list)
    """The run's scorers, built."""

    @property
    def n_examples(self) -> int:
        """Examples in scope (the plan's limit applied)."""
        limit = self.plan.config.limit
        return min(limit, len(self.dataset.examples)) if limit else len(self.dataset.examples)


def refuse_agent_scorers(plan: EvalPlan, registry: ScorerRegistry | None = None) -> None:
    """Refuse a scorer of agent runs: an offline run's systems answer with labels and
    texts, never a trajectory, so a scorer that reads only what an agent's run holds
    (the trajectory scorers, and model judges of retrieved chunks, tool calls or a
    plan) would abstain on every output and the run would report nothing while passing.

    Raises:
        InputError: A scorer needs a trajectory (``ScorerFactory.needs_trajectory``);
            the message names the commands that produce one.
    """
    registry = registry or scorer_registry()
    for spec in plan.scorers:
        factory = registry.factory_of(spec.name)
        if factory.needs_trajectory:
            where = f"{plan.source}: " if plan.source else ""
            judged = "asks a model about" if factory.kind == "model" else "grades"
            raise InputError(
                f"{where}scorer {spec.name!r} {judged} an agent's trajectory (its steps, "
                "tool calls, retrievals, plan), which the systems of arbiter run do not "
                "produce: it would abstain on every output; score traces with arbiter "
                f"agent score FILE --scorer {spec.name}, or run agent cases with arbiter "
                "agent run CASES --executor ..."
            )


def prepare_run(
    plan: EvalPlan,
    *,
    system: SystemUnderTest | None = None,
    registry: ScorerRegistry | None = None,
) -> PreparedRun:
    """Check a plan whole and build what its run needs; nothing is called or written.

    Args:
        plan: The run's plan.
        system: The system under test, when the caller holds it already (a live Python
            callable); None: built from ``plan.system``.
        registry: Where scorers are looked up; None: :func:`scorer_registry`.

    Raises:
        InputError: The dataset, the system, a scorer, a missing reference or an input
            the system cannot take (one line naming where).
    """
    registry = registry or scorer_registry()
    refuse_agent_scorers(plan, registry)
    data = load_dataset(plan.dataset_path, output_field=plan.output_field)
    source = str(plan.dataset_path)
    limit = plan.config.limit
    in_scope = data.examples[:limit] if limit else data.examples
    built = system if system is not None else build_system(plan.system, headers=plan.headers)
    check_references(in_scope, plan.scorers, source, registry=registry)
    check_inputs(built, list(in_scope), source)
    context = ScoringContext(use_cache=plan.config.uses_cache)
    scorers = build_scorers(plan.scorers, context=context, registry=registry)
    return PreparedRun(plan=plan, dataset=data, source=source, system=built, scorers=scorers)


async def run_prepared(
    prepared: PreparedRun,
    store: Store | None,
    *,
    owner: str | None = None,
    progress: ProgressCallback | None = None,
    on_start: Callable[[str], None] | None = None,
    telemetry: Telemetry | None = None,
    tags: Mapping[str, str] | None = None,
) -> Report:
    """Run a prepared plan, storing each result as it completes.

    Args:
        prepared: From :func:`prepare_run`.
        store: Where the run goes; None keeps it in memory.
        owner: The API key the run belongs to (set when it is stored, before any result,
            so the key sees it while it runs); None: nobody's.
        progress: Called with ``(done, total)``.
        on_start: Called with the run id once it is stored.
        telemetry: Where the run's span and figures go.
        tags: Tags added to the plan's own (they win on a shared key).
    """
    plan = prepared.plan

    def started(run_id: str) -> None:
        if store is not None and owner is not None:
            set_owner(store, "run", run_id, owner)
        if on_start is not None:
            on_start(run_id)

    return await start_run(
        prepared.system,
        prepared.dataset,
        config=plan.config,
        store=store,
        source=prepared.source,
        progress=progress,
        on_start=started,
        telemetry=telemetry,
        checked=True,
        scorers=prepared.scorers,
        name=plan.name,
        tags={**plan.tags, **(tags or {})},
    )


def gate_prepared(prepared: PreparedRun, store: Store, report: Report) -> GateResult | None:
    """Gate a finished run with its plan's gate; None when the plan has none.

    Raises:
        InputError: The plan's baseline is not comparable with the run.
        StoreError: The run (or its baseline) is not stored.
    """
    floors = prepared.plan.floors
    if floors is None or report.run_id is None:
        return None
    return gate_run(store, report.run_id, floors, baseline=prepared.plan.baseline)
