"""How the jury commands print: critic tables, findings, verdicts, evaluations.

Text that comes from cases or critics is never parsed as Rich markup (an output under
judgement may well contain ``[brackets]``) and its control characters are shown, not
obeyed (:func:`arbiter.escape.terminal`): a judged output cannot clear the screen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arbiter import escape
from arbiter.contract import DIMENSIONS, Case, Decision, Interval, Verdict
from arbiter.jury.audit import VerdictChange, VerdictSummary
from arbiter.jury.evaluation import DetectionFigures, JuryEvaluation

__all__ = [
    "baseline",
    "critic_table",
    "demo",
    "evaluation",
    "groups",
    "judgment",
    "judgment_summary",
    "replay",
]

_DECISIONS: tuple[Decision, ...] = ("ACCEPT", "REVISE", "REJECT")
_STYLE = {"ACCEPT": "bold green", "REVISE": "bold yellow", "REJECT": "bold red"}
_SHORT = {"accuracy": "acc", "consistency": "con", "completeness": "cmp"}


_QUOTE_LIMIT = 500
"""Longest quote, claim or error printed; the audit artifact keeps them whole."""


def _plain(console: Console, text: str = "", style: str | None = None) -> None:
    console.print(Text(escape.terminal(text), style=style or ""), soft_wrap=True)


def _one(value: str) -> str:
    """A model-written claim, quote or rival on one line, bounded, controls shown."""
    return escape.terminal(value, single_line=True, limit=_QUOTE_LIMIT)


def _t(value: object, style: str = "") -> Text:
    return Text(escape.terminal(value, single_line=True, limit=_QUOTE_LIMIT), style=style)


def critic_table(verdict: Verdict) -> Table:
    """One row per critic (scores, latency, status) and the aggregate row."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("critic")
    table.add_column("model")
    for dimension in DIMENSIONS:
        table.add_column(_SHORT[dimension], justify="right")
    table.add_column("ms", justify="right")
    table.add_column("status")
    for outcome in verdict.critiques:
        critique = outcome.critique
        scores = [str(critique.score(d)) if critique else "-" for d in DIMENSIONS]
        status = "ok" if outcome.status == "ok" else f"dead: {outcome.error or 'no answer'}"
        table.add_row(
            _t(outcome.critic),
            _t(outcome.model),
            *scores,
            f"{outcome.latency_ms:.1f}",
            _t(status, style="" if outcome.status == "ok" else "red"),
        )
    if verdict.scores:
        aggregate = [f"{verdict.scores[d]:g}" for d in DIMENSIONS]
        table.add_row(Text("AGGREGATE", style="bold"), "", *aggregate, "", "")
    return table


def verdict_line(verdict: Verdict) -> Text:
    """``VERDICT: REVISE  confidence 0.50 (flip-margin 0, agreement 0.833)``."""
    line = Text("VERDICT: ")
    line.append(verdict.decision, style=_STYLE[verdict.decision])
    line.append(
        f"  confidence {verdict.confidence:.2f} "
        f"(flip-margin {verdict.flip_margin}, agreement {verdict.agreement:.3f})"
    )
    return line


def judgment(console: Console, case: Case, verdict: Verdict, *, header: bool = False) -> None:
    """The full account of one judgment: critics, findings, opinions, verdict, reasons."""
    if header:
        expected = f"  (expected {case.expected})" if case.expected else ""
        _plain(console, f"== {escape.terminal(case.id, single_line=True)}{expected}", "bold")
    console.print(critic_table(verdict))
    live = sum(o.status == "ok" for o in verdict.critiques)
    if verdict.findings:
        _plain(console, "findings:")
    for finding in verdict.findings:
        tag = "CORROBORATED" if finding.corroborated else "unconfirmed"
        _plain(
            console,
            f"[{len(finding.critics)}/{live}] {tag} {finding.dimension} {finding.kind} "
            f"{_one(finding.claim)}",
            "bold" if finding.corroborated else None,
        )
        _plain(console, f"  > {_one(finding.quote)}")
        if finding.rival:
            _plain(console, f"  rival: {_one(finding.rival)}")
        _plain(console, f"  critics: {', '.join(finding.critics)}", "dim")
    if verdict.opinions:
        _plain(console, "opinions (quote not in the output, so outvoted by the median):")
    for opinion in verdict.opinions:
        claim, quote = _one(opinion.claim), _one(opinion.quote)
        _plain(console, f"  - {opinion.dimension}: {claim}  \u201c{quote}\u201d")
    console.print(verdict_line(verdict), soft_wrap=True)
    escalations = [r.removeprefix("escalate: ") for r in verdict.reasons if r.startswith("escal")]
    if verdict.escalate:
        why = escalations[0] if escalations else "the jury could not settle it"
        _plain(console, f"ESCALATE -> human review: {why}", "bold magenta")
    for reason in verdict.reasons:
        if not reason.startswith("escalate: "):
            _plain(console, f"  {reason}")
    _plain(console)


