"""From critiques to one verdict — pure, deterministic code, never an LLM.

The rules, in order of precedence:

1. A callout whose quote is not verbatim in the output is demoted to an opinion.
2. A verified callout counts as evidence only from a critic that scored its dimension
   low (≤ 3): a critic cannot give a 5 and complain in the same breath.
3. Verified callouts of one (dimension, kind) are clustered when their spans overlap by
   half the shorter one, or share a sentence and the same rival figure; a cluster raised
   by two critics or more is *corroborated*.
4. A corroborated contradiction is a hard REJECT. An uncorroborated contradiction is
   REVISE and escalates. Unsupported claims cap the verdict at REVISE, never REJECT.
5. Otherwise the median decides: ACCEPT when, on every dimension, at most a minority
   of critics scored low; else REVISE. Opinions are outvoted this way.
6. ACCEPT despite a critic's low score (a finding nobody corroborated) escalates.
7. With no live critic there is no jury: REVISE and escalate. With fewer than half of
   the roster alive the verdict stands but escalates: a minority cannot speak for it.
8. A critic's first ``MAX_CALLOUTS`` callouts are weighed, contradictions before the
   rest: checking a quote costs a pass over the output, and an output that draws more
   findings than that is decided by them already. How many were set aside is a reason.

Confidence is computed after the decision and never feeds back into it (see
:mod:`arbiter.jury.confidence`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from arbiter.contract import (
    DIMENSIONS,
    Callout,
    CriticOutcome,
    Critique,
    Decision,
    Finding,
    Verdict,
)
from arbiter.jury.confidence import confidence_of
from arbiter.scoring.quotes import Span, locate, normalize, overlap_ratio, sentence_index

__all__ = ["LOW_SCORE", "MAX_CALLOUTS", "MAX_FLIP_MARGIN", "most_severe", "severity", "synthesize"]

LOW_SCORE = 3
"""A score at or below this means the critic found a problem on that dimension."""
MAX_FLIP_MARGIN = 2
"""Flip margins are counted up to this; beyond it a verdict is as stable as it gets."""
MAX_CALLOUTS = 64
"""Callouts of one critic that are weighed (see rule 8); the rest are counted, not read."""
_KIND_ORDER = {"contradicted": 0, "unsupported": 1, "opinion": 2}
SPAN_OVERLAP = 0.5
"""Share of the shorter span two quotes must share to be the same finding."""

_SEVERITY: dict[Decision, int] = {"ACCEPT": 0, "REVISE": 1, "REJECT": 2}


@dataclass(frozen=True)
class _Evidence:
    critic: int
    callout: Callout
    span: Span
    sentence: int


@dataclass(frozen=True)
class _Cluster:
    dimension: int
    kind: str
    members: tuple[_Evidence, ...]

    @property
    def critics(self) -> frozenset[int]:
        return frozenset(e.critic for e in self.members)


@dataclass(frozen=True)
class _Outcome:
    decision: Decision
    escalate: bool
    reasons: tuple[str, ...]


def most_severe(callouts: Sequence[Callout], limit: int = MAX_CALLOUTS) -> list[Callout]:
    """The ``limit`` callouts that weigh most: contradictions, then the rest, each in order."""
    if len(callouts) <= limit:
        return list(callouts)
    ranked = sorted(range(len(callouts)), key=lambda i: (_KIND_ORDER[callouts[i].kind], i))
    return [callouts[i] for i in sorted(ranked[:limit])]


def _verify(output: str, critiques: Sequence[Critique]) -> tuple[list[_Evidence], list[Callout]]:
    evidence: list[_Evidence] = []
    opinions: list[Callout] = []
    for index, critique in enumerate(critiques):
        for callout in most_severe(critique.callouts):
            span = locate(callout.quote, output) if callout.kind != "opinion" else None
            if span is None:
                opinions.append(callout.model_copy(update={"kind": "opinion"}))
            else:
                evidence.append(_Evidence(index, callout, span, sentence_index(output, span[0])))
    return evidence, opinions


def _same_finding(a: _Evidence, b: _Evidence) -> bool:
    if overlap_ratio(a.span, b.span) >= SPAN_OVERLAP:
        return True
    rival_a = normalize(a.callout.rival or "")
    return (
        bool(rival_a) and a.sentence == b.sentence and rival_a == normalize(b.callout.rival or "")
    )


def _cluster(evidence: Sequence[_Evidence]) -> list[_Cluster]:
    """Union-find over evidence of the same (dimension, kind), ordered by first span."""
    parent = list(range(len(evidence)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in combinations(range(len(evidence)), 2):
        a, b = evidence[i], evidence[j]
        same_kind = (a.callout.dimension, a.callout.kind) == (b.callout.dimension, b.callout.kind)
        if same_kind and _same_finding(a, b):
            parent[find(i)] = find(j)
    groups: dict[int, list[_Evidence]] = {}
    for i, item in enumerate(evidence):
        groups.setdefault(find(i), []).append(item)
    clusters = [
        _Cluster(DIMENSIONS.index(m[0].callout.dimension), m[0].callout.kind, tuple(m))
        for m in groups.values()
    ]
    return sorted(clusters, key=lambda c: (min(e.span[0] for e in c.members), c.dimension, c.kind))


def _decide(low: Sequence[Sequence[bool]], clusters: Sequence[_Cluster]) -> _Outcome:
    """The decision as a function of which (critic, dimension) scores are low."""
    n = len(low)
    counted = [(c, [i for i in sorted(c.critics) if low[i][c.dimension]]) for c in clusters]
    contradictions = [(c, who) for c, who in counted if c.kind == "contradicted" and who]
    corroborated = [c for c, who in contradictions if len(who) >= 2]
    if corroborated:
        return _Outcome(
            "REJECT",
            False,
            (f"hard block: a contradiction quoted by {len(corroborated[0].critics)} critics",),
        )
    if contradictions:
        why = (
            "escalate: critics disagree and the finding is not corroborated"
            if n > 1
            else "escalate: one critic alone cannot corroborate its finding"
        )
        return _Outcome(
            "REVISE", True, ("a quoted contradiction that no second critic corroborates", why)
        )
    if any(c.kind == "unsupported" and who for c, who in counted):
        return _Outcome("REVISE", False, ("a quoted claim the context does not support",))
    majority_low = [d for d in range(len(DIMENSIONS)) if sum(row[d] for row in low) > (n - 1) // 2]
    if majority_low:
        names = ", ".join(DIMENSIONS[d] for d in majority_low)
        return _Outcome("REVISE", False, (f"the median score is low on {names}",))
    dissent = [d for d in range(len(DIMENSIONS)) if any(row[d] for row in low)]
    if dissent:
        names = ", ".join(DIMENSIONS[d] for d in dissent)
        return _Outcome(
            "ACCEPT",
            True,
            (
                f"accepted by the median, but a critic scored {names} low without corroboration",
                "escalate: accepting despite an uncorroborated finding",
            ),
        )
    return _Outcome("ACCEPT", False, ("no critic found a problem",))


def _flip_margin(
    scores: Sequence[Sequence[int]], clusters: Sequence[_Cluster], decision: Decision
) -> int:
    """Single ±1 score changes the decision survives, counted up to ``MAX_FLIP_MARGIN``.

    Only whether a score is low matters to the decision, so the search is over sets of
    (critic, dimension) cells whose low/high side flips, each costing the number of ±1
    steps needed to cross the threshold.
    """
    cells = [(c, d) for c in range(len(scores)) for d in range(len(DIMENSIONS))]
    cost = {
        (c, d): (LOW_SCORE + 1 - s) if s <= LOW_SCORE else (s - LOW_SCORE)
        for (c, d), s in ((cell, scores[cell[0]][cell[1]]) for cell in cells)
    }
    budget = MAX_FLIP_MARGIN + 1
    base = [[s <= LOW_SCORE for s in row] for row in scores]
    cheapest = budget + 1
    for size in range(1, budget + 1):
        for subset in combinations(cells, size):
            total = sum(cost[cell] for cell in subset)
            if total >= cheapest:
                continue
            low = [row[:] for row in base]
            for c, d in subset:
                low[c][d] = not low[c][d]
            if _decide(low, clusters).decision != decision:
                cheapest = total
    return min(cheapest - 1, MAX_FLIP_MARGIN)


def _aggregate(scores: Sequence[Sequence[int]], clusters: Sequence[_Cluster]) -> dict[str, float]:
    result: dict[str, float] = {}
    for d, name in enumerate(DIMENSIONS):
        column = [row[d] for row in scores]
        contradicting = [
            scores[i][d]
            for c in clusters
            if c.kind == "contradicted" and c.dimension == d
            for i in c.critics
            if scores[i][d] <= LOW_SCORE
        ]
        result[name] = float(min(contradicting) if contradicting else statistics.median(column))
    return result


def _agreement(scores: Sequence[Sequence[int]]) -> float:
    spreads = [
        1 - (max(row[d] for row in scores) - min(row[d] for row in scores)) / 4
        for d in range(len(DIMENSIONS))
    ]
    return sum(spreads) / len(spreads)


def _finding(cluster: _Cluster, names: Sequence[str], low: Sequence[Sequence[bool]]) -> Finding:
    """A cluster as reported; corroborated as the decision counts it (low scorers only)."""
    first = cluster.members[0].callout
    counted = [i for i in cluster.critics if low[i][cluster.dimension]]
    rival = next((e.callout.rival for e in cluster.members if e.callout.rival), None)
    return Finding(
        dimension=DIMENSIONS[cluster.dimension],
        kind="contradicted" if cluster.kind == "contradicted" else "unsupported",
        quote=first.quote,
        rival=rival,
        claim=first.claim,
        critics=[names[i] for i in sorted(cluster.critics)],
        corroborated=len(counted) >= 2,
    )


def synthesize(output: str, outcomes: Sequence[CriticOutcome]) -> Verdict:
    """Turn the critics' outcomes into one verdict.

    Args:
        output: The output under judgement (quotes are checked against it).
        outcomes: Every critic's outcome, in roster order; dead critics are skipped.

    Returns:
        The verdict, with its findings, opinions, reasons and confidence. An output with
        no text at all answers no task: it is rejected whatever the critics said (they
        can quote nothing from it), with the confidence of a fact, not of a vote.
    """
    if not output.strip():
        return Verdict(
            decision="REJECT",
            confidence=0.95,
            flip_margin=MAX_FLIP_MARGIN,
            agreement=1.0,
            escalate=False,
            reasons=["the output is empty: nothing in it answers the task"],
            scores=dict.fromkeys(DIMENSIONS, 1.0),
            findings=[],
            opinions=[],
            critiques=list(outcomes),
        )
    live = [o for o in outcomes if o.status == "ok" and o.critique is not None]
    if not live:
        return Verdict(
            decision="REVISE",
            confidence=0.34,
            flip_margin=0,
            agreement=0.0,
            escalate=True,
            reasons=["no jury: no critic returned a usable critique", "escalate: no jury"],
            scores={},
            findings=[],
            opinions=[],
            critiques=list(outcomes),
        )
    critiques = [o.critique for o in live if o.critique is not None]
    names = [o.critic for o in live]
    scores = [[c.score(d) for d in DIMENSIONS] for c in critiques]
    evidence, opinions = _verify(output, critiques)
    clusters = _cluster(evidence)
    low = [[s <= LOW_SCORE for s in row] for row in scores]
    outcome = _decide(low, clusters)
    flip_margin = _flip_margin(scores, clusters, outcome.decision)
    agreement = _agreement(scores)
    findings = [_finding(c, names, low) for c in clusters]
    reasons = list(outcome.reasons)
    for name, critique in zip(names, critiques, strict=True):
        if len(critique.callouts) > MAX_CALLOUTS:
            reasons.append(
                f"{name} listed {len(critique.callouts)} callouts; the {MAX_CALLOUTS} most "
                "severe were weighed"
            )
    dead = [o.critic for o in outcomes if o not in live]
    escalate = outcome.escalate
    if dead:
        reasons.append(f"{len(live)} of {len(outcomes)} critics answered (dead: {', '.join(dead)})")
        if 2 * len(live) < len(outcomes):
            escalate = True
            reasons.append("escalate: fewer than half of the jury answered")
    unanimous_unevidenced = len({tuple(row) for row in scores}) == 1 and not evidence
    return Verdict(
        decision=outcome.decision,
        confidence=confidence_of(
            flip_margin=flip_margin,
            agreement=agreement,
            escalate=escalate,
            unanimous_unevidenced=unanimous_unevidenced,
        ),
        flip_margin=flip_margin,
        agreement=round(agreement, 6),
        escalate=escalate,
        reasons=reasons,
        scores=_aggregate(scores, clusters),
        findings=findings,
        opinions=opinions,
        critiques=list(outcomes),
    )


def severity(decision: Decision) -> int:
    """0 for ACCEPT, 1 for REVISE, 2 for REJECT."""
    return _SEVERITY[decision]
