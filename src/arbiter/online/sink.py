"""Where online results go: an append-only JSONL file, and a running summary of a batch.

``JsonlSink`` writes one ``OnlineResult`` per line and flushes each, so a crash loses
at most the line being written; it opens the file in append mode and never truncates
it. ``BatchSummary`` keeps counts and fixed-size latency sketches, never the results,
so a batch of any length is summarised in constant memory.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import BaseModel, Field

from arbiter.contract import ModelCalls, OnlineResult
from arbiter.online.judge_chain import FALLBACK_SOURCE
from arbiter.online.judge_panel import JudgedRun
from arbiter.scoring.rates import Rate

__all__ = [
    "BatchSummary",
    "JsonlSink",
    "LatencySketch",
    "LayerLatency",
    "SummaryReport",
]


class JsonlSink:
    """Append-only JSONL of ``OnlineResult``: one line per result, flushed per write.

    Args:
        path: The file; created (with its folder) if absent, appended to if present.

    Examples:
        >>> with JsonlSink(tmp_path / "results.jsonl") as sink:  # doctest: +SKIP
        ...     sink.write(result)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = self.path.open("a", encoding="utf-8", newline="\n")
        self.written = 0
        """Lines written through this sink."""

    def write(self, result: OnlineResult) -> None:
        """Append one result as one line (NaN and infinities become null) and flush."""
        self._file.write(result.model_dump_json() + "\n")
        self._file.flush()
        self.written += 1

    def close(self) -> None:
        """Close the file; later writes raise ``ValueError``."""
        self._file.close()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class LatencySketch:
    """Quantiles of a stream of latencies in constant memory, within 1% of the exact value.

    Values are counted in logarithmic buckets 1% wide; a quantile is reported as the
    middle of the bucket holding it. Sub-microsecond values share one bucket at 0.

    Examples:
        >>> sketch = LatencySketch()
        >>> for ms in (1.0, 2.0, 3.0, 4.0, 100.0):
        ...     sketch.add(ms)
        >>> round(sketch.quantile(0.5), 1)
        3.0
    """

    _GAMMA = 1.01
    _FLOOR_MS = 1e-3

    def __init__(self) -> None:
        self._buckets: Counter[int] = Counter()
        self._log_gamma = math.log(self._GAMMA)
        self.count = 0
        """Values added."""

    def add(self, value_ms: float) -> None:
        """Count one latency in milliseconds; NaN and negative values are ignored."""
        if not value_ms >= 0.0 or math.isinf(value_ms):
            return
        key = (
            -(2**31)
            if value_ms < self._FLOOR_MS
            else math.floor(math.log(value_ms) / self._log_gamma)
        )
        self._buckets[key] += 1
        self.count += 1

    def quantile(self, q: float) -> float | None:
        """The ``q``-quantile (nearest rank), or None when nothing was added."""
        if self.count == 0:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if seen >= rank:
                return 0.0 if key == -(2**31) else self._GAMMA ** (key + 0.5)
        return None  # pragma: no cover - rank <= count always lands in a bucket


class LayerLatency(BaseModel):
    """Latency of one layer over the items it ran on (within 1%)."""

    n: int
    """Items the layer ran on."""
    p50_ms: float | None
    """Median."""
    p95_ms: float | None
    """95th percentile."""


