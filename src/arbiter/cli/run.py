"""``arbiter run``, ``arbiter runs`` and ``arbiter demo``.

Options are parsed here and handed to :mod:`arbiter.service.runs`; engines are imported
inside the commands, never at import time.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arbiter.cli.app import app
from arbiter.cli.common import (
    echo_json,
    err_console,
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
    from arbiter.store import Store

__all__ = ["demo", "run", "runs"]


class SystemKind(StrEnum):
    """Kinds of system under test."""

    python = "python"
    http = "http"
    mcp = "mcp"


def _parse_pairs(values: list[str], sep: str, option: str) -> dict[str, str]:
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


class _Tracker:
    """Remembers the run id and the pairs done, to say how to resume after Ctrl-C."""

    def __init__(self, progress: Any) -> None:
        self.run_id: str | None = None
        self.done = self.total = 0
        self._progress = progress

    def started(self, run_id: str) -> None:
        self.run_id = run_id
        note(f"run {run_id} started (if interrupted: arbiter run --resume {run_id})")

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self._progress(done, total)

    def interrupted(self) -> Exception:
        from arbiter.errors import Interrupted

        if self.run_id is None:
            return Interrupted("before the run was stored; nothing to resume")
        return Interrupted(
            f"run {self.run_id} is stored with {self.done}/{self.total or '?'} pairs; "
            f"resume it with: arbiter run --resume {self.run_id}"
        )


def _finish(report: Report, store: Store, *, as_json: bool) -> None:
    from arbiter.cli.render_run import report_renderable
    from arbiter.errors import SystemUnderTestError

    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        out_console().print(report_renderable(report))
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


@app.command()
def run(
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", "--fixture", help="Labelled dataset: .json, .jsonl or .csv."),
    ] = None,
    system: Annotated[
        SystemKind | None, typer.Option(help="Kind of system under test [default: python].")
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
        typer.Option("--k", min=1, help="Repetitions per example (pass^k) [default: 1]."),
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
        int | None, typer.Option(help="Seed of the bootstrap intervals [default: 0].")
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
            help="NAME[:ARG=VALUE,...] (repeatable): how each output is scored "
            "[default: label]; see arbiter scorers.",
        ),
    ] = None,
    gate_on: Annotated[
        list[str] | None,
        typer.Option(
            "--gate-on",
            help="Scorer that decides pass / fail (repeatable) [default: every scorer].",
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
            "[default: only when --k is 1].",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Run a dataset through a system under test and score every output."""
    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.errors import InputError
    from arbiter.scoring.base import ScoringContext
    from arbiter.service.runs import check_inputs, resume_run, start_run, system_description
    from arbiter.service.scoring import build_scorers, check_references, scorer_specs
    from arbiter.systems.factory import build_system
    from arbiter.telemetry import Telemetry

    config = settings()
    headers = _parse_pairs(header or [], ":", "--header")
    if binary and label_map not in (None, "binary"):
        raise InputError("--binary and --label-map are exclusive; give one")
    mapping = parse_label_map("binary" if binary else label_map)
    data = load_dataset(dataset) if dataset is not None else None
    fixed: dict[str, Any] = {
        name: _json_value(v) for name, v in _parse_pairs(arg or [], "=", "--arg").items()
    }
    if driver:
        fixed["driver"] = driver
    kind = (system or SystemKind.python).value
    effective_timeout = timeout or config.timeout
    description = None
    if resume is None or target is not None:
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
        )
    telemetry = Telemetry.from_env()
    if resume is not None:
        if scorer or gate_on or name or tag or cache is not None:
            raise InputError(
                "--resume repeats the run's own scorers, name, tags and cache setting; "
                "--scorer, --gate-on, --name, --tag and --cache are not taken with it"
            )
        given = {
            "k": k,
            "concurrency": concurrency,
            "timeout": timeout,
            "retries": retries,
            "limit": limit,
            "seed": seed,
            "label_map": mapping,
            "dataset_hash": data.content_hash if data is not None else None,
            "system": description,
        }
        store = open_store(config)
        try:
            tracker = _Tracker(lambda done, total: None)
            tracker.run_id = store.get_run(resume).id
            with progress_bar(f"resuming {tracker.run_id}", enabled=not quiet) as bar:
                tracker._progress = bar
                try:
                    report = asyncio.run(
                        resume_run(
                            store,
                            tracker.run_id,
                            headers=headers,
                            given={n: v for n, v in given.items() if v is not None},
                            progress=tracker,
                            telemetry=telemetry,
                        )
                    )
                except KeyboardInterrupt:
                    raise tracker.interrupted() from None
            _finish(report, store, as_json=as_json)
        finally:
            telemetry.shutdown()
            store.close()
        return
    # Everything is validated before the store is opened: bad input writes nothing.
    if data is None:
        raise InputError("--dataset is required (or --resume RUN_ID)")
    assert description is not None
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
    specs = scorer_specs(scorer or [], gate_on=gate_on or [], label_map=mapping)
    tags = _parse_pairs(tag or [], "=", "--tag")
    sut = build_system(description, headers=headers)
    in_scope = data.examples[:limit] if limit else data.examples
    check_references(in_scope, specs, str(dataset))
    check_inputs(sut, list(in_scope), str(dataset))
    scorers = build_scorers(specs, context=ScoringContext(use_cache=run_config.uses_cache))
    store = open_store(config)
    try:
        with progress_bar(data.name, enabled=not quiet) as bar:
            tracker = _Tracker(bar)
            try:
                report = asyncio.run(
                    start_run(
                        sut,
                        data,
                        config=run_config,
                        store=store,
                        source=str(dataset),
                        progress=tracker,
                        on_start=tracker.started,
                        telemetry=telemetry,
                        checked=True,
                        scorers=scorers,
                        name=name,
                        tags=tags,
                    )
                )
            except KeyboardInterrupt:
                raise tracker.interrupted() from None
        _finish(report, store, as_json=as_json)
    finally:
        telemetry.shutdown()  # flushes the run's span and figures
        store.close()


