"""The gate's run-check options, declared once for every command that gates a run.

``arbiter gate`` and ``arbiter agent run`` take the same three thresholds (an eval
file's ``[gate]`` takes them as keys); unset, each is the gate's default, which the
help states.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["MaxErrorRateOption", "MaxUndecidedRateOption", "MinDecidedOption", "run_checks"]

MaxErrorRateOption = Annotated[
    float | None,
    typer.Option(
        min=0,
        max=1,
        help="Fail a run whose failed calls exceed this share of its pairs, whatever "
        "the floors \\[default: 0.2].",
    ),
]
MaxUndecidedRateOption = Annotated[
    float | None,
    typer.Option(
        min=0,
        max=1,
        help="Fail a run whose undecided pairs (every gating scorer abstained or "
        "errored) exceed this share of its pairs \\[default: 0.5].",
    ),
]
MinDecidedOption = Annotated[
    int | None,
    typer.Option(min=0, help="Fail a run with fewer decided pairs \\[default: 1]."),
]


def run_checks(
    max_error_rate: float | None, max_undecided_rate: float | None, min_decided: int | None
) -> dict[str, float]:
    """The run checks given on the command line, by name (those left unset omitted)."""
    given = {
        "max_error_rate": max_error_rate,
        "max_undecided_rate": max_undecided_rate,
        "min_decided": min_decided,
    }
    return {name: value for name, value in given.items() if value is not None}
