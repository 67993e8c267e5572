"""Layer 4: the judge chain, its circuit breakers, its metrics, and the LLM judge."""

from __future__ import annotations

import asyncio
import json
import re
from importlib.resources import files
from typing import Any

import pytest

from arbiter.contract import Prediction
from arbiter.errors import InvalidResponse, ProviderTimeout, ProviderUnavailable, RateLimited
from arbiter.online.judge_chain import FALLBACK_SOURCE, ChainJudge, CircuitBreaker, JudgeChain
from arbiter.online.llm_judge import JUDGE_PROMPT_VERSION, LLMJudge, judge_prompt
from arbiter.providers.base import CompletionRequest, CompletionResponse

VOCABULARY = ("low", "medium", "high", "critical")
PREDICTION = Prediction(
    id="tx-1",
    label="high",
    raw_output={"risk_level": "high", "anomaly_score": 0.93, "status": "nominal"},
)
HANG = object()
"""A scripted answer: never return."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedJudge:
    """A judge that gives its scripted answers in turn (the last one repeats)."""

    def __init__(self, name: str, *answers: object, timeout: float = 1.0) -> None:
        self.name = name
        self.timeout = timeout
        self.answers = answers
        self.calls = 0
        self.called = asyncio.Event()

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        self.called.set()
        if answer is HANG:
            await asyncio.Event().wait()
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[return-value]


def chain_of(*judges: ChainJudge, threshold: int = 3, clock: FakeClock | None = None) -> JudgeChain:
    ticking = clock or FakeClock()
    return JudgeChain(
        judges,
        vocabulary=VOCABULARY,
        breaker_factory=lambda: CircuitBreaker(threshold, cooldown_s=30.0, clock=ticking),
    )


# ------------------------------------------------------------------- resolution order


@pytest.mark.parametrize(("label", "agrees"), [("high", True), ("low", False)])
async def test_the_first_judge_that_answers_resolves_it(label: str, agrees: bool) -> None:
    first, second = ScriptedJudge("ollama", label), ScriptedJudge("gemini_flash", "low")

    outcome = await chain_of(first, second).judge(PREDICTION)

    assert (outcome.source, outcome.label, outcome.agrees) == ("ollama", label, agrees)
    assert [(a.source, a.outcome) for a in outcome.attempts] == [("ollama", "ok")]
    assert second.calls == 0


async def test_a_judge_that_times_out_falls_through_to_the_next() -> None:
    first = ScriptedJudge("ollama", HANG, timeout=0.02)
    second = ScriptedJudge("gemini_flash", "critical")

    outcome = await chain_of(first, second).judge(PREDICTION)

    assert (outcome.source, outcome.label, outcome.agrees) == ("gemini_flash", "critical", False)
    assert [a.outcome for a in outcome.attempts] == ["failed", "ok"]
    assert outcome.attempts[0].error == "TimeoutError: no verdict within 0.02s"
    assert outcome.attempts[0].latency_ms >= 15.0


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("reject", "OutOfVocabulary: verdict 'reject' is not one of low, medium, high, critical"),
        ("correct", "OutOfVocabulary: verdict 'correct' is not one of"),
        ("", "OutOfVocabulary: verdict '' is not"),
        (42, "OutOfVocabulary: verdict 42 is not"),
        (ProviderTimeout("no answer in 20s"), "ProviderTimeout: no answer in 20s"),
        (RateLimited("429: quota exhausted"), "RateLimited: 429: quota exhausted"),
        (InvalidResponse("not JSON: 'hmm'"), "InvalidResponse: not JSON: 'hmm'"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
        (TimeoutError("the judge's own socket"), "TimeoutError: the judge's own socket"),
    ],
    ids=[
        "reject",
        "correct",
        "empty",
        "not-a-string",
        "provider-timeout",
        "rate-limited",
        "invalid",
        "bug",
        "inner-timeout",
    ],
)
async def test_a_failed_verdict_falls_through_and_is_recorded(answer: object, error: str) -> None:
    first, second = ScriptedJudge("ollama", answer), ScriptedJudge("gemini_flash", "high")

    outcome = await chain_of(first, second).judge(PREDICTION)

    assert outcome.source == "gemini_flash"
    assert outcome.attempts[0].outcome == "failed"
    assert outcome.attempts[0].error is not None
    assert outcome.attempts[0].error.startswith(error)


@pytest.mark.parametrize(("answer", "label"), [(" HIGH ", "high"), ("Critical\n", "critical")])
async def test_case_and_spaces_of_a_verdict_are_forgiven(answer: str, label: str) -> None:
    outcome = await chain_of(ScriptedJudge("ollama", answer)).judge(PREDICTION)

    assert (outcome.source, outcome.label) == ("ollama", label)


async def test_labels_come_back_in_the_vocabularys_own_spelling() -> None:
    chain = JudgeChain([ScriptedJudge("j", "high")], vocabulary=["Low", "High"])

    outcome = await chain.judge(Prediction(label="HIGH"))

    assert (outcome.label, outcome.agrees) == ("High", True)


async def test_when_every_judge_fails_the_fallback_resolves_without_a_label() -> None:
    judges = [
        ScriptedJudge("ollama", ProviderUnavailable("connection refused")),
        ScriptedJudge("gemini_flash", "reject"),
    ]

    outcome = await chain_of(*judges).judge(PREDICTION, context="policy AML-7")

    assert (outcome.source, outcome.label, outcome.agrees) == (FALLBACK_SOURCE, None, None)
    assert [(a.source, a.outcome) for a in outcome.attempts] == [
        ("ollama", "failed"),
        ("gemini_flash", "failed"),
    ]


async def test_the_context_reaches_the_judge() -> None:
    seen: list[str | None] = []

    class Recording(ScriptedJudge):
        async def verdict(self, prediction: Prediction, context: str | None) -> str:
            seen.append(context)
            return "low"

    await chain_of(Recording("r")).judge(PREDICTION, context="policy AML-7")

    assert seen == ["policy AML-7"]


# ------------------------------------------------------------------- circuit breaker


@pytest.mark.parametrize("threshold", [1, 3])
async def test_an_open_circuit_skips_the_judge_without_calling_it(threshold: int) -> None:
    failing = ScriptedJudge("ollama", ProviderUnavailable("down"))
    backup = ScriptedJudge("gemini_flash", "medium")
    chain = chain_of(failing, backup, threshold=threshold)

    for _ in range(threshold):
        await chain.judge(PREDICTION)
    outcome = await chain.judge(PREDICTION)

    assert failing.calls == threshold
    assert chain.breaker("ollama").state == "open"
    assert [(a.source, a.outcome) for a in outcome.attempts] == [
        ("ollama", "skipped_open_circuit"),
        ("gemini_flash", "ok"),
    ]
    assert outcome.source == "gemini_flash"


@pytest.mark.parametrize(
    ("trial", "state_after", "calls_after_next"),
    [("low", "closed", 3), (ProviderUnavailable("still down"), "open", 2)],
    ids=["trial-succeeds-closes", "trial-fails-reopens"],
)
async def test_after_the_cooldown_one_trial_call_decides(
    trial: object, state_after: str, calls_after_next: int
) -> None:
    clock = FakeClock()
    judge = ScriptedJudge("ollama", RuntimeError("down"), trial)
    chain = chain_of(judge, threshold=1, clock=clock)
    await chain.judge(PREDICTION)  # fails: opens
    clock.now += 29.9
    assert (await chain.judge(PREDICTION)).attempts[0].outcome == "skipped_open_circuit"

    clock.now += 0.1
    assert chain.breaker("ollama").state == "half_open"
    trial_outcome = await chain.judge(PREDICTION)

    assert judge.calls == 2
    assert trial_outcome.attempts[0].outcome == ("ok" if state_after == "closed" else "failed")
    assert chain.breaker("ollama").state == state_after
    await chain.judge(PREDICTION)
    assert judge.calls == calls_after_next


def test_half_open_lets_exactly_one_trial_through() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=5.0, clock=clock)
    breaker.record_failure()
    assert (breaker.state, breaker.allow()) == ("closed", True)
    breaker.record_failure()
    assert (breaker.state, breaker.allow()) == ("open", False)

    clock.now += 5.0

    assert breaker.allow() is True
    assert breaker.allow() is False
    assert breaker.state == "half_open"


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    breaker = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    for _ in range(2):
        breaker.record_failure()
    breaker.record_success()
    for _ in range(2):
        breaker.record_failure()

    assert (breaker.state, breaker.consecutive_failures) == ("closed", 2)


async def test_a_cancelled_trial_call_frees_the_trial() -> None:
    clock = FakeClock()
    judge = ScriptedJudge("ollama", RuntimeError("down"), HANG, timeout=60.0)
    chain = chain_of(judge, threshold=1, clock=clock)
    await chain.judge(PREDICTION)
    clock.now += 30.0
    judge.called.clear()
    task = asyncio.create_task(chain.judge(PREDICTION))
    await judge.called.wait()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert chain.breaker("ollama").allow() is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"failure_threshold": 0}, "'failure_threshold' parameter of CircuitBreaker"),
        ({"failure_threshold": True}, "'failure_threshold' parameter of CircuitBreaker"),
        ({"cooldown_s": -1.0}, "'cooldown_s' parameter of CircuitBreaker"),
        ({"cooldown_s": float("nan")}, "'cooldown_s' parameter of CircuitBreaker"),
    ],
)
def test_breaker_arguments_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        CircuitBreaker(**kwargs)


# ------------------------------------------------------------------- metrics and shape


async def test_metrics_count_outcomes_by_source() -> None:
    clock = FakeClock()
    flaky = ScriptedJudge("ollama", "low", ProviderTimeout("slow"), "high", ProviderTimeout("x"))
    backup = ScriptedJudge("gemini_flash", RateLimited("quota"))
    chain = chain_of(flaky, backup, threshold=5, clock=clock)
    assert chain.metrics().pct_scored_by_judge is None

    for _ in range(4):
        await chain.judge(PREDICTION)
    metrics = chain.metrics()

    assert metrics.total == 4
    assert metrics.by_source == {"ollama": 2, FALLBACK_SOURCE: 2}
    assert metrics.failures_by_judge == {"ollama": 2, "gemini_flash": 2}
    assert metrics.skipped_by_judge == {}
    assert metrics.circuit_by_judge == {"ollama": "closed", "gemini_flash": "closed"}
    assert metrics.pct_scored_by_judge == pytest.approx(50.0)
    assert metrics.pct_scored_by_judge_ci95 is not None
    low, high = metrics.pct_scored_by_judge_ci95
    assert 0.0 < low < 50.0 < high < 100.0


async def test_metrics_are_a_snapshot() -> None:
    chain = chain_of(ScriptedJudge("ollama", "low"))
    await chain.judge(PREDICTION)
    before = chain.metrics()

    await chain.judge(PREDICTION)

    assert (before.total, chain.metrics().total) == (1, 2)
    assert chain.metrics().pct_scored_by_judge == pytest.approx(100.0)


async def test_skips_are_counted_per_judge() -> None:
    chain = chain_of(ScriptedJudge("ollama", RuntimeError("down")), threshold=1)
    for _ in range(3):
        await chain.judge(PREDICTION)

    metrics = chain.metrics()

    assert (metrics.failures_by_judge, metrics.skipped_by_judge) == ({"ollama": 1}, {"ollama": 2})
    assert metrics.pct_scored_by_judge == 0.0


@pytest.mark.parametrize(("timeouts", "longest"), [((), 0.0), ((5.0,), 5.0), ((20.0, 8.0), 20.0)])
def test_longest_timeout_is_the_longest_single_call(
    timeouts: tuple[float, ...], longest: float
) -> None:
    judges = [ScriptedJudge(f"j{i}", "low", timeout=t) for i, t in enumerate(timeouts)]

    assert chain_of(*judges).longest_timeout == longest


@pytest.mark.parametrize(
    ("judges", "vocabulary", "message"),
    [
        ([ScriptedJudge("a", "low"), ScriptedJudge("a", "low")], VOCABULARY, "unique names"),
        ([ScriptedJudge(FALLBACK_SOURCE, "low")], VOCABULARY, "unique names"),
        ([ScriptedJudge("a", "low", timeout=0.0)], VOCABULARY, "'timeout' parameter"),
        ([], (), "'vocabulary' parameter"),
        ([], ("low", " LOW"), "'vocabulary' parameter"),
        ([], "low", "'vocabulary' parameter"),
    ],
    ids=["duplicate", "fallback-name", "zero-timeout", "empty-vocab", "dup-vocab", "str-vocab"],
)
def test_chain_arguments_are_checked(
    judges: list[ChainJudge], vocabulary: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        JudgeChain(judges, vocabulary=vocabulary)


# ------------------------------------------------------------------- LLM judge


class FakeProvider:
    """A provider that answers each request with the next scripted text or error."""

    name = "fake"

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return CompletionResponse(text=answer, model=request.model)


def _template() -> tuple[str, str]:
    text = (files("arbiter.online") / "prompts" / "judge.txt").read_text(encoding="utf-8")
    system, user = text.split("\n[user]\n")
    return system.removeprefix("[system]\n"), user


def _verdict(label: str) -> str:
    return json.dumps({"label": label, "reason": "the anomaly score says so"})


async def test_llm_judge_sends_the_prompt_file_and_a_schema_of_the_vocabulary() -> None:
    provider = FakeProvider(_verdict("critical"))
    judge = LLMJudge("ollama", provider, "qwen3.5:9b", vocabulary=VOCABULARY, timeout=12.0)

    label = await judge.verdict(PREDICTION, "policy AML-7 applies")

    assert label == "critical"
    [request] = provider.requests
    system_template, user_template = _template()
    for line in system_template.splitlines():
        if line and "{" not in line:
            assert line in request.system
    for line in user_template.splitlines():
        if line and "{" not in line:
            assert line in request.prompt
    assert '"low", "medium", "high", "critical"' in request.system
    assert '"anomaly_score": 0.93' in request.prompt
    assert "policy AML-7 applies" in request.prompt
    assert "{" + "context}" not in request.prompt
    label_schema = request.json_schema["properties"]["label"]
    assert label_schema["enum"] == list(VOCABULARY)
    assert request.json_schema["required"] == ["label", "reason"]
    assert request.json_schema["additionalProperties"] is False
    assert (request.model, request.timeout) == ("qwen3.5:9b", 12.0)
    assert request.metadata["prompt_version"] == JUDGE_PROMPT_VERSION


def test_the_prompt_version_matches_the_changelog() -> None:
    changelog = (files("arbiter.online") / "prompts" / "judge.md").read_text(encoding="utf-8")

    versions = [int(v) for v in re.findall(r"^## Version (\d+)", changelog, flags=re.MULTILINE)]

    assert max(versions) == JUDGE_PROMPT_VERSION


def test_text_inside_the_prediction_is_never_substituted_again() -> None:
    tricky = Prediction(label="{vocabulary}", raw_output={"note": "see {context}"})

    _, user = judge_prompt(tricky, "SECRET", vocabulary=VOCABULARY)

    assert "LABEL GIVEN BY THE SYSTEM:\n{vocabulary}" in user
    assert '"note": "see {context}"' in user
    assert user.count("SECRET") == 1


def test_a_huge_raw_output_is_cut() -> None:
    huge = Prediction(label="low", raw_output={"narrative": "x" * 5_000_000})

    _, user = judge_prompt(huge, None, vocabulary=VOCABULARY, max_raw_chars=1_000)

    assert len(user) < 2_000
    assert "more characters)" in user
    assert "CONTEXT:\n(none)" in user


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("I think it is high", "InvalidResponse: not JSON"),
        (json.dumps({"label": "high"}), "InvalidResponse: answer does not match JudgeVerdict"),
        (_verdict("reject"), "OutOfVocabulary: verdict 'reject'"),
        (ProviderUnavailable("HTTP 500"), "ProviderUnavailable: HTTP 500"),
    ],
    ids=["prose", "missing-reason", "out-of-vocabulary", "server-error"],
)
async def test_a_bad_llm_answer_falls_through_to_the_next_judge(
    answer: str | Exception, error: str
) -> None:
    local = LLMJudge("ollama", FakeProvider(answer), "m", vocabulary=VOCABULARY, timeout=5.0)
    hosted = LLMJudge(
        "gemini_flash", FakeProvider(_verdict("medium")), "m", vocabulary=VOCABULARY, timeout=5.0
    )

    outcome = await JudgeChain([local, hosted], vocabulary=VOCABULARY).judge(PREDICTION)

    assert (outcome.source, outcome.label) == ("gemini_flash", "medium")
    assert outcome.attempts[0].error is not None
    assert outcome.attempts[0].error.startswith(error)


async def test_llm_judge_serves_as_a_judge_of_the_chain_through_its_provider() -> None:
    provider = FakeProvider(json.dumps({"label": VOCABULARY[0], "reason": "r"}))
    judge = LLMJudge("ollama", provider, "m", vocabulary=VOCABULARY, timeout=1.0)
    outcome = await JudgeChain([judge], vocabulary=VOCABULARY).judge(
        Prediction(label=VOCABULARY[0], raw_output={"x": 1})
    )
    assert (outcome.source, outcome.label) == ("ollama", VOCABULARY[0])
    assert [r.model for r in provider.requests] == ["m"]


@pytest.mark.parametrize(
    ("vocabulary", "timeout"), [((), 1.0), ("low", 1.0), (VOCABULARY, 0.0), (VOCABULARY, -2.0)]
)
def test_llm_judge_arguments_are_checked(vocabulary: tuple[str, ...], timeout: float) -> None:
    with pytest.raises(ValueError, match="parameter of LLMJudge"):
        LLMJudge("j", FakeProvider(), "m", vocabulary=vocabulary, timeout=timeout)
