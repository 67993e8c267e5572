"""``arbiter agent score | run | mine | diff``: agent trajectories scored, run, compared.

The work is the service layer's (:mod:`arbiter.service.agents`, ``agents_run``,
``agent_mining``, ``agent_diff``); this module parses options, runs the coroutine and
prints.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, out_console
from arbiter.cli.files import write_output
from arbiter.cli.gate_options import (
    MaxErrorRateOption,
    MaxUndecidedRateOption,
    MinDecidedOption,
    run_checks,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from arbiter.contract import AgentCase
    from arbiter.engines.base import CallGate
    from arbiter.scoring.base import BuiltScorer
    from arbiter.trajectories.loader import ImportedRun

__all__ = ["agent_app", "diff", "formats", "mine", "run", "score"]

agent_app = typer.Typer(
    name="agent",
    help="Agent trajectories: score imported traces, run agent cases, mine cases, diff runs.",
    no_args_is_help=True,
)
app.add_typer(agent_app, name="agent")

GateOption = Literal["reward", "scorers", "both"]

_FILES = typer.Argument(help="Trajectory files (format told from their content).")


def _format_names(incomplete: str) -> list[str]:
    """The registered formats' names that start with what was typed (shell completion)."""
    from arbiter.trajectories.formats import TrajectoryFormatRegistry

    return [n for n in TrajectoryFormatRegistry.default().names() if n.startswith(incomplete)]


FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="FORMAT",
        autocompletion=_format_names,
        help="The files' format, instead of telling it: a format `arbiter agent formats` "
        "lists (plugins add theirs).",
    ),
]
MappingOption = Annotated[
    str | None,
    typer.Option(
        "--mapping", help="A mapping file (or a shipped mapping's name) for platform records."
    ),
]
ScorerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--scorer",
        "-s",
        help="NAME[:ARG=VALUE,...]; repeat for several. Default: every trajectory scorer "
        "that applies to the runs' agent classes.",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="local|ray",
        help="Where the work runs: this process, or a Ray cluster (pip install "
        "'arbiter\\[ray]'); same results either way \\[default: local].",
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --engine ray: a cluster's address, or 'auto' (the cluster this machine "
        "knows, else a local one started for the command) \\[default: auto].",
    ),
]
GateOnOption = Annotated[
    GateOption | None,
    typer.Option(
        "--gate-on",
        help="What decides a run's verdict: the imported reward, the gating scorers, or "
        "both. Default: the reward when runs carry one, else the scorers.",
    ),
]


def _runs(files: list[Path], format: str | None, mapping: str | None = None) -> list[ImportedRun]:
    return list(_iter_runs(files, format, mapping))


def _iter_runs(
    files: list[Path], format: str | None, mapping: str | None = None
) -> Iterator[ImportedRun]:
    """The files' runs, read one at a time; an error at the end when there is none."""
    from arbiter.errors import InputError
    from arbiter.trajectories.loader import iter_runs

    for file in files:
        if not file.is_file():
            raise InputError(
                f"{file}: no such file" if not file.exists() else f"{file}: not a file"
            )
    found = 0
    for run in iter_runs(files, format=format, mapping=mapping):
        found += 1
        yield run
    if not found:
        raise InputError(f"{', '.join(map(str, files))}: no trajectory found")


def _scorers(
    options: list[str] | None,
    runs: Sequence[ImportedRun],
    cases: Mapping[str, AgentCase] | None = None,
    gate: CallGate | None = None,
) -> list[BuiltScorer]:
    from arbiter.service.agents import trajectory_scorers

    context = None
    if gate is not None:
        from arbiter.scoring.base import ScoringContext

        context = ScoringContext(gate=gate)
    return trajectory_scorers(options or [], runs=runs, cases=cases, context=context)