def judgment_summary(console: Console, cases: Sequence[Case], verdicts: Sequence[Verdict]) -> None:
    """One line per judged case, for ``judge --file``."""
    table = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title="summary", title_justify="left"
    )
    for column in ("case", "decision", "confidence", "escalate", "expected"):
        table.add_column(column, justify="right" if column == "confidence" else "left")
    for case, verdict in zip(cases, verdicts, strict=True):
        table.add_row(
            _t(case.id),
            Text(verdict.decision, style=_STYLE[verdict.decision]),
            f"{verdict.confidence:.2f}",
            "ESCALATE" if verdict.escalate else "",
            case.expected or "",
        )
    console.print(table)


def demo(console: Console, cases: Sequence[Case], verdicts: Sequence[Verdict]) -> None:
    """The compact jury section of ``arbiter demo``."""
    _plain(
        console,
        "\njury: three offline critics (factual, logical, adversary): the string detectors",
        "bold",
    )
    for case, verdict in zip(cases, verdicts, strict=True):
        line = Text(f"  {escape.terminal(case.id, single_line=True):<10} ")
        line.append(f"{verdict.decision:<6}", style=_STYLE[verdict.decision])
        line.append(f"  confidence {verdict.confidence:.2f}")
        line.append("  ESCALATE" if verdict.escalate else "")
        line.append(f"  (expected {case.expected})" if case.expected else "")
        console.print(line, soft_wrap=True)
        for finding in verdict.findings:
            tag = "CORROBORATED" if finding.corroborated else "unconfirmed"
            rival = f" (rival: {_one(finding.rival)})" if finding.rival else ""
            _plain(console, f"    [{len(finding.critics)}] {tag} {_one(finding.claim)}{rival}")
            _plain(console, f"      > {_one(finding.quote)}")
        if not verdict.findings:
            _plain(console, f"    {verdict.reasons[0]}")


# --------------------------------------------------------------------------- evaluation


def _rate(interval: Interval | None) -> str:
    if interval is None:
        return "n/a (no such cases)"
    if interval.n == 0:
        return "undefined (0/0)"
    hits = round(interval.estimate * interval.n)
    return (
        f"{interval.estimate:.2f} ({hits}/{interval.n}) [{interval.low:.2f}, {interval.high:.2f}]"
    )


def _opt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _row(console: Console, label: str, value: str) -> None:
    _plain(console, f"{label:<42} {value}")


def _detection(console: Console, figures: DetectionFigures) -> None:
    _row(console, "detection precision", _rate(figures.precision))
    _row(console, "detection recall", _rate(figures.recall))
    _row(console, "recall (string-detectable defects)", _rate(figures.recall_string))
    _row(console, "recall (semantic-only defects)", _rate(figures.recall_semantic_only))
    if figures.recall_string and figures.recall_semantic_only:
        _plain(console, "  ^ the gap between these two recalls is what a real LLM jury must earn")
    balanced = figures.balanced_accuracy
    _row(console, "balanced accuracy", "n/a" if balanced is None else f"{balanced:.3f}")
    _row(
        console,
        "detection confusion",
        f"TP {figures.tp}  FP {figures.fp}  FN {figures.fn}  TN {figures.tn}",
    )


def evaluation(console: Console, result: JuryEvaluation, *, critics: Sequence[str]) -> None:
    """Every figure of ``arbiter jury eval``, in the reference's order."""
    _plain(console, f"=== jury eval on {result.n_cases} cases ({', '.join(critics)}) ===", "bold")
    if result.detection is not None:
        _detection(console, result.detection)
    if result.defect_recall is not None:
        _row(console, "defect recall (span level)", _rate(result.defect_recall))
    if result.verdict_accuracy is not None:
        _row(console, "exact-verdict accuracy", _rate(result.verdict_accuracy))
        _confusion(console, result.confusion)
    corroboration = _opt(result.corroboration_rate)
    _row(
        console,
        "escalate rate",
        f"{result.escalate_rate:.2f}   corroboration rate {corroboration}",
    )
    kept = round(result.coverage * result.n_cases)
    right = (
        None if result.accuracy_at_coverage is None else round(result.accuracy_at_coverage * kept)
    )
    _row(
        console,
        "risk-coverage",
        f"coverage {result.coverage:.2f} ({kept}/{result.n_cases})   accuracy@coverage "
        f"{_opt(result.accuracy_at_coverage)}"
        + (f" ({right}/{kept})" if right is not None else ""),
    )
    low, high = result.ece_interval
    _row(
        console,
        "calibration",
        f"ECE {result.ece:.3f} (bootstrap 95% CI [{low:.3f}, {high:.3f}])   "
        f"mean conf {result.mean_confidence:.3f} vs accuracy {result.accuracy:.3f}",
    )
    _row(
        console,
        "discrimination",
        f"conf|correct {_opt(result.confidence_when_right, 3)} vs "
        f"conf|wrong {_opt(result.confidence_when_wrong, 3)}",
    )
    _ablation(console, result)
    _kappa(console, result)
    if result.gate_failures:
        for failure in result.gate_failures:
            _plain(console, f"GATE FAILED: {failure}", "bold red")
    else:
        _plain(console, "gates: calibration and escalate rate within bounds", "green")


