"""Every judged path reports its model calls in one shape, counted as the provider saw them.

One provider, published through the ``arbiter.providers`` entry-point group (a plugin,
as a third party would ship one), answers every judge of Arbiter and counts the
requests that reach it. The rubric scorer in a run report, ``arbiter judge`` (twice: the
second run is answered by the model-call cache), a judge panel, the gate's scope judge,
and the online judge chain with its batch summary each report a ``ModelCalls`` whose
calls, tokens and cost are the provider's own counts.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Dataset, Example, ModelCalls, Output
from arbiter.contract.gate import GateScope
from arbiter.harness.runner import run_eval
from arbiter.judges.gate_judge import PanelScopeJudge
from arbiter.judges.judges import JUDGES, Judge
from arbiter.judges.panel import build_panel
from arbiter.judging import JudgingContext
from arbiter.online.build import build_pipeline
from arbiter.online.config import ChainJudgeConfig, OnlineConfig
from arbiter.online.sink import BatchSummary
from arbiter.scoring.registry import ScorerRegistry

TOKENS_IN, TOKENS_OUT, COST = 11, 7, 0.002
"""What the plugin reports for each call it answers."""

PLUGIN = textwrap.dedent(
    '''
    """A counting provider: answers each schema Arbiter asks for, counts every request."""

    import json

    from arbiter.contract import Usage
    from arbiter.providers.base import CompletionResponse

    REQUESTS = []

    QUOTING = {"reasoning": "It holds.", "evidence": [], "verdict": "pass", "score": 1.0}
    CRITIQUE = {"accuracy": 5, "consistency": 5, "completeness": 5, "callouts": []}


    class CountingProvider:
        name = "counter"

        async def complete(self, request):
            REQUESTS.append(request)
            if request.schema_name == "critique":
                answer = CRITIQUE
            elif request.schema_name == "judge_verdict":
                label = request.json_schema["properties"]["label"]["enum"][0]
                answer = {"label": label, "reason": "It fits."}
            else:
                answer = QUOTING
            usage = Usage(input_tokens=11, output_tokens=7, cost_usd=0.002)
            return CompletionResponse(text=json.dumps(answer), model=request.model, usage=usage)


    def factory(settings, http):
        return CountingProvider()
    '''
)


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The plugin on ``sys.path`` with its entry point; yields its module (``REQUESTS``)."""
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "counting_judge_plugin.py").write_text(PLUGIN, encoding="utf-8")
    info = root / "counting_judge_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: counting-judge-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[arbiter.providers]\ncounter = counting_judge_plugin:factory\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(root))
    import importlib

    importlib.invalidate_caches()
    module = importlib.import_module("counting_judge_plugin")
    yield module
    sys.modules.pop("counting_judge_plugin", None)


def _expected(calls: int, *, cached: int = 0) -> tuple[int, int, int, int, float]:
    billed = calls - cached
    return calls, cached, TOKENS_IN * billed, TOKENS_OUT * billed, COST * billed


def _shape(calls: ModelCalls | None) -> tuple[int, int, int, int, float | None]:
    assert calls is not None
    cost = None if calls.cost_usd is None else round(calls.cost_usd, 9)
    return calls.calls, calls.cached, calls.input_tokens, calls.output_tokens, cost


def test_every_judged_path_reports_the_providers_own_calls_tokens_and_cost(
    counter: Any, cli: Any
) -> None:
    requests: list[Any] = counter.REQUESTS
    seen = 0

    def new_requests() -> int:
        nonlocal seen
        fresh, seen = len(requests) - seen, len(requests)
        return fresh

    context = JudgingContext(settings=Settings(_env_file=None), use_cache=False)

    # The rubric scorer, in a run report: one call per example.
    dataset = Dataset(
        name="facts",
        examples=[
            Example(id="q1", input={"question": "Capital of France?"}, expected="Paris"),
            Example(id="q2", input={"question": "Legs of a spider?"}, expected="eight"),
        ],
    )

    async def system(input: dict[str, Any]) -> str:
        return "Paris, and eight."

    factory = ScorerRegistry.default(plugins=False).factory_of("rubric")
    scorer = factory(context=context, rubric="Is it right?", provider="counter", model="m")
    report = run_eval(system, dataset, scorers=[scorer])
    rubric = report.sections["rubric"].model
    assert _shape(rubric) == _expected(new_requests()) == _expected(2)

    # arbiter judge: three critics on the plugin; a second run is served by the cache.
    args = ["judge", "--task", "Say it.", "--context", "It is so.", "--output", "It is so."]
    args += ["--provider", "counter", "--model", "m", "--json"]
    first = cli(*args)
    assert first.code == 0, first.err
    jury = ModelCalls.model_validate(json.loads(first.out)["model"])
    assert _shape(jury) == _expected(new_requests()) == _expected(3)
    assert "model calls: 3 (0 cached), tokens 33 in / 21 out, cost $0.0060" in first.err
    again = cli(*args)
    cached = ModelCalls.model_validate(json.loads(again.out)["model"])
    assert new_requests() == 0
    assert _shape(cached) == _expected(3, cached=3)

    # A judge panel (answer_correctness): one call per member.
    panel = build_panel(["counter:m"], context=context)
    example = Example(id="e", input={"question": "Capital?"}, expected="Paris")
    judge = Judge(JUDGES["answer_correctness"], panel, context)
    score = asyncio.run(judge.score(example, Output(text="Paris")))
    assert score.passed is True
    assert _shape(score.model) == _expected(new_requests()) == _expected(1)

    # The gate's scope judge: its ruling carries the calls.
    gate = PanelScopeJudge.build(["counter:m"], context=context)
    scope = GateScope(description="Fleet upkeep.")
    ruling = asyncio.run(gate(question="Which truck?", answer="Truck 7.", scope=scope))
    assert ruling.verdict == "faithful"
    assert _shape(ruling.calls) == _expected(new_requests()) == _expected(1)

    # The online judge chain, per item and in the batch summary.
    config = OnlineConfig(
        judges=[ChainJudgeConfig(name="counter", provider="counter", model="m")],
        vocabulary=["nominal", "critical"],
    )
    prediction = {
        "id": "1",
        "label": "nominal",
        "confidence": 0.9,
        "raw_output": {"status": "nominal", "anomaly_score": 0.93},
    }

    async def online() -> Any:
        pipeline = build_pipeline(config, Settings(_env_file=None))
        try:
            return await pipeline.evaluate(prediction)
        finally:
            await pipeline.aclose()

    result = asyncio.run(online())
    assert result.judge is not None
    assert result.judge.source == "counter"
    assert _shape(result.judge.model) == _expected(new_requests()) == _expected(1)
    assert _shape(result.judge.attempts[0].model) == _expected(1)
    summary = BatchSummary()
    summary.add(result)
    assert _shape(summary.report().chain_usage) == _expected(1)

    # Everything the judging context carried is in its meter.
    assert _shape(context.meter.total) == _expected(2 + 1 + 1)
