"""``arbiter run``, ``arbiter runs`` and ``arbiter demo``."""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from arbiter.cli.app import app
from arbiter.cli.common import (
    err_console,
    open_store,
    out_console,
    parse_label_map,
    progress_bar,
)
from arbiter.config import Settings
from arbiter.contract import Report
from arbiter.datasets import load_dataset
from arbiter.errors import InputError, SystemUnderTestError
from arbiter.harness.render import report_renderable
from arbiter.harness.runner import resume_eval_async, run_eval_async
from arbiter.store.repository import Store
from arbiter.systems.base import ResponseMapping, SystemUnderTest
from arbiter.systems.factory import build_system
from arbiter.telemetry import Telemetry

__all__ = ["demo", "run", "runs"]


class SystemKind(StrEnum):
    """Kinds of system under test."""

    python = "python"
    http = "http"
    mcp = "mcp"


def _parse_pairs(values: list[str], sep: str, option: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise InputError(f"{option} {value!r}: expected NAME{sep}VALUE")
        pairs[key.strip()] = rest.strip()
    return pairs


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _body_template(value: str | None) -> Any:
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise InputError(f"--body-template {value}: no such file")
        text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"--body-template: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


def _describe_new(
    kind: SystemKind,
    target: str | None,
    *,
    method: str,
    body_template: str | None,
    label_path: str | None,
    confidence_path: str | None,
    id_path: str | None,
    header_names: list[str],
    tool: str | None,
    args: dict[str, Any],
    timeout: float,
) -> dict[str, Any]:
    if not target:
        what = "'package.module:function'" if kind is SystemKind.python else "the service URL"
        raise InputError(f"--target is required for --system {kind.value}: give {what}")
    if kind is SystemKind.python:
        return {"kind": "python", "target": target}
    defaults = (
        ResponseMapping()
        if kind is SystemKind.http
        else ResponseMapping(label="risk_level", confidence="confidence")
    )
    mapping = ResponseMapping(
        label=label_path or defaults.label,
        confidence=confidence_path or defaults.confidence,
        id=id_path or defaults.id,
    ).model_dump(mode="json")
    if kind is SystemKind.http:
        return {
            "kind": "http",
            "url": target,
            "method": method.upper(),
            "body_template": _body_template(body_template),
            "mapping": mapping,
            "headers": header_names,
            "timeout": timeout,
        }
    if not tool:
        raise InputError("--tool is required for --system mcp: the name of the tool to call")
    return {
        "kind": "mcp",
        "url": target,
        "tool": tool,
        "fixed_arguments": args,
        "mapping": mapping,
        "headers": header_names,
        "timeout": timeout,
    }


def _finish(report: Report, store: Store, *, as_json: bool) -> None:
    if as_json:
        out_console.print_json(report.model_dump_json())
    else:
        out_console.print(report_renderable(report))
        err_console.print(f"\nstored as run [bold]{report.run_id}[/] in {store.describe()}")
    if report.mapped is not None and len(report.mapped.labels) == 1:
        err_console.print(
            f"[yellow]warning:[/] the label map sends every label to {report.mapped.labels[0]!r}: "
            "does it name the labels this dataset uses?"
        )
    if report.error_rate == 1.0:
        kind, message = next(iter(report.error_examples.items()), ("error", ""))
        raise SystemUnderTestError(
            f"every call failed; the first: {kind}: {message} "
            f"(all of them: arbiter report {report.run_id} --format junit)"
        )


def _announce(run_id: str) -> None:
    err_console.print(
        f"run [bold]{run_id}[/] started (if interrupted: arbiter run --resume {run_id})"
    )


@app.command()
def run(
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", "--fixture", help="Labelled dataset: .json, .jsonl or .csv."),
    ] = None,
    system: Annotated[
        SystemKind, typer.Option(help="Kind of system under test.")
    ] = SystemKind.python,
    target: Annotated[
        str | None,
        typer.Option(
            "--target", "--url", help="python: 'package.module:function'; http/mcp: the URL."
        ),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Repetitions per example (pass^k).")] = 1,
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
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap intervals.")] = 0,
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
        str | None, typer.Option(help="Continue a stored run: only its missing pairs are run.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Run a labelled dataset through a system under test and report how it did."""
    settings = Settings()
    headers = _parse_pairs(header or [], ":", "--header")
    if resume is not None:
        store = open_store(settings)
        telemetry = Telemetry.from_env()
        try:
            info = store.get_run(resume)
            sut = build_system(info.system, headers=headers)
            with progress_bar(f"resuming {info.id}", enabled=not quiet) as progress:
                report = asyncio.run(
                    resume_eval_async(store, info.id, sut, progress=progress, telemetry=telemetry)
                )
            _finish(report, store, as_json=as_json)
        finally:
            telemetry.shutdown()
            store.close()
        return
    # Everything is validated before the store is opened: bad input writes nothing.
    if dataset is None:
        raise InputError("--dataset is required (or --resume RUN_ID)")
    data = load_dataset(dataset)
    if binary and label_map not in (None, "binary"):
        raise InputError("--binary and --label-map are exclusive; give one")
    mapping = parse_label_map("binary" if binary else label_map)
    fixed: dict[str, Any] = {
        name: _json_value(v) for name, v in _parse_pairs(arg or [], "=", "--arg").items()
    }
    if driver:
        fixed["driver"] = driver
    effective_timeout = timeout or settings.timeout
    description = _describe_new(
        system,
        target,
        method=method,
        body_template=body_template,
        label_path=label_path,
        confidence_path=confidence_path,
        id_path=id_path,
        header_names=sorted(headers),
        tool=tool,
        args=fixed,
        timeout=effective_timeout,
    )
    new_sut: SystemUnderTest = build_system(description, headers=headers)
    store = open_store(settings)
    telemetry = Telemetry.from_env()
    try:
        with progress_bar(data.name, enabled=not quiet) as progress:
            report = asyncio.run(
                run_eval_async(
                    new_sut,
                    data,
                    k=k,
                    concurrency=concurrency or settings.concurrency,
                    timeout=effective_timeout,
                    retries=settings.retries if retries is None else retries,
                    label_map=mapping,
                    limit=limit,
                    seed=seed,
                    store=store,
                    progress=progress,
                    on_start=_announce,
                    telemetry=telemetry,
                )
            )
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
    store = open_store()
    try:
        infos = store.list_runs(limit=limit)
    finally:
        store.close()
    if as_json:
        out_console.print_json(json.dumps([i.model_dump(mode="json") for i in infos]))
        return
    if not infos:
        err_console.print(f"no runs yet in {store.describe()}; try: arbiter demo")
        return
    table = Table(title=f"runs in {store.describe()}", title_justify="left")
    for column in ("run", "status", "created (UTC)", "dataset", "system", "k", "done", "seconds"):
        table.add_column(
            column,
            justify="right" if column in ("k", "done", "seconds") else "left",
            no_wrap=column == "run",
            min_width=22 if column == "run" else None,
        )
    for i in infos:
        system = i.system.get("target") or i.system.get("url") or "?"
        table.add_row(
            i.id,
            i.status,
            f"{i.created_at:%Y-%m-%d %H:%M:%S}",
            i.dataset_name,
            f"{i.system.get('kind')}:{system}",
            str(i.config.get("k", 1)),
            f"{i.n_done}/{i.n_pairs}",
            f"{i.elapsed_seconds:.1f}",
        )
    out_console.print(table)


@app.command()
def demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Evaluate the bundled transaction-risk screener on its bundled labelled data."""
    from arbiter.demo import DEMO_LABEL_MAP, DEMO_TARGET, dataset_path
    from arbiter.systems.python import PythonSystem

    data = load_dataset(dataset_path())
    err_console.print(
        f"[bold]arbiter demo[/]: {len(data.examples)} labelled transactions through "
        f"{DEMO_TARGET}\nThe screener answers low/medium/high/critical; the ground truth is "
        "binary (high = confirmed threat), so the mapped figures are the ones to judge.\n"
    )
    store = open_store()
    try:
        with progress_bar("demo", enabled=not quiet) as progress:
            report = asyncio.run(
                run_eval_async(
                    PythonSystem(DEMO_TARGET),
                    data,
                    label_map=DEMO_LABEL_MAP,
                    store=store,
                    progress=progress,
                )
            )
        _finish(report, store, as_json=as_json)
    finally:
        store.close()
    err_console.print(
        "\nnext:\n"
        f"  arbiter report {report.run_id} --format markdown   # for a CI step summary\n"
        f"  arbiter gate {report.run_id} --min-accuracy 0.9 --cohort wire=0.8  # exit 1 on a miss\n"
        f"  arbiter run --dataset {dataset_path()} --target {DEMO_TARGET} --binary --k 3\n"
        "  arbiter runs"
    )
    if not as_json:  # stdout holds only the report's JSON under --json
        from arbiter.cli.jury import demo_jury

        demo_jury()