@agent_app.command("score")
def score(
    files: Annotated[list[Path], _FILES],
    format: FormatOption = None,
    mapping: MappingOption = None,
    cases: Annotated[
        Path | None,
        typer.Option(help="Agent case file (JSONL): runs are scored against the case of their id."),
    ] = None,
    scorer: ScorerOption = None,
    gate_on: GateOnOption = None,
    min_pass_rate: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Fail (exit 1) when the pass rate is below this."),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap intervals.")] = 0,
    limit: Annotated[int, typer.Option(min=0, help="Runs listed that did not pass.")] = 20,
    store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Store the scored runs as the server does, so `arbiter serve` shows them "
            "on the agents' pages (the same file stored again replaces its runs).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    engine: EngineOption = None,
    ray_address: RayAddressOption = None,
    rate_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--rate-limit",
            metavar="PROVIDER=N/s",
            help="At most N model calls a second (N/min: a minute) to the provider PROVIDER "
            "by the judges named with --scorer; ',burst=B' lets B start at once after a "
            "quiet spell, ',concurrency=C' holds it to C calls in flight. On --engine ray "
            "every worker shares it. Repeatable.",
        ),
    ] = None,
) -> None:
    """Score imported trajectories with the deterministic trajectory scorers; pass^k."""
    from arbiter.errors import GateFailed
    from arbiter.service.agent_work import score_agent_runs_on
    from arbiter.service.engines import EngineChoice, opened_engine

    engine_choice = EngineChoice.of(
        engine, ray_address, rate_limits=rate_limit or (), calls_system=False
    )
    gate = engine_choice.gate(None)  # the local engine's; a cluster's workers gate their own

    by_id = None
    if cases is not None:
        from arbiter.trajectories.cases import load_cases

        by_id = {case.id: case for case in load_cases(cases)}
    from arbiter.telemetry import Telemetry

    # With OTEL_EXPORTER_OTLP_ENDPOINT set, every verdict is exported as a
    # gen_ai.evaluation.result event linked to the span the run was imported from.
    telemetry = Telemetry.from_env()
    opened = None
    if store:
        from arbiter.cli.common import open_store

        opened = open_store()
    try:
        if engine_choice.name == "local":
            from arbiter.service.agents import DefaultScorers, score_agent_runs

            # Read, scored and counted one run at a time: memory stays flat whatever
            # the files hold (the terminal lists only the first runs that did not pass).
            report = asyncio.run(
                score_agent_runs(
                    _iter_runs(files, format, mapping),
                    _scorers(scorer, (), by_id, gate) if scorer else DefaultScorers(),
                    cases=by_id,
                    gate_on=gate_on,
                    seed=seed,
                    telemetry=telemetry,
                    store=opened,
                    keep_runs=None if as_json else limit,
                )
            )
        else:
            runs = _runs(files, format, mapping)
            with opened_engine(engine_choice) as chosen:
                report = asyncio.run(
                    score_agent_runs_on(
                        chosen,
                        runs,
                        _scorers(scorer, runs, by_id, gate),
                        cases=by_id,
                        gate_on=gate_on,
                        seed=seed,
                        telemetry=telemetry,
                        store=opened,
                    )
                )
        if opened is not None:
            note(f"stored {report.n_trajectories} runs in {opened.describe()}")
    finally:
        telemetry.shutdown()
        if opened is not None:
            opened.close()
    if as_json:
        echo_json(report.to_json())
    else:
        from arbiter.cli.agent_render import score_renderable

        out_console().print(score_renderable(report, limit=limit))
    if min_pass_rate is not None:
        rate = report.pass_rate
        if rate is None or rate.estimate < min_pass_rate:
            shown = "no run decided" if rate is None else f"{100 * rate.estimate:.1f}%"
            note(f"gate failed: pass rate {shown} is below {100 * min_pass_rate:.1f}%")
            raise GateFailed("pass rate below --min-pass-rate")