@app.command()
def runs(
    limit: Annotated[int, typer.Option(min=1, help="How many recent runs to list.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored runs, newest first."""
    from rich.table import Table
    from rich.text import Text

    from arbiter import escape

    store = open_store()
    try:
        infos = store.list_runs(limit=limit)
    finally:
        store.close()
    if as_json:
        echo_json(
            [{**i.model_dump(mode="json"), "elapsed_seconds": i.elapsed_seconds} for i in infos]
        )
        return
    if not infos:
        note(f"no runs yet in {store.describe()}; try: arbiter demo")
        return
    table = Table(title=f"runs in {escape.terminal(store.describe())}", title_justify="left")
    for column in ("run", "status", "created (UTC)", "dataset", "system", "k", "done", "seconds"):
        table.add_column(
            column,
            justify="right" if column in ("k", "done", "seconds") else "left",
            no_wrap=column == "run",
            min_width=22 if column == "run" else None,
        )
    for i in infos:
        target = i.system.get("target") or i.system.get("url") or "?"
        table.add_row(
            i.id,
            i.status,
            f"{i.created_at:%Y-%m-%d %H:%M:%S}",
            Text(escape.terminal(i.dataset_name, single_line=True)),
            Text(escape.terminal(f"{i.system.get('kind')}:{target}", single_line=True)),
            str(i.config.get("k", 1)),
            f"{i.n_done}/{i.n_pairs}",
            f"{i.elapsed_seconds:.1f}",
        )
    out_console().print(table)


@app.command()
def demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Evaluate the bundled transaction-risk screener on its bundled labelled data."""
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
        _finish(report, store, as_json=as_json)
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
        from arbiter.cli.jury import demo_jury

        demo_jury()
