"""Figures compared with the context, and with the output's own other figures.

An output figure is backed when the context (or the task) states an equal one after
normalisation, or when it follows from stated figures by one step of arithmetic.
Otherwise its *counterpart* (see ``counterparts``) is the context figure of the same
kind whose nearby words overlap most with its own: a counterpart with another value is
a contradiction, no counterpart makes the figure unsupported.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from arbiter.contract import Callout
from arbiter.jury.detectors.analysis import Analysis, analyse
from arbiter.jury.detectors.clashes import clashes
from arbiter.jury.detectors.counterparts import Leads, Status, all_leads, has_equal
from arbiter.jury.detectors.quantities import Quantity
from arbiter.jury.detectors.settings import DetectorSettings

__all__ = ["contradicted_figures", "inconsistent_figures"]

_PROPOSAL = re.compile(
    r"\b(?:propose|suggest|recommend|plan|design|brainstorm|estimate|invent|imagine)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Judgement:
    status: Status
    counterpart: int | None = None


@dataclass(frozen=True)
class _Reading:
    out: Analysis
    ctx: Analysis
    judgements: tuple[_Judgement, ...]


def _judge(
    q: Quantity, ctx: Analysis, leads: Leads | None, settings: DetectorSettings
) -> _Judgement:
    """The output figure ``q`` judged with the sensitivities of one lens.

    Equal when the context (or the task) states an equal figure; derived when it follows
    from stated figures; else contradicted by its counterpart, the first of: the context
    figure backing the figure it restates, the one sharing most words with it, the lone
    one of its kind and unit; else unsupported or unpaired.
    """
    if leads is None or has_equal(q, ctx, settings.hedge_tolerance):
        return _Judgement("equal")
    if leads.derived:
        return _Judgement("derived")
    if settings.restatements and leads.restated is not None:
        return _Judgement("contradicted", leads.restated)
    if leads.best is not None and leads.best_score >= settings.figure_match:
        return _Judgement("contradicted", leads.best)
    if settings.lone_counterpart and leads.lone is not None:
        return _Judgement("contradicted", leads.lone)
    return _Judgement(leads.fallback)


@lru_cache(maxsize=256)
def _read(output: str, context: str, task: str, settings: DetectorSettings) -> _Reading:
    """The output's figures judged against the context (cached: two detectors ask)."""
    out, ctx = analyse(output), analyse(context)
    leads = all_leads(output, context, task)
    judgements = tuple(
        _judge(q, ctx, lead, settings) for q, lead in zip(out.quantities, leads, strict=True)
    )
    return _Reading(out, ctx, judgements)


def _unpack(reading: _Reading) -> tuple[Analysis, Analysis, tuple[_Judgement, ...]]:
    return reading.out, reading.ctx, reading.judgements


def _as_written(analysis: Analysis, q: Quantity) -> str:
    """The figure as written, with the noun it counts when it is a bare number."""
    if q.kind != "number":
        return analysis.text[q.start : q.end]
    tokens = analysis.tokens
    after = bisect_left(tokens.starts, q.end)
    if after < len(tokens) and tokens.stems[after] and tokens.starts[after] - q.end <= 1:
        return analysis.text[q.start : tokens.ends[after]]
    return analysis.text[q.start : q.end]


def contradicted_figures(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """Output figures that differ from their context counterpart, or have none.

    Args:
        task: What the output was asked to do; its figures count as backed.
        context: The source.
        output: The output under judgement.
        settings: The lens's sensitivities.

    Returns:
        ``accuracy`` callouts: ``contradicted`` with the context figure as rival, or
        ``unsupported`` (only when ``settings.unsupported_figures``, and never when the
        task asks to propose, plan or estimate: new figures are then the answer).

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.rival for c in contradicted_figures(
        ...     "", "Enrolled 240 participants across 6 sites.",
        ...     "Enrolled 240 participants across 8 sites.", DetectorSettings())]
        ['6 sites']
    """
    out, ctx, judgements = _unpack(_read(output, context, task, settings))
    callouts: list[Callout] = []
    # When the task asks for a proposal, the output's new figures are the proposal.
    unsupported = settings.unsupported_figures and not _PROPOSAL.search(task)
    for q, judgement in zip(out.quantities, judgements, strict=True):
        if judgement.status == "contradicted" and judgement.counterpart is not None:
            rival = _as_written(ctx, ctx.quantities[judgement.counterpart])
            callouts.append(
                Callout(
                    dimension="accuracy",
                    kind="contradicted",
                    claim=f"The output says {q.text}, the context says {rival}.",
                    quote=out.clause(q.start, q.end),
                    rival=rival,
                )
            )
        elif judgement.status == "unsupported" and unsupported:
            callouts.append(
                Callout(
                    dimension="accuracy",
                    kind="unsupported",
                    claim=f"The output states {q.text}, a figure the context does not give.",
                    quote=out.clause(q.start, q.end),
                )
            )
    return callouts


def inconsistent_figures(
    task: str, context: str, output: str, settings: DetectorSettings
) -> list[Callout]:
    """One quantity stated twice in the output with different values.

    Two output figures clash when the context backs neither and their nearby words
    overlap enough; when a sentence opening "In short" or "To confirm" restates an
    earlier figure differently; or when both answer the same context figure, one equal
    to it and one not. The suspect is the later or the unbacked one.

    Args:
        task: What the output was asked to do; its figures count as backed.
        context: The source (to tell backed figures from unbacked ones).
        output: The output under judgement.
        settings: The lens's sensitivities.

    Returns:
        ``consistency``/``contradicted`` callouts whose rival is the other statement.

    Examples:
        >>> from arbiter.jury.detectors.settings import DetectorSettings
        >>> [c.quote for c in inconsistent_figures("", "", "A total of £465. "
        ...     "To confirm, the total comes to £495.", DetectorSettings())]
        ['the total comes to £495']
    """
    out, ctx, judgements = _unpack(_read(output, context, task, settings))
    status = [j.status for j in judgements]
    counterparts = [j.counterpart for j in judgements]
    callouts: list[Callout] = []
    for suspect, partner in sorted(clashes(out, ctx, status, counterparts, settings).items()):
        q, other = out.quantities[suspect], out.quantities[partner]
        callouts.append(
            Callout(
                dimension="consistency",
                kind="contradicted",
                claim=f"The output says {q.text} here but {other.text} elsewhere.",
                quote=out.clause(q.start, q.end),
                rival=out.clause(other.start, other.end),
            )
        )
    return callouts