class SummaryReport(BaseModel):
    """What a batch of online scoring found."""

    batch_id: str | None = None
    """The batch, as stored."""
    items: int
    """Results, one per input line (unreadable lines included)."""
    flagged: Rate
    """Items flagged by the free layers (heuristics or grounding)."""
    escalated: Rate
    """Items sent to the expensive layers."""
    judge_reached: int
    """Items the judge chain was asked about."""
    scored_by_judge: Rate
    """Of those, the share a real judge answered (not the heuristics fallback)."""
    judge_sources: dict[str, int] = Field(default_factory=dict)
    """Judge outcomes by the source that resolved them."""
    chain_usage: ModelCalls = Field(default_factory=ModelCalls)
    """Calls, tokens and cost of every judge-chain attempt of the batch, summed."""
    judged: Rate | None = None
    """Items the LLM judge panels ruled on, of all items; None without a judge panel."""
    judged_by_trigger: dict[str, int] = Field(default_factory=dict)
    """Judged items by why they reached the judges: anomalous, flagged, sampled."""
    judge_verdicts: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Per judge: how many of its rulings were pass, fail and unknown."""
    judge_usage: ModelCalls = Field(default_factory=ModelCalls)
    """Calls, tokens and cost of every judge-panel call of the batch, summed."""
    flags_by_rule: dict[str, int] = Field(default_factory=dict)
    """Heuristic findings by rule, plus ``grounding`` for ungrounded claims."""
    latency: dict[str, LayerLatency] = Field(default_factory=dict)
    """Per layer (and ``total``): p50 / p95 over the items it ran on."""
    errors: dict[str, int] = Field(default_factory=dict)
    """Items with a failure, by kind (see :meth:`OnlineResult.error_kinds`)."""
    items_with_errors: int = 0
    """Items with at least one failure."""
    abstentions: dict[str, int] = Field(default_factory=dict)
    """Layers cut off by the escalation budget, by layer."""
    other_abstentions: dict[str, int] = Field(default_factory=dict)
    """Layers that abstained for a reason of their own (no input to replay, ...), by layer."""
    elapsed_s: float | None = None
    """Wall time of the batch."""


class BatchSummary:
    """Running summary of a batch; feed it every result with :meth:`add`."""

    def __init__(self) -> None:
        self.items = 0
        self._flagged = 0
        self._escalated = 0
        self._judge_sources: Counter[str] = Counter()
        self._rules: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._with_errors = 0
        self._abstained: Counter[str] = Counter()
        self._other_abstained: Counter[str] = Counter()
        self._latency: dict[str, LatencySketch] = {}
        self._panel = False
        self._judged: Counter[str] = Counter()
        self._verdicts: dict[str, Counter[str]] = {}
        self._usage = ModelCalls()
        self._chain_usage = ModelCalls()

    def add(self, result: OnlineResult) -> None:
        """Count one result."""
        self.items += 1
        self._flagged += result.flagged
        self._escalated += result.escalated
        if result.judge is not None:
            self._judge_sources[result.judge.source] += 1
            self._chain_usage = self._chain_usage + result.judge.model
        if result.heuristics is not None:
            self._rules.update(finding.rule for finding in result.heuristics.findings)
        if result.grounding is not None and result.grounding.flagged:
            self._rules["grounding"] += 1
        kinds = result.error_kinds()
        self._errors.update(kinds)
        self._with_errors += bool(kinds)
        for name, report in result.layers.items():
            if report.status == "ran":
                self._sketch(name).add(report.latency_ms)
            elif report.status == "abstained":
                (self._abstained if report.cut_off else self._other_abstained)[name] += 1
        if "error_kind" not in result.metadata:
            self._sketch("total").add(result.total_ms)
        self._add_judged(result)

    def _add_judged(self, result: OnlineResult) -> None:
        panel = result.layers.get("judge_panel")
        if panel is None or panel.status == "not_configured":
            return
        self._panel = True
        try:
            judged = result.payload("judge_panel", JudgedRun)
        except (TypeError, ValueError):  # a payload of another shape is not counted
            return
        if judged is None:
            return
        self._judged[judged.trigger] += 1
        for judge, verdict in judged.rulings.items():
            self._verdicts.setdefault(judge, Counter())[verdict] += 1
        self._usage = self._usage + judged.model

    def _sketch(self, name: str) -> LatencySketch:
        sketch = self._latency.get(name)
        if sketch is None:
            sketch = self._latency[name] = LatencySketch()
        return sketch

    def report(
        self, *, batch_id: str | None = None, elapsed_s: float | None = None
    ) -> SummaryReport:
        """The summary so far."""
        reached = sum(self._judge_sources.values())
        by_judge = reached - self._judge_sources.get(FALLBACK_SOURCE, 0)
        latency = {
            name: LayerLatency(n=s.count, p50_ms=s.quantile(0.5), p95_ms=s.quantile(0.95))
            for name, s in sorted(self._latency.items(), key=lambda kv: _layer_order(kv[0]))
        }
        return SummaryReport(
            batch_id=batch_id,
            items=self.items,
            flagged=Rate.of(self._flagged, self.items),
            escalated=Rate.of(self._escalated, self.items),
            judge_reached=reached,
            scored_by_judge=Rate.of(by_judge, reached),
            judge_sources=dict(self._judge_sources.most_common()),
            chain_usage=self._chain_usage,
            judged=Rate.of(sum(self._judged.values()), self.items) if self._panel else None,
            judged_by_trigger=dict(self._judged.most_common()),
            judge_verdicts={
                judge: {v: counts[v] for v in ("pass", "fail", "unknown")}
                for judge, counts in self._verdicts.items()
            },
            judge_usage=self._usage,
            flags_by_rule=dict(self._rules.most_common()),
            latency=latency,
            errors=dict(self._errors.most_common()),
            items_with_errors=self._with_errors,
            abstentions=dict(self._abstained.most_common()),
            other_abstentions=dict(self._other_abstained.most_common()),
            elapsed_s=elapsed_s,
        )


_LAYER_ORDER = (
    "heuristics",
    "grounding",
    "scorers",
    "disagreement",
    "consistency",
    "judge",
    "judge_panel",
)


def _layer_order(name: str) -> tuple[int, str]:
    """Built-in layers in pipeline order, then other layers by name, then ``total``."""
    if name == "total":
        return len(_LAYER_ORDER) + 1, name
    return (_LAYER_ORDER.index(name) if name in _LAYER_ORDER else len(_LAYER_ORDER), name)