@agent_app.command("run")
def run(
    cases: Annotated[
        Path | None, typer.Argument(help="Case file (JSONL); optional with --resume.")
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            "-e",
            help="python:MODULE:FN, http:agent.toml or precomputed:FILE.",
        ),
    ] = None,
    k: Annotated[int | None, typer.Option("--k", "-k", min=1, help="Runs per case.")] = None,
    resume: Annotated[
        str | None, typer.Option(help="Continue a stored agent run: only its missing pairs.")
    ] = None,
    scorer: ScorerOption = None,
    gate_on: Annotated[
        list[str] | None,
        typer.Option("--gate-on", help="A scorer that decides pass / fail; repeat for several."),
    ] = None,
    min_pass_rate: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Floor on the share of runs that passed."),
    ] = None,
    min_pass_k: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Floor on pass^k.")
    ] = None,
    baseline: Annotated[
        str | None, typer.Option(help="A stored run whose significant regressions fail.")
    ] = None,
    max_error_rate: MaxErrorRateOption = None,
    max_undecided_rate: MaxUndecidedRateOption = None,
    min_decided: MinDecidedOption = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Cases in flight at once.")] = 4,
    timeout: Annotated[
        float | None, typer.Option(min=0.001, help="Seconds one case may take.")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of intervals and retry jitter.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    engine: EngineOption = None,
    ray_address: RayAddressOption = None,
    rate_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--rate-limit",
            metavar="[PROVIDER=]N/s",
            help="At most N calls a second (N/min: a minute) to the executor, or with "
            "PROVIDER= model calls to that provider (openai, anthropic, llama_cpp, ...); "
            "',burst=B' lets B start at once after a quiet spell, ',concurrency=C' holds a "
            "provider to C calls in flight. On --engine ray every worker shares it. "
            "Repeatable.",
        ),
    ] = None,
) -> None:
    """Run agent cases k times through an executor: stored, resumable, gated."""
    from arbiter.cli.common import open_store, progress_bar
    from arbiter.cli.render_run import render_gate, report_renderable
    from arbiter.contract import RunGate
    from arbiter.errors import GateFailed, Interrupted
    from arbiter.service.agents_run import agent_gate, agent_system_name, run_agent_cases
    from arbiter.service.engines import EngineChoice, opened_engine
    from arbiter.telemetry import Telemetry

    engine_choice = EngineChoice.of(engine, ray_address, rate_limits=rate_limit or ())

    floors = {"min_accuracy": min_pass_rate, "min_pass_k": min_pass_k, "baseline": baseline}
    checks = run_checks(max_error_rate, max_undecided_rate, min_decided)
    given = any(v is not None for v in floors.values()) or checks
    gate = RunGate(**floors, **checks) if given else None
    started: list[str] = []

    def on_start(run_id: str) -> None:
        started.append(run_id)
        note(f"run {run_id} started (if interrupted: arbiter agent run --resume {run_id})")

    telemetry = Telemetry.from_env()
    store = open_store()
    try:
        # The limits' name of the executor's calls, as `arbiter run` names its system's.
        system = (
            agent_system_name(executor, store=store, resume=resume)
            if engine_choice.rate_limits
            else None
        )
        call_gate = engine_choice.gate(system)
        label = resume or (cases.name if cases is not None else "agent run")
        with (
            opened_engine(engine_choice, system=system, gate=call_gate) as chosen,
            progress_bar(label, enabled=not quiet) as bar,
        ):
            try:
                report = asyncio.run(
                    run_agent_cases(
                        cases,
                        executor=executor,
                        store=store,
                        k=k,
                        scorers=scorer or None,
                        gate_on=gate_on or (),
                        gate=gate,
                        resume=resume,
                        concurrency=concurrency,
                        timeout=timeout,
                        seed=seed,
                        progress=bar,
                        on_start=on_start,
                        telemetry=telemetry,
                        engine=chosen,
                        call_gate=call_gate,
                    )
                )
            except KeyboardInterrupt:
                run_id = resume or (started[0] if started else None)
                where = f"resume it with: arbiter agent run --resume {run_id}" if run_id else ""
                raise Interrupted(where or "before the run was stored; nothing to resume") from None
        if as_json:
            echo_json(report.model_dump(mode="json"))
        else:
            out_console().print(report_renderable(report))
            note(f"\nstored as run {report.run_id} in {store.describe()}")
        result = agent_gate(store, report)
        if result is not None:
            if as_json:
                for line in result.failures:
                    note(f"gate: {line}")
            else:
                shown = {"min_pass_rate": min_pass_rate, "min_pass_k": min_pass_k}
                render_gate(result, out_console(), {**shown, "baseline": baseline, **checks})
            if not result.passed:
                raise GateFailed(f"gate failed for run {report.run_id}")
    finally:
        telemetry.shutdown()
        store.close()


