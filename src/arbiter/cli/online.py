"""``arbiter online score``: score a JSONL file of unlabelled predictions in one batch.

The file is read line by line and at most ``--concurrency`` items are in flight, so
memory stays flat whatever the file's length. Every line gets a result, an unreadable
one included (recorded as an error for that line): results are appended to a JSONL
sink as they complete, stored in bulk every few hundred, and summarised at the end.
The work is :func:`arbiter.service.online.score_file`'s; this module parses and prints.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, open_store, out_console, progress_bar, settings

if TYPE_CHECKING:
    from arbiter.online.sink import SummaryReport
    from arbiter.scoring.rates import Rate

__all__ = ["online_app", "render_summary", "score"]

online_app = typer.Typer(
    name="online",
    help="Score unlabelled production traffic with the layered online pipeline.",
    no_args_is_help=True,
)
app.add_typer(online_app, name="online")


@online_app.command("score")
def score(
    file: Annotated[Path, typer.Argument(help="JSONL file: one prediction per line.")],
    config: Annotated[
        Path | None, typer.Option(help="Pipeline configuration (JSON); default: built in.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="JSONL file the results are appended to (default: under ARBITER_HOME)."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Evaluations in flight at once.")] = 64,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="local|ray",
            help="Where the lines are scored: this process, or a Ray cluster (pip install "
            "'arbiter\\[ray]'; --concurrency is then per worker) \\[default: local].",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="With --engine ray: a cluster's address, or 'auto' (the cluster this machine "
            "knows, else a local one started for the batch) \\[default: auto].",
        ),
    ] = None,
    rate_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--rate-limit",
            metavar="PROVIDER=N/s",
            help="At most N judge calls a second (N/min: a minute) to the model provider "
            "PROVIDER (openai, anthropic, llama_cpp, ...); ',burst=B' lets B start at once "
            "after a quiet spell, ',concurrency=C' holds it to C calls in flight. On "
            "--engine ray every worker shares it. Repeatable.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Score every prediction of a JSONL file; append results to a sink, store them, summarise."""
    from arbiter.errors import InputError, Interrupted
    from arbiter.online.config import OnlineConfig
    from arbiter.online.sink import JsonlSink
    from arbiter.service.engines import EngineChoice, opened_engine
    from arbiter.service.online import check_sink_is_not_input, score_file
    from arbiter.service.online_judges import online_pipeline
    from arbiter.store import new_run_id
    from arbiter.telemetry import Telemetry

    options = settings()
    if not file.is_file():
        raise InputError(f"{file}: no such file" if not file.exists() else f"{file}: not a file")
    # Everything is validated before the store is opened: bad input writes nothing.
    online_config = OnlineConfig.load(config) if config is not None else OnlineConfig()
    where = EngineChoice.of(engine, ray_address, rate_limits=rate_limit or (), calls_system=False)
    gate = where.gate(None)  # the local engine's limits; a cluster's workers gate their own
    batch_id = new_run_id()
    out_path = out or options.home / "online" / f"{batch_id}.jsonl"
    check_sink_is_not_input(file, out_path)
    telemetry = Telemetry.from_env()
    try:
        pipeline = online_pipeline(online_config, options, telemetry=telemetry, gate=gate)
        store = open_store(options)
        try:
            try:
                sink = JsonlSink(out_path)
            except OSError as exc:
                raise InputError(f"cannot write --out {out_path}: {exc.strerror or exc}") from None
            with (
                sink,
                opened_engine(where, gate=gate) as chosen,
                progress_bar(f"scoring {file.name}", enabled=not quiet) as progress,
            ):

                async def scored() -> SummaryReport:
                    try:
                        return await score_file(
                            pipeline,
                            file,
                            sink=sink,
                            store=store,
                            batch_id=batch_id,
                            progress=progress,
                            max_in_flight=concurrency,
                            engine=chosen,
                            config=online_config,
                            settings=options,
                        )
                    finally:
                        await pipeline.aclose()

                try:
                    report = asyncio.run(scored())
                except KeyboardInterrupt:
                    raise Interrupted(
                        f"{sink.written} results were appended to {out_path} and stored as "
                        f"batch {batch_id}"
                    ) from None
        finally:
            store.close()
    finally:
        telemetry.shutdown()  # flushes the batch's spans and metrics
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        from rich.text import Text

        from arbiter import escape

        summary = render_summary(report, source=file.name)
        out_console().print(Text(escape.terminal(summary)), soft_wrap=True)
    note(
        f"{sink.written} results appended to {out_path}; stored as batch {batch_id} "
        f"in {store.describe()}"
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}" if value < 10 else f"{value:,.1f}"


def render_summary(report: SummaryReport, *, source: str) -> str:
    """The summary as aligned lines for the terminal."""
    from arbiter.judging import describe_calls

    elapsed = f" in {report.elapsed_s:.2f} s" if report.elapsed_s is not None else ""
    rows: list[tuple[str, str]] = []

    def rate(name: str, value: Rate) -> None:
        interval = f"95% CI {_pct(value.low)}–{_pct(value.high)}"
        rows.append((name, f"{_pct(value.rate)}  ({value.count}/{value.n}; {interval})"))

    def counts(name: str, values: dict[str, int]) -> None:
        if values:
            rows.append((name, ", ".join(f"{key} {n}" for key, n in values.items())))

    rate("flagged", report.flagged)
    rate("escalated", report.escalated)
    if report.judge_reached:
        rate("scored by judge", report.scored_by_judge)
        counts("judge sources", report.judge_sources)
        rows.append(("judge chain calls", describe_calls(report.chain_usage)))
    elif report.judged is None:  # with judge panels, their own lines say who was judged
        rows.append(("scored by judge", "- (no item reached a judge)"))
    if report.judged is not None:
        rate("judged by panel", report.judged)
        counts("judged because", report.judged_by_trigger)
        for judge, verdicts in report.judge_verdicts.items():
            counts(f"  {judge}", verdicts)
        rows.append(("judge calls", describe_calls(report.judge_usage)))
    counts("flags", report.flags_by_rule)
    latency = "   ".join(
        f"{name} {_ms(layer.p50_ms)} / {_ms(layer.p95_ms)}"
        for name, layer in report.latency.items()
    )
    rows.append(("latency p50 / p95 ms", latency or "-"))
    errors = ", ".join(f"{k} {v}" for k, v in report.errors.items())
    rows.append(("errors", f"{report.items_with_errors} items" + (f": {errors}" if errors else "")))
    counts("cut off by budget", report.abstentions)
    counts("abstained", report.other_abstentions)
    width = max(len(name) for name, _ in rows)
    lines = [f"online score: {report.items} items from {source}{elapsed}"]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    return "\n".join(lines)
