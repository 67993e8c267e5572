"""What the run pages show, shaped from reports and comparisons: pure functions.

The routes (:mod:`arbiter.server.pages_runs`) read the store; these turn what they read
into the few plain rows a template lays out. Texts from outside (labels, cohorts, scorer
names, outputs) are passed through as they are: the templates escape them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np

from arbiter.contract import ClassificationMetrics, Interval, LabelMetrics, Report, RunInfo
from arbiter.harness.diff import PairedDiff
from arbiter.harness.figures import label_only
from arbiter.server.charts import DeltaRow, IntervalRow, pct
from arbiter.service.run_pages import CohortChange, RunView, primary_figure

__all__ = [
    "LABEL_ROWS",
    "MAP_LABELS",
    "TOP_CONFUSIONS",
    "Card",
    "Confusion",
    "ConfusionMap",
    "ScorerRow",
    "cards",
    "cohort_delta_rows",
    "cohort_rows",
    "confusion_map",
    "delta_rows",
    "label_rows",
    "label_sections",
    "pretty_json",
    "primary_or_none",
    "quoted",
    "run_title",
    "scorer_bars",
    "scorer_rows",
    "system_text",
]

_JSON_CHARS = 20_000
MAP_LABELS = 12
"""Labels a confusion map shows by name (the most frequent); the rest are one "other"."""
TOP_CONFUSIONS = 10
"""Confusions (expected one label, predicted another) listed under the map."""
LABEL_ROWS = 50
"""Labels a per-label table lists (the most supported); the rest are counted."""


@dataclass(frozen=True)
class Card:
    """One headline figure: its name, value, interval (drawn as a whisker) and a note."""

    name: str
    value: str
    interval: Interval | None = None
    note: str = ""
    lead: bool = False


def system_text(system: dict[str, Any]) -> str:
    """A system's description in a line: ``python:pkg.mod:fn``, ``http:URL``."""
    target = system.get("target") or system.get("url") or system.get("field") or "?"
    return f"{system.get('kind', '?')}:{target}"


def run_title(info: RunInfo) -> str:
    """What a run is called: its name, else its id."""
    return info.name or info.id


def quoted(value: str) -> str:
    """``value`` percent-encoded for a query string."""
    return quote(value, safe="")


def primary_or_none(view: RunView) -> tuple[str, Interval] | None:
    """The figure a run is judged by, when its report is ready."""
    report = view.report or view.stale
    return primary_figure(report) if report is not None else None


def label_sections(report: Report) -> list[tuple[str, ClassificationMetrics]]:
    """Each scorer's per-label figures (mapped where a label map was given), titled."""
    sections = []
    for name, section in report.sections.items():
        metrics = section.mapped or section.classification
        if metrics is not None:
            mapped = " (mapped)" if section.mapped is not None else ""
            title = f"Per label{mapped}" if label_only(report) else f"{name}: per label{mapped}"
            sections.append((title, metrics))
    return sections


def _ci(interval: Interval) -> str:
    return f"[{pct(interval.low)}, {pct(interval.high)}]"


def cards(report: Report) -> list[Card]:
    """The run's headline figures, the figure it is judged by first."""
    name, primary = primary_figure(report)
    shown = [Card(name, pct(primary.estimate), primary, f"{_ci(primary)} · n={primary.n:,}", True)]
    if label_only(report) and report.mapped is not None and report.strict is not None:
        strict = report.strict.accuracy
        shown.append(Card("accuracy (strict)", pct(strict.estimate), strict, _ci(strict)))
    elif not label_only(report) and report.strict is not None:
        strict = report.strict.accuracy
        shown.append(Card("label accuracy", pct(strict.estimate), strict, _ci(strict)))
    k = report.pass_hat_k
    shown.append(Card(f"pass^{report.k}", pct(k.estimate), k, f"{_ci(k)} · {k.n:,} examples"))
    if report.k > 1:
        p1 = report.pass_at_1
        shown.append(Card("mean pass@1", pct(p1.estimate), p1, _ci(p1)))
    errors = ", ".join(f"{k}={v:,}" for k, v in report.errors_by_type.items())
    shown.append(Card("errors", pct(report.error_rate), None, errors or "no failed call"))
    if report.undecided:
        shown.append(
            Card("undecided", f"{report.undecided:,}", None, "every gating scorer abstained")
        )
    if report.latency is not None:
        lat = report.latency
        shown.append(
            Card(
                "latency p50",
                f"{lat.p50_ms:,.1f} ms",
                None,
                f"p95 {lat.p95_ms:,.1f} · p99 {lat.p99_ms:,.1f} ms",
            )
        )
    if report.examples_per_second is not None:
        shown.append(
            Card("throughput", f"{report.examples_per_second:,.1f}/s", None, "pairs a second")
        )
    return shown


@dataclass(frozen=True)
class ScorerRow:
    """One scorer's section of a report, for its table row and its chart bar."""

    name: str
    gating: bool
    rate: Interval | None
    n: int
    passed: int
    failed: int
    abstained: int
    errored: int
    value: Interval | None
    pass_k: Interval | None
    labels: Any = None
    """Its per-label figures (:class:`ClassificationMetrics`), when it has them."""


