"""``POST /v1/arbitrate`` and ``GET /v1/verdicts`` carry ``model``: the critics' model
calls, tokens and cost summed, equal to what a provider that counts its requests saw."""

from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.testclient import TestClient

from arbiter.contract import Usage
from arbiter.jury.critics import CriticSpec
from arbiter.jury.jury import Jury
from arbiter.providers.base import CompletionRequest, CompletionResponse

TOKENS_IN, TOKENS_OUT, COST = 13, 5, 0.003
"""What the provider reports for each call it answers."""

CRITIQUE = {"accuracy": 5, "consistency": 5, "completeness": 5, "callouts": []}
CASE = {
    "task": "Summarize the refund policy.",
    "context": "Refunds are accepted within 30 days of purchase with a receipt.",
    "output": "Refunds are accepted within 30 days of purchase with a receipt.",
}


class CountingProvider:
    """Answers every critique with a clean one and counts the requests it got."""

    name = "counter"

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        usage = Usage(input_tokens=TOKENS_IN, output_tokens=TOKENS_OUT, cost_usd=COST)
        return CompletionResponse(text=json.dumps(CRITIQUE), model=request.model, usage=usage)

    async def aclose(self) -> None:
        return None


def _model(body: dict[str, object]) -> tuple[object, ...]:
    model = body["model"]
    assert isinstance(model, dict)
    cost = model["cost_usd"]
    return (
        model["calls"],
        model["cached"],
        model["input_tokens"],
        model["output_tokens"],
        None if cost is None else round(float(cost), 9),
    )


def test_arbitrate_and_the_verdict_list_report_the_critics_model_calls(app: FastAPI) -> None:
    provider = CountingProvider()
    critics = [
        CriticSpec(name=lens, lens=lens, provider="counter", model="m")
        for lens in ("factual", "logical")
    ]
    app.state.jury = Jury(critics, providers={"counter": provider})
    with TestClient(app) as client:
        answer = client.post("/v1/arbitrate", json={**CASE, "id": "counted-1"})
        assert answer.status_code == 201, answer.text
        calls = len(provider.requests)
        assert calls == 2  # one critique per critic
        expected = (calls, 0, TOKENS_IN * calls, TOKENS_OUT * calls, round(COST * calls, 9))
        body = answer.json()
        assert _model(body) == expected
        listed = client.get("/v1/verdicts", params={"limit": 1}).json()["items"][0]
        assert listed["case"]["id"] == "counted-1"
        assert _model(listed) == expected
        one = client.get(f"/v1/verdicts/{body['id']}").json()
        assert _model(one) == expected


def test_the_offline_critics_report_no_model_call(client: TestClient) -> None:
    answer = client.post("/v1/arbitrate", json=CASE)
    assert answer.status_code == 201
    assert _model(answer.json()) == (0, 0, 0, 0, 0.0)
