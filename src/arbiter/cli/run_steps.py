"""The steps behind ``arbiter run``: a plan from options or an eval file, then execution.

Both ways of giving a run (command-line options, ``arbiter run eval.toml``) become one
:class:`~arbiter.service.eval_file.EvalPlan`; it is checked whole (dataset, system,
scorers, inputs) before the store is opened, so bad input writes nothing, and
``--dry-run`` stops there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.cli.common import (
    echo_json,
    note,
    open_store,
    out_console,
    parse_label_map,
    progress_bar,
    read_argument_file,
    settings,
)

if TYPE_CHECKING:
    from arbiter.contract import Report
    from arbiter.service.engines import EngineChoice
    from arbiter.service.eval_file import EvalPlan
    from arbiter.service.runs import GateFloors
    from arbiter.store import Store

__all__ = ["Tracker", "execute", "finish", "plan_from_file", "plan_from_options", "resume"]


def parse_pairs(values: list[str], sep: str, option: str) -> dict[str, str]:
    """``NAME<sep>VALUE`` options as a dict (``--header``, ``--arg``, ``--tag``)."""
    from arbiter.errors import InputError

    pairs = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise InputError(f"{option} {value!r}: expected NAME{sep}VALUE")
        pairs[key.strip()] = rest.strip()
    return pairs


def _json_value(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _body_template(value: str | None) -> Any:
    from arbiter.datasets.jsonio import parse_json

    if value is None:
        return None
    source = value[1:] if value.startswith("@") else "--body-template"
    return parse_json(read_argument_file(value, "--body-template"), source=source)


class Tracker:
    """Remembers the run id and the pairs done, to say how to resume after Ctrl-C."""

    def __init__(self, progress: Any, *, quiet: bool = False) -> None:
        self.run_id: str | None = None
        self.done = self.total = 0
        self.progress = progress
        self.quiet = quiet

    def started(self, run_id: str) -> None:
        """Say the run is stored and how to resume it (unless quiet: then only Ctrl-C
        says it)."""
        self.run_id = run_id
        if not self.quiet:
            note(f"run {run_id} started (if interrupted: arbiter run --resume {run_id})")

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.progress(done, total)

    def interrupted(self) -> Exception:
        """The error to raise on Ctrl-C: what is stored and how to resume it."""
        from arbiter.errors import Interrupted

        if self.run_id is None:
            return Interrupted("before the run was stored; nothing to resume")
        return Interrupted(
            f"run {self.run_id} is stored with {self.done}/{self.total or '?'} pairs; "
            f"resume it with: arbiter run --resume {self.run_id}"
        )


def finish(report: Report, store: Store, *, as_json: bool, quiet: bool = False) -> None:
    """Print the report (and, unless ``quiet``, where it is stored); fail (exit 1) when
    every call failed. Warnings print even when quiet."""
    from arbiter.cli.render_run import report_renderable
    from arbiter.errors import SystemUnderTestError

    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        out_console().print(report_renderable(report))
        if not quiet:
            note(f"\nstored as run {report.run_id} in {store.describe()}")
    if report.mapped is not None and len(report.mapped.labels) == 1:
        note(
            f"warning: the label map sends every label to {report.mapped.labels[0]!r}: "
            "does it name the labels this dataset uses?",
            style="yellow",
        )
    if report.error_rate == 1.0:
        kind, message = next(iter(report.error_examples.items()), ("error", ""))
        raise SystemUnderTestError(
            f"every call failed; the first: {kind}: {message} "
            f"(all of them: arbiter report {report.run_id} --format junit)"
        )


def plan_from_file(path: Path) -> EvalPlan:
    """The plan an eval file describes, validated (``file:line: key: why`` on an error)."""
    from arbiter.service.eval_file import load_eval_file
    from arbiter.service.scoring import scorer_registry

    config = settings()
    return load_eval_file(
        path,
        registry=scorer_registry(),
        timeout=config.timeout,
        concurrency=config.concurrency,
        retries=config.retries,
    )


def plan_from_options(
    *,
    dataset: Path | None,
    kind: str,
    target: str | None,
    k: int | None,
    concurrency: int | None,
    timeout: float | None,
    retries: int | None,
    limit: int | None,
    label_map: str | None,
    binary: bool,
    seed: int | None,
    method: str,
    body_template: str | None,
    label_path: str | None,
    confidence_path: str | None,
    id_path: str | None,
    header: list[str],
    tool: str | None,
    arg: list[str],
    driver: str | None,
    scorer: list[str],
    gate_on: list[str],
    name: str | None,
    tag: list[str],
    cache: bool | None,
    output_field: str | None,
) -> EvalPlan:
    """The plan the command-line options describe, validated."""
    from arbiter.contract import RunConfig
    from arbiter.errors import InputError
    from arbiter.service.eval_file import EvalPlan
    from arbiter.service.runs import system_description
    from arbiter.service.scoring import scorer_specs
    from arbiter.systems.registry import SystemRegistry

    config = settings()
    if dataset is None:
        raise InputError("--dataset is required (or an eval file, or --resume RUN_ID)")
    if binary and label_map not in (None, "binary"):
        raise InputError("--binary and --label-map are exclusive; give one")
    systems = SystemRegistry.default()
    if output_field is not None and "output_field" not in systems.kind(kind).reads:
        raise InputError(
            f"--output-field is for --system {', '.join(systems.reading('output_field'))}"
        )
    mapping = parse_label_map("binary" if binary else label_map)
    headers = parse_pairs(header, ":", "--header")
    fixed: dict[str, Any] = {n: _json_value(v) for n, v in parse_pairs(arg, "=", "--arg").items()}
    if driver:
        fixed["driver"] = driver
    effective_timeout = timeout or config.timeout
    description = system_description(
        kind,
        target,
        method=method,
        body_template=_body_template(body_template),
        label_path=label_path,
        confidence_path=confidence_path,
        id_path=id_path,
        header_names=sorted(headers),
        tool=tool,
        fixed_arguments=fixed,
        timeout=effective_timeout,
        output_field=output_field or "output",
        systems=systems,
    )
    run_config = RunConfig(
        k=k or 1,
        concurrency=concurrency or config.concurrency,
        timeout=effective_timeout,
        retries=config.retries if retries is None else retries,
        label_map=mapping,
        limit=limit,
        seed=seed or 0,
        cache=cache,
    )
    return EvalPlan(
        source=None,
        file_hash=None,
        dataset_path=dataset,
        output_field=output_field or "output",
        system=description,
        headers=headers,
        config=run_config,
        scorers=scorer_specs(scorer, gate_on=gate_on, label_map=mapping),
        name=name,
        tags=parse_pairs(tag, "=", "--tag"),
        floors=None,
        baseline=None,
    )


def execute(plan: EvalPlan, *, dry_run: bool, as_json: bool, quiet: bool) -> None:
    """Check the plan whole, then (unless ``dry_run``) run it, report, and gate it."""
    from arbiter.datasets import load_dataset
    from arbiter.harness.describe import describe_system_short
    from arbiter.scoring.base import ScoringContext
    from arbiter.service.run_plans import refuse_agent_scorers
    from arbiter.service.runs import check_inputs, start_run
    from arbiter.service.scoring import build_scorers, check_references
    from arbiter.systems.factory import build_system
    from arbiter.telemetry import Telemetry

    refuse_agent_scorers(plan)
    data = load_dataset(plan.dataset_path, output_field=plan.output_field)
    source = str(plan.dataset_path)
    in_scope = data.examples[: plan.config.limit] if plan.config.limit else data.examples
    system = build_system(plan.system, headers=plan.headers)
    check_references(in_scope, plan.scorers, source)
    check_inputs(system, list(in_scope), source)
    # On the local engine, the run's rate limits gate its model calls as its system calls.
    system_key = describe_system_short(plan.system)
    gate = plan.engine.gate(system_key)
    context = ScoringContext(use_cache=plan.config.uses_cache, gate=gate)
    scorers = build_scorers(plan.scorers, context=context)
    if dry_run:
        _print_dry_run(plan, data.name, len(in_scope), as_json=as_json)
        return
    from arbiter.service.engines import opened_engine, run_parts

    telemetry = Telemetry.from_env()
    store = open_store()
    # On a cluster, the workers' model-call cache is the store's: every worker shares it.
    parts = run_parts(
        plan.system,
        plan.headers,
        plan.scorers,
        use_cache=plan.config.uses_cache,
        cache_url=store.url,
    )
    try:
        with (
            opened_engine(plan.engine, system=system_key, gate=gate) as engine,
            progress_bar(data.name, enabled=not quiet) as bar,
        ):
            if engine.name != "local" and not quiet:
                note(f"engine: {engine.describe()}")
            tracker = Tracker(bar, quiet=quiet)
            try:
                report = asyncio.run(
                    start_run(
                        system,
                        data,
                        config=plan.config,
                        store=store,
                        source=source,
                        progress=tracker,
                        on_start=tracker.started,
                        telemetry=telemetry,
                        checked=True,
                        scorers=scorers,
                        name=plan.name,
                        tags=plan.tags,
                        engine=engine,
                        parts=parts,
                    )
                )
            except KeyboardInterrupt:
                raise tracker.interrupted() from None
        finish(report, store, as_json=as_json, quiet=quiet)
        if plan.floors is not None:
            _gate(plan.floors, plan.baseline, store, report, as_json=as_json)
    finally:
        telemetry.shutdown()  # flushes the run's span and figures
        store.close()


def _print_dry_run(plan: EvalPlan, dataset_name: str, n_examples: int, *, as_json: bool) -> None:
    from arbiter import escape
    from arbiter.harness.describe import describe_system_short

    summary = {
        "ok": True,
        "source": str(plan.source) if plan.source else None,
        "dataset": dataset_name,
        "examples": n_examples,
        "pairs": n_examples * plan.config.k,
        "system": describe_system_short(plan.system),
        "scorers": [s.model_dump(mode="json") for s in plan.scorers],
        "gate": plan.floors is not None,
    }
    if as_json:
        echo_json(summary)
        return
    scorers = ", ".join(s.label + ("" if s.gating else " (reported only)") for s in plan.scorers)
    where = f"{plan.source}: " if plan.source else ""
    out_console().print(
        escape.terminal(
            f"{where}ok: {n_examples} examples of {dataset_name} x k={plan.config.k} "
            f"= {summary['pairs']} pairs through {summary['system']}, scored by {scorers}"
            + ("; gated" if plan.floors is not None else "")
            + ". Nothing was called."
        ),
        markup=False,
        highlight=False,
    )


def _gate(
    floors: GateFloors, baseline: str | None, store: Store, report: Report, *, as_json: bool
) -> None:
    """Gate the finished run (an eval file's ``[gate]``); a missed floor exits 1."""
    from arbiter.cli.render_run import render_gate
    from arbiter.errors import GateFailed
    from arbiter.service.runs import GateFloors, gate_run

    assert report.run_id is not None
    result = gate_run(store, report.run_id, floors, baseline=baseline)
    defaults = GateFloors()
    checks = {
        name: getattr(floors, name)
        for name in ("max_error_rate", "max_undecided_rate", "min_decided")
        if getattr(floors, name) != getattr(defaults, name)
    }
    if as_json:
        note(f"gate: {'passed' if result.passed else 'failed'}")
        for line in result.failures:
            note(f"  {line}")
    else:
        render_gate(
            result,
            out_console(),
            {
                "min_accuracy": floors.min_accuracy,
                "min_pass_k": floors.min_pass_k,
                "cohorts": floors.cohorts,
                "baseline": baseline,
                **checks,
            },
        )
    if not result.passed:
        raise GateFailed(f"gate failed for run {report.run_id}: {len(result.failures)} reason(s)")


def resume(
    run_id: str,
    given: dict[str, Any],
    *,
    as_json: bool,
    quiet: bool,
    engine: EngineChoice | None = None,
) -> None:
    """Continue a stored run; options given again must equal the run's own. A run stored
    with a gate (an eval file's ``[gate]``) is gated when it completes, as on its start."""
    from arbiter.datasets import load_dataset
    from arbiter.errors import InputError
    from arbiter.harness.describe import describe_system_short
    from arbiter.scoring.base import ScoringContext
    from arbiter.service.engines import opened_engine
    from arbiter.service.runs import GateFloors, resume_run, system_description
    from arbiter.telemetry import Telemetry

    refused = sorted(
        set(given) & {"--scorer", "--gate-on", "--name", "--tag", "--cache", "--output-field"}
    )
    if refused:
        raise InputError(
            f"--resume repeats the run's own scorers, name, tags and cache setting; "
            f"{', '.join(refused)} cannot be given with it"
        )
    config = settings()
    headers = parse_pairs(given.get("--header", []), ":", "--header")
    fixed: dict[str, Any] = {
        n: _json_value(v) for n, v in parse_pairs(given.get("--arg", []), "=", "--arg").items()
    }
    if given.get("--driver"):
        fixed["driver"] = given["--driver"]
    description = None
    if "--target" in given:
        description = system_description(
            str(given.get("--system", "python")),
            given["--target"],
            method=given.get("--method", "POST"),
            body_template=_body_template(given.get("--body-template")),
            label_path=given.get("--label-path"),
            confidence_path=given.get("--confidence-path"),
            id_path=given.get("--id-path"),
            header_names=sorted(headers),
            tool=given.get("--tool"),
            fixed_arguments=fixed,
            timeout=given.get("--timeout") or config.timeout,
        )
    binary = given.get("--binary")
    label_map = given.get("--label-map")
    mapping = parse_label_map("binary" if binary else label_map) if (binary or label_map) else None
    data = load_dataset(given["--dataset"]) if "--dataset" in given else None
    options = {
        "k": given.get("--k"),
        "concurrency": given.get("--concurrency"),
        "timeout": given.get("--timeout"),
        "retries": given.get("--retries"),
        "limit": given.get("--limit"),
        "seed": given.get("--seed"),
        "label_map": mapping,
        "dataset_hash": data.content_hash if data is not None else None,
        "system": description,
    }
    telemetry = Telemetry.from_env()
    store = open_store(config)
    try:
        tracker = Tracker(lambda done, total: None)
        info = store.get_run(run_id)
        tracker.run_id = info.id
        system_key = describe_system_short(info.system)
        limits = engine.gate(system_key) if engine is not None else None
        context = None
        if limits is not None:  # the local engine: the limits gate model calls too
            context = ScoringContext(use_cache=info.run_config.uses_cache, gate=limits)
        with (
            opened_engine(engine, system=system_key, gate=limits) as where,
            progress_bar(f"resuming {tracker.run_id}", enabled=not quiet) as bar,
        ):
            tracker.progress = bar
            try:
                report = asyncio.run(
                    resume_run(
                        store,
                        tracker.run_id,
                        headers=headers,
                        given={n: v for n, v in options.items() if v is not None},
                        progress=tracker,
                        telemetry=telemetry,
                        engine=where,
                        context=context,
                    )
                )
            except KeyboardInterrupt:
                raise tracker.interrupted() from None
        finish(report, store, as_json=as_json, quiet=quiet)
        gate = info.run_config.gate
        if gate is not None:
            _gate(GateFloors.of(gate), gate.baseline, store, report, as_json=as_json)
    finally:
        telemetry.shutdown()
        store.close()