def _confusion(console: Console, confusion: Mapping[str, Mapping[str, int]]) -> None:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("expected \\ decided")
    for decision in _DECISIONS:
        table.add_column(decision, justify="right")
    for expected in _DECISIONS:
        table.add_row(expected, *(str(confusion[expected][d]) for d in _DECISIONS))
    console.print(table)


def _ablation(console: Console, result: JuryEvaluation) -> None:
    _plain(console, "ablation (does the jury beat one critic?)")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("jury", "precision", "recall", "accuracy"):
        table.add_column(column, justify="left" if column == "jury" else "right")
    for row in result.ablation:
        table.add_row(
            _t("+".join(row.critics)),
            f"{row.precision:.2f}",
            f"{row.recall:.2f}",
            _opt(row.accuracy),
        )
    console.print(table)


def _kappa(console: Console, result: JuryEvaluation) -> None:
    _plain(console, "critic agreement: Cohen's κ of solo verdicts (> 0.9 = one critic twice over)")
    for row in result.kappa:
        value = "undefined (both constant)" if row.kappa is None else f"{row.kappa:.3f}"
        flag = "  <- nearly the same critic" if row.kappa is not None and row.kappa > 0.9 else ""
        _plain(console, f"  {row.a} vs {row.b}: κ {value} (n={row.n}){flag}")


def groups(console: Console, figures: Mapping[str, DetectionFigures], by: str) -> None:
    """Detection figures per group of ``--by``."""
    table = Table(title=f"detection by {by}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("group", "n", "TP", "FP", "FN", "TN", "precision", "recall", "bal. acc."):
        table.add_column(column, justify="left" if column == "group" else "right")
    for name, g in figures.items():
        table.add_row(
            _t(name),
            str(g.n),
            str(g.tp),
            str(g.fp),
            str(g.fn),
            str(g.tn),
            _opt(g.precision.estimate) if g.precision.n else "n/a",
            _opt(g.recall.estimate) if g.recall.n else "n/a",
            "n/a" if g.balanced_accuracy is None else f"{g.balanced_accuracy:.3f}",
        )
    console.print(table)
    _plain(console, "bal. acc. = mean of recall and specificity; n/a where a group lacks a class")


def _mean_kappa(result: JuryEvaluation) -> str:
    values = [r.kappa for r in result.kappa if r.kappa is not None]
    if not values:
        return "undefined"
    return f"{sum(values) / len(values):.3f}"


def baseline(
    console: Console,
    *,
    samples: JuryEvaluation,
    critics: JuryEvaluation,
    sampled: str,
    names: Sequence[str],
    calls: int,
    identical: bool,
) -> None:
    """Both arms of ``arbiter jury baseline``, side by side."""
    k = len(names)
    table = Table(
        title=f"cost-matched baseline on {samples.n_cases} cases",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("figure")
    table.add_column(_t(f"{k} samples of {sampled}"), justify="right")
    table.add_column(_t(f"{k} critics ({', '.join(names)})"), justify="right")

    def detection(e: JuryEvaluation, name: str) -> str:
        interval: Interval | None = getattr(e.detection, name) if e.detection else None
        return _opt(interval.estimate) if interval and interval.n else "n/a"

    rows = [
        ("model calls", str(calls), str(calls)),
        ("detection precision", detection(samples, "precision"), detection(critics, "precision")),
        ("detection recall", detection(samples, "recall"), detection(critics, "recall")),
        (
            "exact-verdict accuracy",
            _opt(samples.verdict_accuracy.estimate if samples.verdict_accuracy else None),
            _opt(critics.verdict_accuracy.estimate if critics.verdict_accuracy else None),
        ),
        ("accuracy (verdict or detection)", _opt(samples.accuracy), _opt(critics.accuracy)),
        ("escalate rate", _opt(samples.escalate_rate), _opt(critics.escalate_rate)),
        ("mean κ between jurors", _mean_kappa(samples), _mean_kappa(critics)),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if identical:
        _plain(
            console,
            f"note: the {k} samples of {sampled} answered identically on every case (a "
            "deterministic provider such as mock), so κ between them is 1 or undefined and "
            "their 'corroboration' is one critic agreeing with itself; the experiment only "
            "means something with a real model.",
            "yellow",
        )


def replay(
    console: Console, run_id: str, kind: str, n: int, changes: Sequence[VerdictChange]
) -> None:
    """The verdicts of a replayed run that changed."""

    def show(s: VerdictSummary) -> str:
        return f"{s.decision} {s.confidence:.2f}{' ESCALATE' if s.escalate else ''}"

    _plain(
        console,
        f"replayed {n} judgments of jury run {run_id} ({kind}): {len(changes)} changed",
        "bold",
    )
    for change in changes:
        _plain(console, f"  {change.case_id}: {show(change.old)} -> {show(change.new)}")
