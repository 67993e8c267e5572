"""A panel call: members at once, each bounded by its timeout, never an exception."""

from __future__ import annotations

import pytest

from arbiter.contract import Usage
from arbiter.errors import ProviderError
from arbiter.judges.panel import CallMeter, PanelModel, build_panel
from arbiter.judges.verdicts import JudgeAnswer, parse_ruling
from arbiter.judging import Ask
from tests.judges.conftest import FakeJudgeModel, Models, answer, configs

SHOWN = ["The total is 42 units."]


def request_for(member: PanelModel) -> Ask[JudgeAnswer]:
    return Ask(
        system="s",
        prompt="p",
        answer=JudgeAnswer,
        schema_name="v",
        json_schema={},
        parse=parse_ruling,
    )


async def test_a_hung_member_is_bounded_by_its_timeout_and_the_others_votes_are_kept(
    models: Models,
) -> None:
    context = models(
        alpha=FakeJudgeModel("alpha", answer("fail", quotes=("42 units",))),
        beta=FakeJudgeModel("beta", answer("fail")),
        gamma=FakeJudgeModel("gamma", hang=True),
    )
    cfgs = configs("alpha", "beta", "gamma", gamma={"timeout": 0.05})
    panel = build_panel(cfgs, credentials=lambda c: True)
    ruling = await panel.ask(context, request_for, SHOWN)
    assert [v.vote for v in ruling.votes] == ["fail", "fail", "unknown"]
    assert ruling.votes[2].error == "timeout after 0.05s"
    assert ruling.passed is False
    assert [e.verified for e in ruling.evidence] == [True]


@pytest.mark.parametrize(
    ("fake", "error"),
    [
        (FakeJudgeModel("alpha", error=ProviderError("503 from upstream")), "ProviderError: 503"),
        (FakeJudgeModel("alpha", reply="I think it passes."), "InvalidResponse: not JSON"),
        (
            FakeJudgeModel("alpha", reply='{"verdict": "probably"}'),
            "InvalidResponse: answer has no",
        ),
    ],
)
async def test_a_failing_or_unreadable_member_votes_unknown(
    models: Models, fake: FakeJudgeModel, error: str
) -> None:
    context = models(alpha=fake, beta=FakeJudgeModel("beta", answer("pass")))
    panel = build_panel(configs("alpha", "beta"), credentials=lambda c: True)
    ruling = await panel.ask(context, request_for, SHOWN)
    assert ruling.votes[0].vote == "unknown"
    assert (ruling.votes[0].error or "").startswith(error)
    assert ruling.passed is True


async def test_an_unknown_provider_is_an_unknown_vote_not_an_exception(models: Models) -> None:
    panel = build_panel([{"provider": "nowhere", "model": "m"}], credentials=lambda c: True)
    ruling = await panel.ask(models(), request_for, SHOWN)
    assert ruling.passed is None
    assert "InputError" in (ruling.votes[0].error or "")


async def test_every_members_tokens_and_cost_are_summed_and_metered(models: Models) -> None:
    context = models(
        alpha=FakeJudgeModel(
            "alpha", usage=Usage(input_tokens=100, output_tokens=10, cost_usd=0.25)
        ),
        beta=FakeJudgeModel("beta", usage=Usage(input_tokens=50, output_tokens=5, cost_usd=0.5)),
    )
    meter = CallMeter()
    panel = build_panel(configs("alpha", "beta"), credentials=lambda c: True)
    ruling = await panel.ask(context, request_for, SHOWN, meter)
    calls = ruling.calls
    assert (calls.calls, calls.input_tokens, calls.output_tokens) == (2, 150, 15)
    assert calls.cost_usd == pytest.approx(0.75)
    assert meter.total.cost_usd == pytest.approx(0.75)


async def test_a_timed_out_call_is_counted_with_an_unknown_cost(models: Models) -> None:
    context = models(alpha=FakeJudgeModel("alpha"), beta=FakeJudgeModel("beta", hang=True))
    panel = build_panel(
        configs("alpha", "beta", beta={"timeout": 0.02}), credentials=lambda c: True
    )
    calls = (await panel.ask(context, request_for, SHOWN)).calls
    assert (calls.calls, calls.input_tokens, calls.cost_usd) == (2, 100, None)
