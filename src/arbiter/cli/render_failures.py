"""How ``arbiter report RUN --failures`` prints the examples worth a look (Rich).

Outputs, explanations, quotes and ids come from systems, datasets and models: each is
made inert with :func:`arbiter.escape.terminal` on one line and clipped, and never
parsed as Rich markup.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from arbiter import escape
from arbiter.harness.failures import FailingExample, FailingRepetition, Failures, ScorerVerdict
from arbiter.harness.pairs import shown_outcome

__all__ = ["failures_renderable"]

_STYLE = {
    "pass": "green",
    "fail": "red",
    "abstain": "yellow",
    "error": "magenta",
    "passed": "green",
    "failed": "red",
    "unknown": "yellow",
}
_MARK = {"failed": "✗", "unknown": "?", "passed": "~"}
_OUTPUT_CHARS = 300
_TEXT_CHARS = 240


def _inert(value: object, limit: int = _TEXT_CHARS) -> str:
    return escape.terminal(value, limit=limit, single_line=True)


def _evidence_lines(verdict: ScorerVerdict, indent: str) -> list[Text]:
    lines = []
    for evidence in verdict.evidence:
        checked = {True: "verified", False: "not found", None: "unchecked"}[evidence.verified]
        line = Text(indent)
        line.append(f"“{_inert(evidence.quote)}”")
        line.append(f" {checked}", style="green" if evidence.verified else "yellow")
        if evidence.note:
            line.append(f" — {_inert(evidence.note)}", style="dim")
        lines.append(line)
    more = verdict.evidence_total - len(verdict.evidence)
    if more > 0:
        lines.append(Text(f"{indent}… {more} more quote(s)", style="dim"))
    return lines


def _scorer_lines(verdict: ScorerVerdict, width: int) -> list[Text]:
    line = Text("    ")
    line.append(_inert(verdict.name, 40).ljust(width))
    line.append(f"  {verdict.verdict:<7} ", style=_STYLE[verdict.verdict])
    if verdict.reason:
        line.append(_inert(verdict.reason))
    value = verdict.value
    if value is not None and not (verdict.verdict in ("pass", "fail") and value in (0.0, 1.0)):
        line.append(f" (value {value:.4g})", style="dim")
    if not verdict.gating:
        line.append(" (reported only)", style="dim")
    return [line, *_evidence_lines(verdict, " " * (width + 14))]


def _repetition_lines(rep: FailingRepetition) -> list[Text]:
    head = Text(f"  rep {rep.repetition}  ")
    head.append(shown_outcome(rep.outcome), style=_STYLE.get(rep.outcome, "red"))
    if rep.error is not None:
        head.append(f"  call failed: {_inert(rep.error)}", style="red")
    elif rep.output is not None:
        clipped = " clipped" if rep.output_chars > min(len(rep.output), _OUTPUT_CHARS) else ""
        head.append(f"  output: {_inert(rep.output, _OUTPUT_CHARS)}")
        head.append(f" [{rep.output_chars:,} chars{clipped}]", style="dim")
    width = max((len(_inert(s.name, 40)) for s in rep.scores), default=0)
    lines = [head]
    for verdict in rep.scores:
        lines += _scorer_lines(verdict, width)
    return lines


def _example_lines(example: FailingExample) -> list[Text]:
    head = Text()
    head.append(f"{_MARK[example.outcome]} ", style=_STYLE[example.outcome])
    head.append(_inert(example.example_id, 120), style="bold")
    head.append(f"  {shown_outcome(example.outcome)}", style=_STYLE[example.outcome])
    if example.cohort is not None:
        head.append(f" · cohort {_inert(example.cohort, 80)}")
    if example.expected is not None:
        head.append(f" · expected {_inert(example.expected)}")
    lines = [head]
    for rep in example.repetitions:
        lines += _repetition_lines(rep)
    if example.clean_repetitions:
        shown = ", ".join(str(r) for r in example.clean_repetitions)
        lines.append(Text(f"  passed by every scorer on rep {shown}", style="dim"))
    return lines


def failures_renderable(failures: Failures) -> RenderableType:
    """The listed examples, worst first, with a line saying how many were left out."""
    if not failures.listed_total:
        return Text(
            f"every scorer passed every repetition of the {failures.examples_total} examples",
            style="green",
        )
    parts: list[RenderableType] = [
        Text(
            f"{failures.listed_total} of {failures.examples_total} examples were not passed "
            "by every scorer on every repetition (worst first)",
            style="bold",
        )
    ]
    for example in failures.examples:
        parts += [Text(""), *_example_lines(example)]
    if failures.left_out:
        parts += [
            Text(""),
            Text(
                f"… and {failures.left_out} more examples not shown (--limit 0 shows all)",
                style="dim",
            ),
        ]
    return Group(*parts)
