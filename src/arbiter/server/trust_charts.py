"""Inline SVG for the trust pages: the conduct ring, the fleet over time, threshold bands.

Pure functions, data in and one ``<svg>`` out (as :class:`markupsafe.Markup`), built as
:mod:`arbiter.server.charts` builds its charts: every text is made inert and clipped,
colours come from the style sheet's classes (no ``style`` attribute: the pages' policy
forbids inline styles), and every chart says what it shows in words (its accessible
label, a ``<title>`` per mark, the numbers written beside the marks), never by colour
alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

from markupsafe import Markup

from arbiter import escape
from arbiter.contract.trust import TrustStatus
from arbiter.server.charts import pct
from arbiter.service.fleet import AgentTimeline, DayPoint

__all__ = ["band_scale", "money", "ring", "timeline"]

_NAME_CHARS = 24


def _f(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _text(value: object, limit: int = 200) -> str:
    return escape.html(escape.terminal(value, limit=limit), limit=limit * 4)


def _short(value: str, limit: int = _NAME_CHARS) -> str:
    shown = escape.terminal(value, limit=200)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _svg(width: float, height: float, body: str, label: str, kind: str) -> Markup:
    return Markup(
        f'<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" '
        f'height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" role="img" '
        f'aria-label="{_text(label, 300)}">{body}</svg>'
    )


def money(value: float | None) -> str:
    """A cost in USD at a readable precision; None as an en dash."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"${value:.4f}" if value < 0.01 else f"${value:.2f}"


def ring(status: TrustStatus, *, size: int = 132) -> Markup:
    """The conduct ring: the share of conduct as an arc, its 95% interval as a thin outer
    arc, the figure in the middle. A provisional agent gets a dashed, empty ring that
    says so: it has not earned a figure."""
    centre, radius = size / 2, size / 2 - 16
    outer = radius + 9
    turn = f'transform="rotate(-90 {_f(centre)} {_f(centre)})"'
    track = f'<circle class="ring-track" cx="{_f(centre)}" cy="{_f(centre)}" r="{_f(radius)}"/>'
    if status.state == "provisional" or status.conduct is None:
        body = (
            f'<circle class="ring-track ring-none" cx="{_f(centre)}" cy="{_f(centre)}" '
            f'r="{_f(radius)}"/>'
            f'<text class="ring-word" x="{_f(centre)}" y="{_f(centre - 2)}" '
            'text-anchor="middle">provisional</text>'
            f'<text class="ring-sub" x="{_f(centre)}" y="{_f(centre + 15)}" '
            f'text-anchor="middle">n={status.runs:,}</text>'
        )
        label = f"conduct not rated yet: provisional, {status.runs} evaluated runs"
        return _svg(size, size, body, label, "ring")
    value = min(max(status.conduct, 0.0), 1.0)
    low, high = (min(max(v, 0.0), 1.0) for v in status.interval)
    around = 2 * math.pi * radius
    around_outer = 2 * math.pi * outer
    body = (
        track + f'<circle class="ring-value ring-{status.state}" cx="{_f(centre)}" '
        f'cy="{_f(centre)}" r="{_f(radius)}" stroke-dasharray="{_f(around * value)} '
        f'{_f(around)}" {turn}/>'
        f'<circle class="ring-range" cx="{_f(centre)}" cy="{_f(centre)}" r="{_f(outer)}" '
        f'stroke-dasharray="{_f(max(around_outer * (high - low), 1))} {_f(around_outer)}" '
        f'stroke-dashoffset="{_f(-around_outer * low)}" {turn}/>'
        f'<text class="ring-figure" x="{_f(centre)}" y="{_f(centre + 4)}" '
        f'text-anchor="middle">{pct(value)}</text>'
        f'<text class="ring-sub" x="{_f(centre)}" y="{_f(centre + 21)}" '
        f'text-anchor="middle">n={status.runs:,}</text>'
    )
    label = (
        f"conduct {pct(value)}, 95% interval {pct(low)} to {pct(high)}, "
        f"over {status.runs} evaluated runs"
    )
    return _svg(size, size, body, label, "ring")


