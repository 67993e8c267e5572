"""``arbiter run``, ``arbiter runs`` and ``arbiter demo``.

Options are parsed here; :mod:`arbiter.cli.run_steps` turns them (or an eval file) into
a plan and hands it to :mod:`arbiter.service`. Engines are imported inside the
commands, never at import time.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperOption

from arbiter.cli.app import ArbiterCommand, app
from arbiter.cli.common import (
    TableColumn,
    echo_json,
    err_console,
    fitted_table,
    note,
    open_store,
    out_console,
    progress_bar,
)

__all__ = ["demo", "run", "runs"]


def _system_kind(value: str | None) -> str | None:
    """``--system``: a registered kind (built-in or a plugin's); a usage error otherwise."""
    if value is None:
        return None
    from arbiter.systems.registry import SystemRegistry

    registry = SystemRegistry.default()
    if value not in registry:
        known = ", ".join(registry.names())
        raise typer.BadParameter(f"{value!r} is not a system kind; known: {known}")
    return value


def _system_help() -> str:
    """``--system``'s help: every kind registered now (built-ins and plugins'), by name."""
    from rich.markup import escape as escape_markup

    from arbiter.systems.registry import DEFAULT_KIND, SystemRegistry

    # A plugin's entry-point name is third-party text: inert as Rich markup.
    names = ", ".join(escape_markup(name) for name in SystemRegistry.default().names())
    return f"Kind of system under test: {names} (plugins add theirs) \\[default: {DEFAULT_KIND}]."


class _RunCommand(ArbiterCommand):
    """``arbiter run``, whose ``--system`` help lists the kinds registered when it is shown.

    The registry is read only when the help is printed, so a command line that runs a
    dataset scans no entry points for it.
    """

    def format_help(self, ctx: Any, formatter: Any) -> None:
        for param in self.params:
            if param.name == "system" and isinstance(param, TyperOption):
                param.help = _system_help()
        super().format_help(ctx, formatter)


@app.command(cls=_RunCommand)
def run(
    eval_file: Annotated[
        Path | None,
        typer.Argument(
            help="An eval file (TOML) holding the dataset, system, scorers, options and gate; "
            "no other run option is taken with it.",
            show_default=False,
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", "--fixture", help="Labelled dataset: .json, .jsonl or .csv."),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option(
            help="Kind of system under test, built in or a plugin's \\[default: python].",
            callback=_system_kind,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            "--url",
            help="python: 'package.module:function' or 'path/to/file.py:function'; "
            "http/mcp: the URL.",
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option("--k", min=1, help="Repetitions per example (pass^k) \\[default: 1]."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Calls in flight at once (default: ARBITER_CONCURRENCY or 16)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(min=0.001, help="Seconds per call (default: ARBITER_TIMEOUT or 30)."),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Retries of connect errors, timeouts, 429, 5xx (default: ARBITER_RETRIES or 2).",
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N examples.")] = None,
    label_map: Annotated[
        str | None,
        typer.Option(help="'binary' (anything but 'low' → 'high') or a JSON file {from: to}."),
    ] = None,
    binary: Annotated[bool, typer.Option("--binary", help="Same as --label-map binary.")] = False,
    seed: Annotated[
        int | None, typer.Option(help="Seed of the bootstrap intervals \\[default: 0].")
    ] = None,
    method: Annotated[str, typer.Option(help="http: request method.")] = "POST",
    body_template: Annotated[
        str | None,
        typer.Option(help="http: JSON body with {{input.field}} placeholders, or @file."),
    ] = None,
    label_path: Annotated[
        str | None, typer.Option(help="http/mcp: dotted path of the label in the answer.")
    ] = None,
    confidence_path: Annotated[
        str | None, typer.Option(help="http/mcp: dotted path of the confidence.")
    ] = None,
    id_path: Annotated[
        str | None, typer.Option(help="http/mcp: dotted path of the answer's id.")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option(help="http/mcp: extra header 'Name: value' (repeatable).")
    ] = None,
    tool: Annotated[str | None, typer.Option(help="mcp: the tool to call.")] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(help="mcp: fixed tool argument name=value, value JSON or text (repeatable)."),
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option(help="mcp: per-request provider override, sent as the 'driver' argument."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue a stored run: only its missing pairs run, with its own options "
            "(a different --k, --dataset, ... is refused)."
        ),
    ] = None,
    scorer: Annotated[
        list[str] | None,
        typer.Option(
            "--scorer",
            help="NAME\\[:ARG=VALUE,...] (repeatable): how each output is scored "
            "\\[default: label]; see arbiter scorers.",
        ),
    ] = None,
    gate_on: Annotated[
        list[str] | None,
        typer.Option(
            "--gate-on",
            help="Scorer that decides pass / fail (repeatable) \\[default: every scorer].",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="A name for the run.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="A tag KEY=VALUE for the run (repeatable).")
    ] = None,
    cache: Annotated[
        bool | None,
        typer.Option(
            "--cache/--no-cache",
            help="Answer model scorers' requests from the on-disk cache "
            "\\[default: only when --k is 1].",
        ),
    ] = None,
    output_field: Annotated[
        str | None,
        typer.Option(
            help="precomputed: the field holding each row's output, at the top level of the "
            "row or inside input \\[default: output].",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Check everything (file, dataset, system, scorers), call nothing."
        ),
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="local|ray",
            help="Where the pairs run: this process, or a Ray cluster (pip install "
            "'arbiter\\[ray]'); same results either way \\[default: local, or the eval file's].",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="With --engine ray: a cluster's address, or 'auto' (the cluster this machine "
            "knows, else a local one started for the run) \\[default: auto].",
        ),
    ] = None,
    rate_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--rate-limit",
            metavar="[PROVIDER=]N/s",
            help="At most N calls a second (N/min: a minute) to the system, or with "
            "PROVIDER= model calls to that provider (openai, anthropic, llama_cpp, ...); "
            "',burst=B' lets B start at once after a quiet spell, ',concurrency=C' holds a "
            "provider to C calls in flight. On --engine ray every worker shares it. "
            "Repeatable; replaces an eval file's run.rate_limit.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Only the report (and warnings, errors): no progress bar, no 'started' or "
            "'stored as' notes.",
        ),
    ] = False,
) -> None:
    """Run a dataset through a system under test and score every output.

    Either give the run as options (--dataset, --target, --scorer, ...) or as an eval file
    (arbiter run eval.toml). With a \\[gate] in the eval file, a missed floor exits 1.
    """
    from arbiter.cli.run_steps import execute, plan_from_file, plan_from_options
    from arbiter.cli.run_steps import resume as resume_run
    from arbiter.errors import InputError
    from arbiter.service.engines import EngineChoice

    # Where the pairs run, and how fast calls go, is not what is run: it may be given with
    # an eval file or a resume.
    placed = engine is not None or ray_address is not None
    where = (
        EngineChoice.of(engine, ray_address, rate_limits=rate_limit or ())
        if placed or rate_limit
        else None
    )

    given = {
        name: value
        for name, value in {
            "--dataset": dataset,
            "--system": system,
            "--target": target,
            "--k": k,
            "--concurrency": concurrency,
            "--timeout": timeout,
            "--retries": retries,
            "--limit": limit,
            "--label-map": label_map,
            "--binary": binary or None,
            "--seed": seed,
            "--body-template": body_template,
            "--label-path": label_path,
            "--confidence-path": confidence_path,
            "--id-path": id_path,
            "--header": header or None,
            "--tool": tool,
            "--arg": arg or None,
            "--driver": driver,
            "--scorer": scorer or None,
            "--gate-on": gate_on or None,
            "--name": name,
            "--tag": tag or None,
            "--cache": cache,
            "--output-field": output_field,
            "--resume": resume,
        }.items()
        if value is not None
    }
    if method != "POST":
        given["--method"] = method
    if resume is not None:
        if eval_file is not None or dry_run:
            raise InputError("--resume continues a stored run: give no eval file or --dry-run")
        resume_run(resume, given, as_json=as_json, quiet=quiet, engine=where)
        return
    if eval_file is not None:
        if given:
            raise InputError(
                f"{eval_file}: an eval file holds the whole run; {', '.join(sorted(given))} "
                "cannot be given with it (edit the file, or drop the file and give options)"
            )
        plan = plan_from_file(eval_file)
        if where is not None:
            own = plan.engine
            where = dataclasses.replace(
                where,
                name=where.name if placed else own.name,
                ray_address=where.ray_address if placed else own.ray_address,
                rate_limits=where.rate_limits if rate_limit else own.rate_limits,
            )
            plan = dataclasses.replace(plan, engine=where)
    else:
        plan = plan_from_options(
            dataset=dataset,
            kind=system or "python",
            target=target,
            k=k,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            limit=limit,
            label_map=label_map,
            binary=binary,
            seed=seed,
            method=method,
            body_template=body_template,
            label_path=label_path,
            confidence_path=confidence_path,
            id_path=id_path,
            header=header or [],
            tool=tool,
            arg=arg or [],
            driver=driver,
            scorer=scorer or [],
            gate_on=gate_on or [],
            name=name,
            tag=tag or [],
            cache=cache,
            output_field=output_field,
        )
        if where is not None:
            plan = dataclasses.replace(plan, engine=where)
    execute(plan, dry_run=dry_run, as_json=as_json, quiet=quiet)


RUNS_COLUMNS = (
    TableColumn("run", keep=0),
    TableColumn("name", keep=6, wrap=True),
    TableColumn("status", keep=1),
    TableColumn("created (UTC)", keep=8, wrap=True, narrowest=10),
    TableColumn("dataset", keep=5, wrap=True),
    TableColumn("system", keep=10, wrap=True),
    TableColumn("scorers", keep=9, wrap=True),
    TableColumn("k", keep=11, right=True),
    TableColumn("done", keep=4, right=True),
    TableColumn("accuracy", keep=2, right=True),
    TableColumn("pass^k", keep=3, right=True),
    TableColumn("seconds", keep=12, right=True),
)
"""The columns of ``arbiter runs``; at a narrow width those of the highest ``keep`` go
first, and the run id is never cut."""


@app.command()
def runs(
    limit: Annotated[int, typer.Option(min=1, help="How many recent runs to list.")] = 20,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="Only runs tagged KEY=VALUE (repeatable: all must match)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored runs, newest first, with each one's accuracy and pass^k."""
    from rich.text import Text

    from arbiter import escape
    from arbiter.cli.run_steps import parse_pairs

    wanted = parse_pairs(tag or [], "=", "--tag")
    store = open_store()
    try:
        infos = store.list_runs(limit=limit, tags=wanted or None)
    finally:
        store.close()
    if as_json:
        echo_json(
            [{**i.model_dump(mode="json"), "elapsed_seconds": i.elapsed_seconds} for i in infos]
        )
        return
    if not infos:
        if wanted:
            note(f"no run in {store.describe()} is tagged {' '.join(tag or [])}")
        else:
            note(f"no runs yet in {store.describe()}; try: arbiter demo")
        return
    rows: list[list[str | Text]] = []
    for i in infos:
        target = i.system.get("target") or i.system.get("url") or i.system.get("field") or "?"
        summary = i.summary or {}
        scorers = (
            summary.get("scorers")
            or [s.get("alias") or s.get("name") for s in i.config.get("scorers", [])]
            or ["label"]
        )
        tags = " ".join(f"{k}={v}" for k, v in sorted(i.tags.items()))
        rows.append(
            [
                i.id,
                Text(
                    escape.terminal(
                        " ".join(filter(None, [i.name, tags and f"[{tags}]"])), single_line=True
                    )
                ),
                i.status,
                f"{i.created_at:%Y-%m-%d %H:%M:%S}",
                Text(escape.terminal(i.dataset_name, single_line=True)),
                Text(escape.terminal(f"{i.system.get('kind')}:{target}", single_line=True)),
                Text(escape.terminal(", ".join(map(str, scorers)), single_line=True)),
                str(i.config.get("k", 1)),
                f"{i.n_done}/{i.n_pairs}",
                _percent(summary.get("accuracy")),
                _percent(summary.get("pass_hat_k")),
                f"{i.elapsed_seconds:.1f}",
            ]
        )
    console = out_console()
    table, hidden = fitted_table(
        f"runs in {escape.terminal(store.describe())}", RUNS_COLUMNS, rows, console.width
    )
    console.print(table)
    if hidden:
        note(
            f"{console.width} columns: {', '.join(hidden)} left out "
            "(a wider terminal shows them; --json has every field)"
        )


def _percent(value: object) -> str:
    return f"{100 * value:.1f}%" if isinstance(value, int | float) else "-"


@app.command()
def demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Evaluate the bundled transaction-risk screener on its bundled labelled data."""
    import asyncio

    from arbiter.cli.run_steps import finish
    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.demo import DEMO_LABEL_MAP, DEMO_TARGET, dataset_path
    from arbiter.service.runs import start_run
    from arbiter.systems.python import PythonSystem

    data = load_dataset(dataset_path())
    err_console().print(
        f"[bold]arbiter demo[/]: {len(data.examples)} labelled transactions through "
        f"{DEMO_TARGET}\nThe screener answers low/medium/high/critical; the ground truth is "
        "binary (high = confirmed threat), so the mapped figures are the ones to judge.\n"
    )
    store = open_store()
    try:
        with progress_bar("demo", enabled=not quiet) as progress:
            report = asyncio.run(
                start_run(
                    PythonSystem(DEMO_TARGET),
                    data,
                    config=RunConfig(label_map=DEMO_LABEL_MAP),
                    store=store,
                    progress=progress,
                )
            )
        finish(report, store, as_json=as_json)
    finally:
        store.close()
    note(
        "\nnext:\n"
        f"  arbiter report {report.run_id} --format markdown   # for a CI step summary\n"
        f"  arbiter gate {report.run_id} --min-accuracy 0.9 --cohort wire=0.8  # exit 1 on a miss\n"
        f"  arbiter run --dataset {dataset_path()} --target {DEMO_TARGET} --binary --k 3\n"
        "  arbiter runs"
    )
    if not as_json:  # stdout holds only the report's JSON under --json
        from arbiter.cli.demo_agents import demo_agents
        from arbiter.cli.jury import demo_jury

        demo_jury()
        demo_agents()
