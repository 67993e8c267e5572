"""``arbiter calibrate``: how far each judge agrees with human labels.

From a JSONL / CSV file of paired labels (``FILE``) or from the annotations in the
store (``--store``). The work is :mod:`arbiter.service.calibration`'s; this module
parses and prints. A judge reported ``calibrated`` is eligible for promotion to gating;
nothing is promoted here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, open_store, out_console

if TYPE_CHECKING:
    from arbiter.judges.calibration import CalibrationReport, Estimate

__all__ = ["calibrate"]


@app.command("calibrate")
def calibrate(
    file: Annotated[
        Path | None,
        typer.Argument(help="JSONL or CSV, one row per item: the judge's label and a human's."),
    ] = None,
    judge_column: Annotated[str, typer.Option(help="Column of the judge's label.")] = "judge_label",
    human_column: Annotated[str, typer.Option(help="Column of the human's label.")] = "human_label",
    by: Annotated[
        str | None,
        typer.Option(
            "--by", help="Column naming the dimension to calibrate per.", show_default="dimension"
        ),
    ] = None,
    positive: Annotated[str, typer.Option(help="Label precision and recall are about.")] = "fail",
    store: Annotated[
        bool, typer.Option("--store", help="Calibrate on the annotations in the store.")
    ] = False,
    include_propagated: Annotated[
        bool, typer.Option(help="With --store: count second-hand (propagated) labels too.")
    ] = False,
    votes: Annotated[
        bool,
        typer.Option(help="With --store: count people's votes on runs (judge run_verdict)."),
    ] = True,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap intervals.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Calibrate judges against human labels: Cohen's kappa, agreement, precision, recall.

    Each figure has a 95% bootstrap interval; Krippendorff's alpha among the humans is
    the ceiling beside it. Below 10 pairs a judge is never calibrated; kappa >= 0.6
    with 10 or more makes it eligible for promotion.
    """
    from arbiter.errors import InputError
    from arbiter.service.calibration import PairColumns, calibrate_file, calibrate_store

    if store == (file is not None):
        raise InputError("calibrate: give a pairs FILE or --store, not both and not neither")
    if by is not None and by in (judge_column, human_column):
        which = "judge's" if by == judge_column else "human's"
        raise InputError(f"calibrate: --by {by!r} is the {which} label column; name another")
    if file is not None:
        columns = PairColumns(
            judge_label=judge_column, human_label=human_column, by=by or "dimension"
        )
        report = calibrate_file(file, columns, positive=positive, seed=seed)
    else:
        report = calibrate_store(
            open_store(), include_propagated=include_propagated, include_votes=votes, seed=seed
        )
    if as_json:
        echo_json(report.as_dict())
    else:
        _render(report)


def _figure(estimate: Estimate) -> str:
    import math

    if math.isnan(estimate.value):
        return "-  (undefined)"
    if math.isnan(estimate.low):
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f}  [{estimate.low:.3f}, {estimate.high:.3f}]"


def _render(report: CalibrationReport) -> None:
    from arbiter import escape

    console = out_console()
    lines: list[str] = []
    if not report.judges:
        lines.append("no labelled pairs")
    for j in report.judges:
        name = escape.terminal(j.judge, single_line=True, limit=80)
        if j.dimension:
            name += " / " + escape.terminal(j.dimension, single_line=True, limit=60)
        alpha = (
            "-  (one annotator)"
            if j.human_alpha is None
            else (f"{j.human_alpha:.3f}  over {j.n_alpha_items} items, {j.n_annotators} annotators")
        )
        positive = escape.terminal(j.positive, single_line=True, limit=40)
        lines += [
            f"{name}: {j.status} ({j.reason})",
            f"  pairs      {j.n_pairs}  (left out: judge abstained {j.n_judge_abstained}, "
            f"human unknown {j.n_human_unknown})",
            f"  kappa      {_figure(j.kappa)}",
            f"  agreement  {_figure(j.agreement)}",
            f"  precision  {_figure(j.precision)}  on {positive!r}",
            f"  recall     {_figure(j.recall)}  on {positive!r}",
            f"  human alpha {alpha}",
        ]
    skipped = {k: v for k, v in report.excluded.items() if v}
    if skipped:
        lines.append("left out: " + ", ".join(f"{v} {k}" for k, v in sorted(skipped.items())))
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