def timeline(
    days: Sequence[date],
    agents: Sequence[AgentTimeline],
    *,
    measure: str = "rate",
    width: int = 1100,
) -> Markup:
    """One row per agent over the same days: its daily pass rate (``measure="rate"``,
    on 0–100%) or its mean run cost (``"cost"``, on a scale shared by every row, so rows
    compare); a gap on a day without a value, the newest value written at the right."""
    if not days or not agents:
        return Markup("")
    label_w, value_w, row_h, top = 180, 110, 36, 26
    plot_w = width - label_w - value_w
    step = plot_w / max(len(days) - 1, 1)
    costs = [p.cost for a in agents for p in a.points if p.cost is not None]
    reach = max(costs) if measure == "cost" and costs else 1.0
    reach = reach if reach > 0 else 1.0

    def value_of(point: DayPoint) -> float | None:
        found = point.rate if measure == "rate" else point.cost
        return None if found is None or not math.isfinite(found) else float(found)

    def shown(value: float | None) -> str:
        return pct(value) if measure == "rate" else money(value)

    parts = []
    for i in sorted({0, len(days) // 2, len(days) - 1}):
        x = label_w + step * i
        anchor = "start" if i == 0 else "end" if i == len(days) - 1 else "middle"
        parts.append(
            f'<line class="zero" x1="{_f(x)}" x2="{_f(x)}" y1="{top - 6}" '
            f'y2="{_f(top + row_h * len(agents) - 6)}"/>'
            f'<text class="muted" x="{_f(x)}" y="14" text-anchor="{anchor}">'
            f"{days[i].strftime('%b %d')}</text>"
        )
    for row, line in enumerate(agents):
        y0 = top + row_h * row
        base, span = y0 + row_h - 10, row_h - 16

        def y_of(value: float, base: float = base, span: float = span) -> float:
            return base - span * min(max(value / reach, 0.0), 1.0)

        marks: list[str] = []
        run: list[str] = []
        for i, point in enumerate(line.points):
            value = value_of(point)
            if value is None:
                if len(run) > 1:
                    marks.append(f'<polyline class="spark" points="{" ".join(run)}"/>')
                run = []
                continue
            x, y = label_w + step * i, y_of(value)
            run.append(f"{_f(x)},{_f(y)}")
            marks.append(
                f'<circle class="point" cx="{_f(x)}" cy="{_f(y)}" r="2.5"><title>'
                f"{_text(line.agent)} on {days[i].isoformat()}: {shown(value)}, "
                f"{point.runs} runs</title></circle>"
            )
        if len(run) > 1:
            marks.append(f'<polyline class="spark" points="{" ".join(run)}"/>')
        newest = next(
            (v for v in (value_of(p) for p in reversed(line.points)) if v is not None), None
        )
        parts.append(
            f"<g><title>{_text(line.agent)}: {line.runs:,} runs in these days</title>"
            f'<line class="zero" x1="{label_w}" x2="{_f(label_w + plot_w)}" '
            f'y1="{_f(base)}" y2="{_f(base)}"/>'
            f'<text x="{label_w - 10}" y="{_f(y0 + row_h / 2 + 2)}" text-anchor="end">'
            f"{_text(_short(line.agent))}</text>"
            + "".join(marks)
            + f'<text x="{_f(label_w + plot_w + 14)}" y="{_f(y0 + row_h / 2 + 2)}">'
            f"{shown(newest)}</text></g>"
        )
    what = "pass rate" if measure == "rate" else "mean cost of a run"
    label = f"{what} per day of {len(agents)} agents over {len(days)} days"
    return _svg(width, top + row_h * len(agents), "".join(parts), label, "timeline")


def band_scale(
    *,
    danger: float | None,
    healthy: float | None,
    higher_is_better: bool,
    off: bool = False,
    width: int = 300,
) -> Markup:
    """One metric's bands on a line: danger, review between the two lines, healthy; the
    lines' values written under their marks."""
    height = 34
    if off or (danger is None and healthy is None):
        words = "off: reported without a verdict" if off else "no lines"
        body = (
            f'<rect class="band-none" x="0" y="4" width="{width}" height="12" rx="3"/>'
            f'<text class="muted" x="0" y="30">{words}</text>'
        )
        return _svg(width, height, body, "no bands: reported without a verdict", "bands")
    ends = [v for v in (danger, healthy) if v is not None]
    low, high = min(ends), max(ends)
    spread = high - low or max(abs(high), 1.0)
    lo, hi = low - spread * 0.5, high + spread * 0.5
    if low >= 0 > lo:
        lo = 0.0

    def x_of(value: float) -> float:
        return 6 + (width - 12) * (value - lo) / (hi - lo)

    d = x_of(danger) if danger is not None else None
    h = x_of(healthy) if healthy is not None else None
    first, second = ("danger", "healthy") if higher_is_better else ("healthy", "danger")
    a = min(v for v in (d, h) if v is not None)
    b = max(v for v in (d, h) if v is not None)
    body = (
        f'<rect class="band-{first}" x="6" y="4" width="{_f(a - 6)}" height="12" rx="2"/>'
        f'<rect class="band-review" x="{_f(a)}" y="4" width="{_f(max(b - a, 0))}" height="12"/>'
        f'<rect class="band-{second}" x="{_f(b)}" y="4" width="{_f(width - 6 - b)}" '
        'height="12" rx="2"/>'
    )
    for mark, value in ((d, danger), (h, healthy)):
        if mark is None or value is None:
            continue
        body += (
            f'<line class="whisker" x1="{_f(mark)}" x2="{_f(mark)}" y1="1" y2="19"/>'
            f'<text x="{_f(mark)}" y="31" text-anchor="middle">{_f(value)}</text>'
        )
    word = "at least" if higher_is_better else "at most"
    label = (
        f"healthy {word} {_f(healthy) if healthy is not None else '–'}, "
        f"danger past {_f(danger) if danger is not None else '–'}"
    )
    return _svg(width, height, body, label, "bands")