@agent_app.command("mine")
def mine(
    files: Annotated[list[Path], _FILES],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Case file to write (JSONL); default: stdout."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
    format: FormatOption = None,
    mapping: MappingOption = None,
    scorer: ScorerOption = None,
    gate_on: GateOnOption = None,
    margin: Annotated[
        float, typer.Option(min=1.0, help="Observed cost and latency times this: the ceilings.")
    ] = 1.5,
    min_self_corrections: Annotated[
        int, typer.Option(min=1, help="Self-corrections from which a run is mined.")
    ] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print a summary as JSON.")] = False,
) -> None:
    """Mine golden agent cases from anomalous runs (errored, failed, self-corrected)."""
    from arbiter.errors import InputError
    from arbiter.service.agent_mining import mine_runs

    if out is not None and out.exists() and not force:
        raise InputError(f"--out {out}: the file exists; pass --force to replace it")
    runs = _runs(files, format, mapping)
    mined = asyncio.run(
        mine_runs(
            runs,
            _scorers(scorer, runs),
            gate_on=gate_on,
            margin=margin,
            min_self_corrections=min_self_corrections,
        )
    )
    if out is not None:
        write_output(out, mined.jsonl(), replace=force, option="--out")
    if as_json:
        echo_json(
            {
                "examined": mined.examined,
                "mined": len(mined.cases),
                "reasons": dict(sorted(mined.reasons.items())),
                "without_query": mined.without_query,
                "out": str(out) if out is not None else None,
                "cases": mined.cases,
            }
        )
    elif out is None:
        typer.echo(mined.jsonl(), nl=False)
    else:
        from arbiter.cli.agent_render import mined_renderable

        out_console().print(mined_renderable(mined, out=str(out)))


@agent_app.command("diff")
def diff(
    a: Annotated[Path, typer.Argument(help="Trajectory file A (before).")],
    b: Annotated[Path, typer.Argument(help="Trajectory file B (after).")],
    format: FormatOption = None,
    mapping: MappingOption = None,
    scorer: ScorerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the diff as JSON.")] = False,
) -> None:
    """Per case: the tool calls that differ between A and B, and the verdicts that flipped."""
    from arbiter.service.agent_diff import diff_json, diff_runs

    runs_a, runs_b = _runs([a], format, mapping), _runs([b], format, mapping)
    result = asyncio.run(diff_runs(runs_a, runs_b, _scorers(scorer, [*runs_a, *runs_b])))
    if as_json:
        echo_json(diff_json(result))
        return
    from arbiter.cli.agent_render import diff_renderable

    out_console().print(diff_renderable(result, name_a=str(a), name_b=str(b)))


@agent_app.command("formats")
def formats(
    as_json: Annotated[bool, typer.Option("--json", help="Print the formats as JSON.")] = False,
) -> None:
    """The trajectory formats `agent score`, `mine` and `diff` read (plugins' included)."""
    from arbiter.trajectories.formats import TrajectoryFormatRegistry

    found = TrajectoryFormatRegistry.default().formats()
    if as_json:
        echo_json(
            [
                {
                    "name": f.name,
                    "summary": f.summary,
                    "told_from_content": f.resemblance is not None or bool(f.suffixes),
                    "accepts_records": f.read_record is not None,
                    "reads_spans": f.spans is not None,
                }
                for f in found
            ]
        )
        return
    from arbiter.cli.agent_render import formats_renderable

    out_console().print(formats_renderable(found))
