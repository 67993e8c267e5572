"""A run's report as one self-contained HTML file: figures, scorers, every pair.

The page has inline CSS and nothing else: no script, no external resource, and a
Content-Security-Policy that forbids both, so it can be opened from a CI artifact or an
e-mail as it is. Every text that came from a dataset, a system or a model goes through
:func:`arbiter.escape.html` (control characters shown as escapes, markup escaped) and is
clipped; a label or an output cannot add an element, an attribute or a link.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from arbiter import escape
from arbiter.contract import ClassificationMetrics, Example, Interval, PairResult, Report, Score
from arbiter.harness.figures import binary_valued, headline, label_only, scorer_figures
from arbiter.harness.html_style import STYLE
from arbiter.harness.pairs import (
    PairRow,
    pair_rows,
    reason_of,
    select_rows,
    shown_outcome,
    verdict_of,
)

__all__ = ["MAX_PAIRS", "report_html"]

MAX_PAIRS = 5_000
"""Pairs the table of examples shows at most; the page says how many it left out."""

_OUTPUT_CHARS = 2_000
_OUTPUT_LEAD = 300
_TEXT_CHARS = 1_000
_QUOTE_CHARS = 500
_MAX_QUOTES = 10

_h = escape.html


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _bar(interval: Interval | None) -> str:
    """An interval drawn as a bar on a 0-100% track, with a tick at the estimate."""
    if interval is None:
        return ""
    low, high, point = (
        100 * min(max(v, 0.0), 1.0) for v in (interval.low, interval.high, interval.estimate)
    )
    return (
        f'<span class="ci" role="img" aria-label="95% interval {low:.1f}% to {high:.1f}%">'
        f'<span class="ci-range" style="left:{low:.2f}%;width:{max(high - low, 0.5):.2f}%">'
        f'</span><span class="ci-point" style="left:{point:.2f}%"></span></span>'
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, numeric_from: int = 1) -> str:
    """A table of trusted header names and cells that are already HTML."""
    cols = "".join(
        f'<th class="{"num" if i >= numeric_from else ""}">{_h(name)}</th>'
        for i, name in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if i >= numeric_from else ""}">{cell}</td>'
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{cols}</tr></thead><tbody>{body}</tbody></table>"


def _header(report: Report) -> str:
    status = ""
    done = report.completeness
    if report.status != "completed" or (done is not None and not done.complete):
        shown = f" with {done.done}/{done.expected} pairs" if done is not None else ""
        status = f' <span class="badge badge-warn">{_h(report.status)}{shown}</span>'
    return (
        "<header>"
        f'<h1>Arbiter report <span class="dataset">{_h(report.dataset, limit=200)}</span>'
        f"{status}</h1>"
        f'<p class="meta">{_h(report.system, limit=300)} · {report.n_examples} examples × '
        f"k={report.k} · dataset {_h(report.dataset_hash[:12])} · run "
        f"<code>{_h(report.run_id or '(not stored)')}</code></p>"
        "</header>"
    )


def _cards(report: Report) -> str:
    cards = []
    for i, (name, value) in enumerate(headline(report)):
        figure, _, rest = value.partition("  ")
        lead = " card-lead" if i == 0 else ""
        lead += " card-long" if len(figure) > 14 else ""
        cards.append(
            f'<div class="card{lead}"><div class="card-name">{_h(name)}</div>'
            f'<div class="card-figure">{_h(figure)}</div>'
            f'<div class="card-rest">{_h(rest.strip())}</div></div>'
        )
    return f'<section class="cards">{"".join(cards)}</section>'


def _scorers(report: Report, binary: Collection[str]) -> str:
    figures = scorer_figures(report, binary=binary)
    if not figures:
        return ""
    show_value = any(f.value for f in figures)
    show_model = any(f.model for f in figures)
    head = ["scorer", "gates", "pass rate", "95% CI", "n", "pass", "fail", "abstain", "error"]
    head += [*(["mean value [95% CI]"] if show_value else []), f"pass^{report.k}"]
    head += ["model calls"] if show_model else []
    rows = []
    for f, section in zip(figures, report.sections.values(), strict=True):
        row = [
            f"<strong>{_h(f.name)}</strong>",
            "yes" if f.gating else '<span class="muted">reported only</span>',
            f"<strong>{_h(f.pass_rate)}</strong>",
            f'<span class="nowrap">{_h(f.interval)} {_bar(section.pass_rate)}</span>',
            str(f.n),
            str(f.passed),
            _count(f.failed, "fail"),
            _count(f.abstained, "abstain"),
            _count(f.errored, "error"),
        ]
        row += [_h(f.value)] if show_value else []
        row.append(_h(f.pass_k))
        row += [_h(f.model)] if show_model else []
        rows.append(row)
    return "<h2>Per scorer</h2>" + _table(head, rows, numeric_from=2)


def _count(count: int, verdict: str) -> str:
    return f'<span class="v v-{verdict}">{count}</span>' if count else "0"


def _classification(title: str, metrics: ClassificationMetrics) -> str:
    rows = [
        [
            _h(name, limit=200),
            f"{m.precision:.3f}",
            f"{m.recall:.3f}",
            f"{m.f1:.3f}",
            str(m.support),
        ]
        for name, m in [
            *metrics.per_label.items(),
            ("macro avg", metrics.macro),
            ("micro avg", metrics.micro),
            ("weighted avg", metrics.weighted),
        ]
    ]
    labels = [_h(label, limit=200) for label in metrics.labels]
    confusion = [
        [f"<strong>{label}</strong>", *(str(v) for v in counts)]
        for label, counts in zip(labels, metrics.confusion, strict=True)
    ]
    head = "".join(f'<th class="num">{label}</th>' for label in labels)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{cell}</td>' for cell in row) + "</tr>"
        for row in confusion
    )
    return (
        f'<h3>{_h(title)}</h3><div class="pair">'
        + _table(["label", "precision", "recall", "f1", "support"], rows)
        + f"<table><thead><tr><th>expected \\ predicted</th>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def _labels(report: Report) -> str:
    parts = []
    for name, section in report.sections.items():
        metrics = section.mapped or section.classification
        if metrics is not None:
            mapped = " (mapped)" if section.mapped is not None else ""
            title = f"per label{mapped}" if label_only(report) else f"{name}: per label{mapped}"
            parts.append(_classification(title, metrics))
    return "<h2>Per label</h2>" + "".join(parts) if parts else ""


def _cohorts(report: Report) -> str:
    if not report.cohorts:
        return ""
    rows = [
        [
            _h(name, limit=200),
            str(c.n),
            _pct(c.accuracy.estimate),
            f'<span class="nowrap">[{_pct(c.accuracy.low)}, {_pct(c.accuracy.high)}] '
            f"{_bar(c.accuracy)}</span>",
            _pct(c.pass_k),
        ]
        for name, c in report.cohorts.items()
    ]
    rate = "accuracy" if label_only(report) else "pass rate"
    return "<h2>Per cohort</h2>" + _table(["cohort", "n", rate, "95% CI", f"pass^{report.k}"], rows)


def _evidence(score: Score) -> str:
    if not score.evidence:
        return ""
    items = []
    for e in score.evidence[:_MAX_QUOTES]:
        checked = {True: "verified", False: "not found", None: "unchecked"}[e.verified]
        note = f' <span class="muted">— {_h(e.note, limit=_QUOTE_CHARS)}</span>' if e.note else ""
        items.append(
            f"<li><q>{_h(e.quote, limit=_QUOTE_CHARS)}</q> "
            f'<span class="q-{checked.replace(" ", "-")}">{checked}</span>{note}</li>'
        )
    more = len(score.evidence) - _MAX_QUOTES
    if more > 0:
        items.append(f'<li class="muted">… {more} more</li>')
    return (
        f"<details><summary>{len(score.evidence)} quote(s)</summary>"
        f"<ul>{''.join(items)}</ul></details>"
    )


def _score_cell(score: Score | None, binary: bool) -> str:
    if score is None:
        return '<span class="muted">–</span>'
    verdict = verdict_of(score)
    value = ""
    if score.value is not None and not binary:
        value = f' <span class="value">{score.value:.4g}</span>'
    why = reason_of(score)
    explanation = f'<div class="why">{_h(why, limit=_TEXT_CHARS)}</div>' if why else ""
    badge = f'<span class="nowrap"><span class="v v-{verdict}">{verdict}</span>{value}</span>'
    return f"{badge}{explanation}{_evidence(score)}"


def _output(row: PairRow) -> str:
    if row.error is not None:
        return f'<span class="error-text">{_h(row.error, limit=_TEXT_CHARS)}</span>'
    shown = ""
    label, text = row.output_label, row.output_text
    if label is not None and text is not None and label != text:
        shown += f'<span class="label">{_h(label, limit=200)}</span> '
    answer = row.answer
    if answer is None:
        return shown
    if len(answer) <= _OUTPUT_LEAD:
        return shown + f'<span class="text">{_h(answer)}</span>'
    # A long answer shows its start; the rest (up to the bound) unfolds on a click.
    rest = answer[_OUTPUT_LEAD:_OUTPUT_CHARS]
    clipped = ", clipped" if len(answer) > _OUTPUT_CHARS else ""
    return (
        shown + f'<span class="text">{_h(answer[:_OUTPUT_LEAD])}</span>'
        f'<details class="more"><summary>{len(answer):,} characters{clipped}</summary>'
        f'<span class="text">{_h(rest)}</span></details>'
    )


def _pair_row(row: PairRow, names: Sequence[str], binary: Collection[str]) -> str:
    classes = f"outcome-{row.outcome}" + (" clean" if row.clean else "")
    cells = [
        f"<td><code>{_h(row.example_id, limit=200)}</code></td>",
        f'<td class="num">{row.repetition}</td>',
        f"<td>{_h(row.cohort or '', limit=200)}</td>",
        f'<td class="expected">{_h(row.expected or "", limit=_QUOTE_CHARS)}</td>',
        f'<td class="output">{_output(row)}</td>',
        f'<td><span class="o o-{row.outcome}">{shown_outcome(row.outcome)}</span></td>',
        *(f"<td>{_score_cell(row.score(name), name in binary)}</td>" for name in names),
    ]
    return f'<tr class="{classes}">{"".join(cells)}</tr>'


def _pairs(
    report: Report,
    rows: Sequence[PairRow],
    binary: Collection[str],
    *,
    selected: bool,
    more: int,
    max_pairs: int,
) -> str:
    names = [spec.label for spec in report.scorers]
    head = "".join(
        f"<th>{_h(n)}</th>"
        for n in ["example", "rep", "cohort", "expected", "output", "outcome", *names]
    )
    shown = rows[:max_pairs]
    body = "".join(_pair_row(row, names, binary) for row in shown)
    issues = sum(1 for row in rows if not row.clean)
    if selected:
        title = "Examples not passed by every scorer, worst first"
        examples = len({row.example_id for row in rows})
        counts = (
            f"{examples:,} examples · {len(rows):,} pairs · {issues:,} not passed by every scorer"
        )
        counts += f" · {more:,} more examples left out (--limit)" if more else ""
    else:
        title = "Examples"
        counts = f"{len(rows):,} pairs · {issues:,} not passed by every scorer"
    left_out = ""
    if len(rows) > len(shown):
        left_out = (
            f'<p class="left-out">The table shows the first {len(shown):,} of {len(rows):,} '
            "pairs. <code>arbiter report RUN --format csv</code> has every pair, and "
            "<code>--failures</code> the worst examples first.</p>"
        )
    return (
        f'<h2>{title} <span class="muted">{counts}</span></h2>'
        '<input type="checkbox" id="only-issues" class="toggle">'
        '<label for="only-issues" class="toggle-label">show only pairs not passed by every '
        "scorer</label>"
        f'<div class="scroll"><table class="pairs"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{left_out}"
    )


def report_html(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    only: Sequence[str] | None = None,
    more: int = 0,
    max_pairs: int = MAX_PAIRS,
) -> str:
    """The whole report as one HTML document.

    Args:
        report: The run's report.
        examples: The examples in scope, in dataset order.
        results: The run's pair results.
        only: Example ids whose pairs the table keeps, in the order given (e.g. the
            failures, worst first); None: every example, in dataset order.
        more: Examples that qualified for ``only`` but were left out (by a limit), to
            say so.
        max_pairs: Most pairs the table shows.
    """
    rows = select_rows(pair_rows(examples, results), only)
    binary = binary_valued(results)
    title = _h(f"Arbiter report — {report.dataset}", limit=200)
    footnote = (
        "Intervals are 95%: Wilson for pass rates and accuracy, a bootstrap over examples "
        f"(seed {report.seed}) for pass^k, pass@1 and mean values. Made by Arbiter."
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{STYLE}</style></head><body><main>"
        + _header(report)
        + _cards(report)
        + _scorers(report, binary)
        + _labels(report)
        + _cohorts(report)
        + _pairs(report, rows, binary, selected=only is not None, more=more, max_pairs=max_pairs)
        + f"<footer>{footnote}</footer></main></body></html>\n"
    )
