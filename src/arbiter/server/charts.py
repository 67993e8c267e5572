"""Inline SVG charts for the pages: intervals as whiskers, bars, a heat map, sparklines.

Pure functions: data in, one ``<svg>`` element out (as :class:`markupsafe.Markup`, so a
template puts it in as is). Every text that reaches a chart (a label, a cohort, a scorer
name) is made inert by :func:`arbiter.escape.html` and clipped; geometry is numbers we
format. Colours come from CSS classes of the page's style sheet, so the charts follow the
light and dark themes, and no ``style`` attribute is written (the pages' Content-Security-
Policy forbids inline styles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from arbiter import escape

__all__ = [
    "DeltaRow",
    "IntervalRow",
    "band_strip",
    "delta_bars",
    "heat_map",
    "interval_bars",
    "pct",
    "signed_pct",
    "sparkline",
    "whisker",
]

_LABEL_CHARS = 28
"""Characters of a label a chart shows; the whole label is in the element's title."""


def pct(value: float | None, digits: int = 1) -> str:
    """``0.8123`` as ``81.2%``; None as an en dash."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{100 * value:.{digits}f}%"


def signed_pct(value: float | None, digits: int = 1) -> str:
    """A change in points with its sign: ``+3.1 pp``, ``−0.4 pp``, ``0.0 pp``."""
    if value is None or not math.isfinite(value):
        return "–"
    shown = f"{100 * abs(value):.{digits}f}"
    if float(shown) == 0:
        return f"{shown} pp"
    return f"{'+' if value > 0 else '−'}{shown} pp"


def _text(value: object, limit: int | None = None) -> str:
    return escape.html(value, limit=limit)


def _short(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"


def _clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    if not math.isfinite(value):
        return low
    return min(max(value, low), high)


def _f(value: float) -> str:
    """A coordinate with two decimals at most."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _svg(width: float, height: float, body: str, label: str, kind: str = "") -> Markup:
    """One chart; ``kind`` is a second class naming the chart's shape for the style sheet."""
    classes = f"chart {kind}" if kind else "chart"
    return Markup(
        f'<svg class="{classes}" xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" '
        f'height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" role="img" '
        f'aria-label="{_text(label, 300)}">{body}</svg>'
    )


def _whisker_body(x0: float, width: float, y: float, est: float, low: float, high: float) -> str:
    """A track, the interval as a band with end caps, and the estimate as a dot."""
    lx, hx, px = (x0 + width * _clamp(v) for v in (low, high, est))
    return (
        f'<rect class="track" x="{_f(x0)}" y="{_f(y - 4)}" width="{_f(width)}" height="8" rx="4"/>'
        f'<rect class="range" x="{_f(lx)}" y="{_f(y - 4)}" width="{_f(max(hx - lx, 1))}" '
        'height="8" rx="4"/>'
        f'<line class="whisker" x1="{_f(lx)}" x2="{_f(hx)}" y1="{_f(y)}" y2="{_f(y)}"/>'
        f'<line class="whisker" x1="{_f(lx)}" x2="{_f(lx)}" y1="{_f(y - 5)}" y2="{_f(y + 5)}"/>'
        f'<line class="whisker" x1="{_f(hx)}" x2="{_f(hx)}" y1="{_f(y - 5)}" y2="{_f(y + 5)}"/>'
        f'<circle class="point" cx="{_f(px)}" cy="{_f(y)}" r="3.5"/>'
    )


def whisker(
    estimate: float | None, low: float | None, high: float | None, *, width: int = 140
) -> Markup:
    """One interval on a 0–100% track: the 95% range with caps, a dot at the estimate.

    Args:
        estimate: The point estimate, a share in [0, 1]; None draws nothing.
        low: The interval's lower end.
        high: The interval's upper end.
        width: Width in pixels.
    """
    if estimate is None or low is None or high is None:
        return Markup("")
    label = f"{pct(estimate)}, 95% interval {pct(low)} to {pct(high)}"
    body = _whisker_body(6, width - 12, 8, estimate, low, high)
    return _svg(width, 16, body, label)


@dataclass(frozen=True)
class IntervalRow:
    """One bar of :func:`interval_bars`: a share with its 95% interval and its n."""

    label: str
    """What the bar is (a cohort, a scorer): untrusted text."""
    estimate: float
    """The share, in [0, 1]."""
    low: float
    """The interval's lower end."""
    high: float
    """The interval's upper end."""
    n: int
    """How many items the share is over."""


