"""A report's figures as text, shared by every format (terminal, Markdown, HTML).

The strings hold only numbers and our own words, except where a docstring says a field
carries a name from outside; each format escapes what it shows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from arbiter.contract import Interval, ModelCalls, PairResult, Report

__all__ = [
    "ScorerFigures",
    "binary_valued",
    "headline",
    "label_only",
    "pct",
    "scorer_figures",
]


def pct(value: float) -> str:
    """A share as a percentage with one decimal: ``66.7%``."""
    return f"{100 * value:.1f}%"


def _ci(interval: Interval) -> str:
    return f"{pct(interval.estimate)}  [{pct(interval.low)}, {pct(interval.high)}]"


def label_only(report: Report) -> bool:
    """Whether the run is scored by ``label`` alone (shown as reports were before scorers)."""
    return report.strict is not None and set(report.sections) <= {"label"}


def headline(report: Report) -> list[tuple[str, str]]:
    """The report's headline figures as (name, value) rows; escape them where they land.

    A run scored by ``label`` alone leads with its strict (and mapped) accuracy; any other
    leads with the pass rate of the combined outcome (each scorer has its own section).
    """
    if label_only(report) and report.strict is not None:
        rows = [("accuracy (strict)", f"{_ci(report.strict.accuracy)}  n={report.strict.n}")]
        if report.mapped is not None:
            rows.append(
                ("accuracy (mapped)", f"{_ci(report.mapped.accuracy)}  n={report.mapped.n}")
            )
    else:
        rows = [("pass rate", f"{_ci(report.accuracy)}  n={report.accuracy.n}")]
    if report.undecided:
        rows.append(("undecided pairs", f"{report.undecided} (every gating scorer abstained)"))
    rows += [
        (f"pass^{report.k}", f"{_ci(report.pass_hat_k)}  over {report.pass_hat_k.n} examples"),
        ("mean pass@1", f"{_ci(report.pass_at_1)}"),
        (
            "errors",
            f"{pct(report.error_rate)}"
            + (
                "  " + ", ".join(f"{k}={v}" for k, v in report.errors_by_type.items())
                if report.errors_by_type
                else ""
            ),
        ),
    ]
    if report.latency is not None:
        lat = report.latency
        rows.append(
            (
                "latency",
                f"p50 {lat.p50_ms:.1f} ms · p95 {lat.p95_ms:.1f} ms · p99 {lat.p99_ms:.1f} ms",
            )
        )
    if report.examples_per_second is not None:
        rows.append(("throughput", f"{report.examples_per_second:,.1f} pairs/s"))
    return rows


@dataclass(frozen=True)
class ScorerFigures:
    """One scorer section's figures as text, for a table row in any format."""

    name: str
    """The scorer's name in the run (untrusted only if a plugin chose it: escape it)."""
    gating: bool
    """Whether it takes part in the outcome."""
    pass_rate: str
    """``66.7%``, or ``-`` when it decided nothing."""
    interval: str
    """``[35.4%, 87.9%]``, or empty."""
    n: int
    """Pairs it decided."""
    passed: int
    """Pairs it passed."""
    failed: int
    """Pairs it failed (failed calls included)."""
    abstained: int
    """Pairs it abstained on."""
    errored: int
    """Pairs where it raised."""
    value: str
    """Mean value with its interval, when its values are not all 0 / 1; else empty."""
    pass_k: str
    """Its pass^k, or ``-``."""
    model: str
    """Its model calls, cache hits, tokens and cost, when it made any; else empty."""


def binary_valued(results: Sequence[PairResult]) -> set[str]:
    """Names of the scorers whose every value is 0 or 1 (their mean is the pass rate)."""
    seen: dict[str, bool] = {}
    for result in results:
        for score in result.scores:
            if score.value is not None:
                seen[score.name] = seen.get(score.name, True) and score.value in (0.0, 1.0)
    return {name for name, binary in seen.items() if binary}


def scorer_figures(report: Report, *, binary: Collection[str] | None = None) -> list[ScorerFigures]:
    """A row of figures per scorer section, in the run's order.

    Args:
        report: The report.
        binary: Scorers whose values are all 0 / 1 (:func:`binary_valued`), whose mean
            value is left out; None: show every mean value.
    """
    rows = []
    for name, section in report.sections.items():
        rate = section.pass_rate
        value = ""
        if section.value is not None and (binary is None or name not in binary):
            v = section.value
            value = f"{_number(v.estimate)}  [{_number(v.low)}, {_number(v.high)}]"
        rows.append(
            ScorerFigures(
                name=name,
                gating=section.spec.gating,
                pass_rate=pct(rate.estimate) if rate is not None else "-",
                interval=f"[{pct(rate.low)}, {pct(rate.high)}]" if rate is not None else "",
                n=rate.n if rate is not None else 0,
                passed=section.passed,
                failed=section.failed,
                abstained=section.abstained,
                errored=section.errored,
                value=value,
                pass_k=pct(section.pass_hat_k.estimate) if section.pass_hat_k else "-",
                model=_model_calls(section.model),
            )
        )
    return rows


def _number(value: float) -> str:
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _model_calls(calls: ModelCalls | None) -> str:
    if calls is None or not calls.calls:
        return ""
    parts = [f"{calls.calls:,} calls", f"{calls.cached:,} cached"]
    tokens = calls.input_tokens + calls.output_tokens
    if tokens:
        parts.append(f"{tokens:,} tokens")
    if calls.cost_usd is not None:
        parts.append(f"${calls.cost_usd:,.4f}")
    return " · ".join(parts)
