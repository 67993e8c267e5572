"""A decomposed judge on a real local model: SmolLM2-135M through the ``llama_cpp`` provider.

Served by ``../shared/tools/local-llm start`` (OpenAI-compatible, http://127.0.0.1:8089/v1);
skipped, with the reason shown, when no server answers. The model is far too small to
judge: only the plumbing is asserted, a ruling or an ``unknown`` and never an exception.
"""

from __future__ import annotations

import pytest

from arbiter.config import Settings
from arbiter.contract import Example, Output
from arbiter.judges.judges import answer_correctness
from arbiter.scoring.base import ScoringContext
from tests.providers.test_local_llm import URL, server_up


async def test_a_real_model_judge_returns_a_ruling_or_unknown_without_an_exception() -> None:
    if not await server_up(URL):
        pytest.skip(f"no local model server at {URL}: run ../shared/tools/local-llm start")
    context = ScoringContext(settings=Settings(llama_cpp_url=URL), use_cache=False)
    judge = answer_correctness(
        judges=[
            {"provider": "llama_cpp", "model": "smollm2", "timeout": 180, "max_output_tokens": 256}
        ],
        context=context,
    )
    example = Example(
        id="q1", input={"question": "What is the capital of France?"}, expected="Paris"
    )
    try:
        score = await judge(example, Output(text="The capital of France is Paris."))
    finally:
        await judge.aclose()
    assert score.error is None
    assert score.answer in {"pass", "fail", "unknown"}
    assert score.model is not None
    assert score.model.calls == 1