def interval_bars(
    rows: Sequence[IntervalRow], *, width: int = 620, caption: str = "pass rate"
) -> Markup:
    """Horizontal bars on a 0–100% axis, each with its interval as a whisker.

    Args:
        rows: The bars, top to bottom.
        width: Width in pixels.
        caption: What the bars measure, for the accessible label.
    """
    if not rows:
        return Markup("")
    label_w, value_w, row_h, top = 170, 150, 28, 22
    track_x, track_w = label_w, width - label_w - value_w
    parts = []
    for tick in (0.0, 0.5, 1.0):
        x = track_x + track_w * tick
        parts.append(
            f'<line class="zero" x1="{_f(x)}" x2="{_f(x)}" y1="{top - 6}" '
            f'y2="{_f(top + row_h * len(rows) - 6)}"/>'
            f'<text class="muted" x="{_f(x)}" y="12" text-anchor="middle">{pct(tick, 0)}</text>'
        )
    for i, row in enumerate(rows):
        y = top + row_h * i + row_h / 2 - 4
        name = _text(_short(escape.terminal(row.label, limit=200)))
        full = _text(row.label, 200)
        bar_w = track_w * _clamp(row.estimate)
        parts.append(
            f"<g><title>{full}: {pct(row.estimate)} [{pct(row.low)}, {pct(row.high)}], "
            f"n={row.n:,}</title>"
            f'<text x="{label_w - 10}" y="{_f(y + 4)}" text-anchor="end">{name}</text>'
            f'<rect class="track" x="{_f(track_x)}" y="{_f(y - 7)}" width="{_f(track_w)}" '
            'height="14" rx="3"/>'
            f'<rect class="bar" x="{_f(track_x)}" y="{_f(y - 7)}" width="{_f(bar_w)}" '
            'height="14" rx="3"/>'
            + _whisker_body(track_x, track_w, y, row.estimate, row.low, row.high)
            + f'<text x="{_f(track_x + track_w + 12)}" y="{_f(y + 4)}">{pct(row.estimate)}'
            f'<tspan class="muted" dx="6">n={row.n:,}</tspan></text></g>'
        )
    height = top + row_h * len(rows)
    return _svg(width, height, "".join(parts), f"{caption} by {len(rows)} groups")


@dataclass(frozen=True)
class DeltaRow:
    """One change of :func:`delta_bars`: B minus A with its paired 95% interval."""

    label: str
    """What changed (a scorer, a cohort): untrusted text."""
    delta: float
    """The change, a difference of shares in [-1, 1]."""
    low: float | None
    """The interval's lower end (None: not computed)."""
    high: float | None
    """The interval's upper end."""


def delta_bars(rows: Sequence[DeltaRow], *, width: int = 620) -> Markup:
    """Changes around a zero line: a bar to the change, the paired interval as a whisker.

    The axis is symmetric and just wide enough for the widest interval (at least ±5 pp),
    so small changes stay visible.
    """
    if not rows:
        return Markup("")
    label_w, value_w, row_h, top = 170, 120, 28, 22
    track_x, track_w = label_w, width - label_w - value_w
    ends = [v for r in rows for v in (r.delta, r.low, r.high) if v is not None]
    reach = max([0.05, *(abs(v) for v in ends if math.isfinite(v))])
    reach = min(1.0, math.ceil(reach * 20) / 20)

    def x_of(value: float) -> float:
        return track_x + track_w * (_clamp(value, -reach, reach) + reach) / (2 * reach)

    zero = x_of(0.0)
    parts = [
        f'<line class="zero" x1="{_f(zero)}" x2="{_f(zero)}" y1="{top - 6}" '
        f'y2="{_f(top + row_h * len(rows) - 6)}"/>'
    ]
    for tick in (-reach, 0.0, reach):
        parts.append(
            f'<text class="muted" x="{_f(x_of(tick))}" y="12" text-anchor="middle">'
            f"{signed_pct(tick, 0)}</text>"
        )
    for i, row in enumerate(rows):
        y = top + row_h * i + row_h / 2 - 4
        name = _text(_short(escape.terminal(row.label, limit=200)))
        sign = "pos" if row.delta > 0 else "neg" if row.delta < 0 else "zero"
        end = x_of(row.delta)
        bar = (
            f'<rect class="{sign}" x="{_f(min(zero, end))}" y="{_f(y - 6)}" '
            f'width="{_f(max(abs(end - zero), 1))}" height="12" rx="2" fill-opacity="0.35"/>'
        )
        ci = ""
        interval = ""
        if row.low is not None and row.high is not None:
            lx, hx = x_of(row.low), x_of(row.high)
            ci = (
                f'<line class="whisker" x1="{_f(lx)}" x2="{_f(hx)}" y1="{_f(y)}" y2="{_f(y)}"/>'
                f'<line class="whisker" x1="{_f(lx)}" x2="{_f(lx)}" y1="{_f(y - 5)}" '
                f'y2="{_f(y + 5)}"/><line class="whisker" x1="{_f(hx)}" x2="{_f(hx)}" '
                f'y1="{_f(y - 5)}" y2="{_f(y + 5)}"/>'
            )
            interval = f" [{signed_pct(row.low)}, {signed_pct(row.high)}]"
        parts.append(
            f"<g><title>{_text(row.label, 200)}: {signed_pct(row.delta)}{interval}</title>"
            f'<text x="{label_w - 10}" y="{_f(y + 4)}" text-anchor="end">{name}</text>'
            f"{bar}{ci}"
            f'<circle class="point" cx="{_f(end)}" cy="{_f(y)}" r="3.5"/>'
            f'<text x="{_f(track_x + track_w + 12)}" y="{_f(y + 4)}">{signed_pct(row.delta)}</text>'
            "</g>"
        )
    height = top + row_h * len(rows)
    return _svg(width, height, "".join(parts), f"changes of {len(rows)} figures, B minus A")