def scorer_rows(report: Report, binary: frozenset[str]) -> list[ScorerRow]:
    """A row per scorer section, in the run's order; a mean value only where it says more
    than the pass rate (values other than 0 and 1)."""
    return [
        ScorerRow(
            name=name,
            gating=section.spec.gating,
            rate=section.pass_rate,
            n=section.n,
            passed=section.passed,
            failed=section.failed,
            abstained=section.abstained,
            errored=section.errored,
            value=section.value if name not in binary else None,
            pass_k=section.pass_hat_k,
            labels=section.mapped or section.classification,
        )
        for name, section in report.sections.items()
    ]


def scorer_bars(rows: Sequence[ScorerRow]) -> list[IntervalRow]:
    """The scorers' pass rates as chart bars (those that decided something)."""
    return [
        IntervalRow(r.name, r.rate.estimate, r.rate.low, r.rate.high, r.rate.n)
        for r in rows
        if r.rate is not None
    ]


def cohort_rows(report: Report) -> list[IntervalRow]:
    """Each cohort's pass rate (accuracy) with its interval, as chart bars."""
    return [
        IntervalRow(name, c.accuracy.estimate, c.accuracy.low, c.accuracy.high, c.n)
        for name, c in report.cohorts.items()
    ]


def delta_rows(diff: PairedDiff, prefix: str = "") -> list[DeltaRow]:
    """The figures of a paired comparison as chart rows (B minus A, paired intervals)."""
    return [DeltaRow(f"{prefix}{d.name}", d.delta, d.low, d.high) for d in diff.deltas]


def cohort_delta_rows(cohorts: Sequence[CohortChange]) -> list[DeltaRow]:
    """Each cohort's paired change as a chart row (cohorts in both runs only)."""
    return [
        DeltaRow(c.name, c.change.delta, c.change.low, c.change.high)
        for c in cohorts
        if c.change is not None
    ]


def pretty_json(value: object) -> str:
    """``value`` as indented JSON for a detail panel, clipped to a readable length."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= _JSON_CHARS else text[: _JSON_CHARS - 1] + "…"


@dataclass(frozen=True)
class Confusion:
    """One off-diagonal cell of a confusion matrix: how often ``expected`` was called
    ``predicted``."""

    expected: str
    predicted: str
    count: int
    share: float
    """Of the pairs expected ``expected``."""


@dataclass(frozen=True)
class ConfusionMap:
    """A confusion matrix cut to what a page can show: the most frequent labels by name,
    the rest folded into one row and column, and the most frequent confusions."""

    labels: list[str]
    """The labels drawn, in order; the last is the fold of the others when there is one."""
    matrix: list[list[int]]
    """Counts in ``labels`` order (rows expected, columns predicted)."""
    folded: int
    """How many labels the last row and column sum (0: every label is drawn)."""
    n_labels: int
    """Labels in the whole matrix."""
    top: list[Confusion]
    """The most frequent confusions over the whole matrix, most frequent first."""


def confusion_map(
    metrics: ClassificationMetrics, *, labels: int = MAP_LABELS, top: int = TOP_CONFUSIONS
) -> ConfusionMap:
    """``metrics``'s confusion matrix cut to its ``labels`` most frequent labels (by
    pairs expected or predicted, then name) plus one fold of the others, and its ``top``
    most frequent confusions. Work is linear in the matrix's cells."""
    names = metrics.labels
    n = len(names)
    counts = np.asarray(metrics.confusion, dtype=np.int64).reshape(n, n) if n else None
    if counts is None:
        return ConfusionMap([], [], 0, 0, [])
    rows = counts.sum(axis=1)
    frequency = rows + counts.sum(axis=0)
    order = sorted(range(n), key=lambda i: (-int(frequency[i]), names[i]))
    kept = order if n <= labels + 1 else order[:labels]
    folded = n - len(kept)
    group = np.full(n, len(kept), dtype=np.int64)
    group[kept] = np.arange(len(kept))
    size = len(kept) + (1 if folded else 0)
    cut = np.zeros((size, size), dtype=np.int64)
    np.add.at(cut, (group[:, None], group[None, :]), counts)
    shown = [names[i] for i in kept] + ([f"other ({folded:,} labels)"] if folded else [])
    off = counts.copy()
    np.fill_diagonal(off, 0)
    flat = off.ravel()
    wanted = min(top, int(np.count_nonzero(flat)))
    best = np.argpartition(-flat, wanted - 1)[:wanted] if wanted else np.array([], dtype=np.int64)
    cells = sorted(
        ((int(flat[c]), int(c) // n, int(c) % n) for c in best),
        key=lambda cell: (-cell[0], names[cell[1]], names[cell[2]]),
    )
    return ConfusionMap(
        labels=shown,
        matrix=cut.tolist(),
        folded=folded,
        n_labels=n,
        top=[Confusion(names[i], names[j], count, count / int(rows[i])) for count, i, j in cells],
    )


def label_rows(
    metrics: ClassificationMetrics, *, limit: int = LABEL_ROWS
) -> tuple[list[tuple[str, LabelMetrics]], int]:
    """The ``limit`` most supported labels' figures (then by name), and how many are left
    out."""
    ranked = sorted(metrics.per_label.items(), key=lambda item: (-item[1].support, item[0]))
    return ranked[:limit], max(len(ranked) - limit, 0)
