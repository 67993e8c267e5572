"""``arbiter run --scorer rubric`` against a real local llama.cpp-style server: the
model-call cache as the options say (on for k = 1, fresh calls for k > 1, --cache and
--no-cache), its hits counted in the report, tokens and cost summed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arbiter.contract import ModelCalls, Report
from tests.integration.serving import serve_asgi

ROWS = [
    ("q1", "What is the capital of France?", "Paris", "The capital of France is Paris."),
    ("q2", "Who wrote Hamlet?", "William Shakespeare", "Hamlet was written by Marlowe."),
    ("q3", "How many legs does a spider have?", "eight", "A spider has eight legs."),
    ("q4", "Which planet is closest to the sun?", "Mercury", "Mercury is."),
]
RUBRIC = "rubric:rubric=The answer is factually right.,provider=llama_cpp,model=judge-1"
PRICE = (1.0, 2.0)
"""USD per million tokens of judge-1: a call of 100 + 20 tokens costs 0.00014."""
CALL_COST = (100 * PRICE[0] + 20 * PRICE[1]) / 1_000_000


class Judge:
    """A llama.cpp-style chat endpoint: passes every answer quoting its first word."""

    def __init__(self) -> None:
        self.requests = 0

    async def chat(self, request: Request) -> Response:
        self.requests += 1
        body = await request.json()
        output = body["messages"][1]["content"].rsplit("<output>\n", 1)[1]
        answer = {
            "reasoning": "It states the fact.",
            "evidence": [{"quote": output.split()[0], "shows": "the answer"}],
            "verdict": "pass",
            "score": 0.9,
        }
        return JSONResponse(
            {
                "model": body["model"],
                "choices": [{"message": {"content": json.dumps(answer)}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            }
        )


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[Judge]:
    served = Judge()
    app = Starlette(routes=[Route("/v1/chat/completions", served.chat, methods=["POST"])])
    with serve_asgi(app) as url:
        monkeypatch.setenv("ARBITER_LLAMA_CPP_URL", f"{url}/v1")
        monkeypatch.setenv("ARBITER_MODEL_PRICES", json.dumps({"judge-1": PRICE}))
        yield served


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    rows = [
        {"id": i, "input": {"question": q}, "expected": reference, "output": output}
        for i, q, reference, output in ROWS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rubric_run(cli: Any, answers: Path, *options: str) -> ModelCalls:
    result = cli(
        "run",
        "--dataset",
        str(answers),
        "--system",
        "precomputed",
        "--scorer",
        RUBRIC,
        "--json",
        "--quiet",
        *options,
    )
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    assert report.sections["rubric"].passed == len(ROWS) * report.k
    assert report.model is not None
    assert report.model == report.sections["rubric"].model
    return report.model


def test_a_first_run_asks_the_model_and_fills_the_cache(
    cli: Any, judge: Judge, answers: Path, tmp_path: Path
) -> None:
    calls = rubric_run(cli, answers)
    assert judge.requests == len(ROWS)
    assert (calls.calls, calls.cached) == (len(ROWS), 0)
    assert (calls.input_tokens, calls.output_tokens) == (100 * len(ROWS), 20 * len(ROWS))
    assert calls.cost_usd == pytest.approx(len(ROWS) * CALL_COST)
    assert calls.latency_ms > 0
    assert (tmp_path / "home" / "cache" / "models.sqlite3").is_file()  # under ARBITER_HOME


@pytest.mark.parametrize(
    ("options", "reached", "cached"),
    [
        ((), 0, 4),
        (("--no-cache",), 4, 0),
        (("--k", "2"), 8, 0),
        (("--k", "2", "--cache"), 0, 8),
    ],
    ids=["k1-cached", "no-cache", "k2-samples-fresh", "k2-cache-asked-for"],
)
def test_after_a_first_run_the_cache_answers_as_the_options_say(
    cli: Any,
    judge: Judge,
    answers: Path,
    options: tuple[str, ...],
    reached: int,
    cached: int,
) -> None:
    rubric_run(cli, answers)
    before = judge.requests
    calls = rubric_run(cli, answers, *options)
    assert judge.requests - before == reached
    assert (calls.calls, calls.cached) == (reached + cached, cached)
    assert calls.input_tokens == 100 * reached  # a hit costs no tokens
    assert calls.cost_usd == pytest.approx(reached * CALL_COST)


def test_the_text_report_counts_the_cache_hits(cli: Any, judge: Judge, answers: Path) -> None:
    rubric_run(cli, answers)
    result = cli(
        "run", "--dataset", str(answers), "--system", "precomputed", "--scorer", RUBRIC, "-q"
    )
    assert result.code == 0, result.err
    assert "4 calls · 4 cached" in result.out