def heat_map(labels: Sequence[str], matrix: Sequence[Sequence[int]], *, cell: int = 56) -> Markup:
    """A confusion matrix: rows expected, columns predicted, shaded by the row's share.

    Args:
        labels: The labels, in the matrix's order (untrusted text).
        matrix: ``matrix[i][j]``: items expected ``labels[i]`` and predicted ``labels[j]``.
        cell: Side of a cell in pixels.
    """
    n = len(labels)
    if n == 0:
        return Markup("")
    left, top = 118, 44
    width, height = left + cell * n + 8, top + cell * n + 30
    parts = [
        f'<text class="muted" x="{_f(left + cell * n / 2)}" y="12" text-anchor="middle">'
        "predicted</text>",
        f'<text class="muted" x="12" y="{_f(top + cell * n / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_f(top + cell * n / 2)})">expected</text>',
    ]
    shown = [_text(_short(escape.terminal(label, limit=200))[:14]) for label in labels]
    for j, name in enumerate(shown):
        parts.append(
            f'<text x="{_f(left + cell * j + cell / 2)}" y="{top - 8}" text-anchor="middle">'
            f"{name}</text>"
        )
    for i, row in enumerate(matrix):
        total = sum(row)
        parts.append(
            f'<text x="{left - 8}" y="{_f(top + cell * i + cell / 2 + 4)}" text-anchor="end">'
            f"{shown[i]}</text>"
        )
        for j, count in enumerate(row):
            share = count / total if total else 0.0
            kind = "pos" if i == j else "neg"
            ink = "on-strong" if share > 0.5 else ""  # light text on a dark cell
            x, y = left + cell * j, top + cell * i
            parts.append(
                f"<g><title>expected {_text(labels[i], 200)}, predicted "
                f"{_text(labels[j], 200)}: {count:,} ({pct(share)} of the row)</title>"
                f'<rect class="track" x="{x}" y="{y}" width="{cell}" height="{cell}"/>'
                f'<rect class="{kind}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill-opacity="{_f(0.08 + 0.8 * share if count else 0)}" stroke-opacity="0"/>'
                f'<rect class="cell-line" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                'fill="none"/>'
                f'<text class="{ink}" x="{_f(x + cell / 2)}" y="{_f(y + cell / 2 + 1)}" '
                f'text-anchor="middle">{count:,}</text>'
                f'<text class="{ink or "muted"}" x="{_f(x + cell / 2)}" '
                f'y="{_f(y + cell / 2 + 15)}" text-anchor="middle" font-size="10">'
                f"{pct(share, 0)}</text></g>"
            )
    return _svg(width, height, "".join(parts), f"confusion matrix of {n} labels", "heat")


def sparkline(
    values: Sequence[float | None],
    *,
    width: int = 120,
    height: int = 28,
    describe: Callable[[float], str] = pct,
) -> Markup:
    """A line over shares in [0, 1], oldest first; a gap where a value is None."""
    points = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if not points:
        return Markup("")
    step = (width - 6) / max(len(values) - 1, 1)
    paths: list[list[str]] = []
    run: list[str] = []
    for i, v in enumerate(values):
        if v is None or not math.isfinite(v):
            if run:
                paths.append(run)
            run = []
            continue
        run.append(f"{_f(3 + step * i)},{_f(height - 3 - (height - 6) * _clamp(v))}")
    if run:
        paths.append(run)
    lines = "".join(
        f'<polyline class="spark" points="{" ".join(p)}"/>'
        if len(p) > 1
        else f'<circle class="point" cx="{p[0].split(",")[0]}" cy="{p[0].split(",")[1]}" r="2"/>'
        for p in paths
    )
    last_i, last = points[-1]
    dot = (
        f'<circle class="point" cx="{_f(3 + step * last_i)}" '
        f'cy="{_f(height - 3 - (height - 6) * _clamp(last))}" r="2.5"/>'
    )
    label = f"{len(points)} values, last {describe(last)}"
    return _svg(width, height, lines + dot, label)


_BANDS = ("healthy", "review", "danger")


def band_strip(bands: Sequence[str | None], *, width: int = 160, height: int = 12) -> Markup:
    """One segment per item coloured by its band (healthy, review, danger; grey: none)."""
    if not bands:
        return Markup("")
    gap = 1 if len(bands) < width / 3 else 0
    step = width / len(bands)
    parts = []
    for i, band in enumerate(bands):
        kind = band if band in _BANDS else "none"
        parts.append(
            f'<rect class="band-{kind}" x="{_f(step * i)}" y="0" '
            f'width="{_f(max(step - gap, 0.5))}" height="{height}" rx="1"/>'
        )
    counts = ", ".join(f"{sum(1 for b in bands if b == k)} {k}" for k in _BANDS)
    return _svg(width, height, "".join(parts), f"{len(bands)} items: {counts}")
