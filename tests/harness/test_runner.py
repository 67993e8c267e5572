"""The offline runner: repetitions, retries, recorded failures, bounded concurrency, storage."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from arbiter.contract import Prediction
from arbiter.errors import (
    InputError,
    SystemHTTPError,
    SystemTimeout,
    SystemUnderTestError,
    SystemUnreachable,
    ToolError,
)
from arbiter.harness.runner import run_eval, run_eval_async
from arbiter.http.retry import RetryPolicy
from arbiter.store import Store
from arbiter.systems.python import PythonSystem
from tests.helpers.data import yes_no_dataset
from tests.helpers.systems import echo_label, mostly_right


@pytest.fixture
def store(tmp_path: Any) -> Store:
    return Store(f"sqlite:///{tmp_path / 'runs.db'}")


def test_perfect_system_scores_one_everywhere() -> None:
    report = run_eval(PythonSystem(echo_label), yes_no_dataset(30), k=2)
    assert report.strict.accuracy.estimate == 1.0
    assert report.pass_hat_k.estimate == 1.0
    assert report.strict.n == 60
    assert report.n_examples == 30
    assert report.errors_by_type == {}


def test_k_repetitions_pass_hat_k_below_pass_at_1_for_a_flaky_system() -> None:
    calls: dict[str, int] = {}

    def flaky(input: dict[str, Any]) -> Prediction:
        n = calls[input["id"]] = calls.get(input["id"], 0) + 1
        # wrong on the 3rd repetition of every 4th example
        wrong = n == 3 and int(input["id"][-4:]) % 4 == 0
        return Prediction(label="maybe" if wrong else input["answer"])

    report = run_eval(PythonSystem(flaky, threaded=False), yes_no_dataset(40), k=3, concurrency=1)
    assert report.pass_hat_k.estimate == pytest.approx(30 / 40)
    assert report.pass_at_1.estimate == pytest.approx(1 - 10 / 120)
    assert report.pass_hat_k.low <= report.pass_hat_k.estimate <= report.pass_hat_k.high


def test_failures_are_recorded_per_example_never_raised() -> None:
    async def broken(input: dict[str, Any]) -> Prediction:
        if input["id"].endswith("1"):
            raise ToolError("tool exploded")
        if input["id"].endswith("2"):
            raise ValueError("bug in the system")
        return Prediction(label=input["answer"])

    report = run_eval(PythonSystem(broken), yes_no_dataset(20), retries=0)
    assert report.errors_by_type == {"SystemCrashed": 2, "ToolError": 2}
    assert report.error_rate == pytest.approx(4 / 20)
    assert report.strict.accuracy.estimate == pytest.approx(16 / 20)


def test_retryable_failure_is_retried_until_it_passes(store: Store) -> None:
    attempts: dict[str, int] = {}

    async def recovering(input: dict[str, Any]) -> Prediction:
        n = attempts[input["id"]] = attempts.get(input["id"], 0) + 1
        if n == 1:
            raise SystemHTTPError(429, "slow down", retry_after=0.01)
        if n == 2:
            raise SystemUnreachable("connection refused")
        return Prediction(label=input["answer"])

    report = asyncio.run(
        run_eval_async(PythonSystem(recovering), yes_no_dataset(5), retries=2, store=store)
    )
    assert report.strict.accuracy.estimate == 1.0
    assert {r.attempts for r in store.results(report.run_id or "")} == {3}


def test_non_retryable_failure_is_not_retried() -> None:
    attempts: list[str] = []

    async def rejecting(input: dict[str, Any]) -> Prediction:
        attempts.append(input["id"])
        raise SystemHTTPError(422, "judge_rejected")

    report = run_eval(PythonSystem(rejecting), yes_no_dataset(3), retries=5)
    assert len(attempts) == 3
    assert report.errors_by_type == {"SystemHTTPError": 3}


def test_a_call_over_the_timeout_is_recorded_as_a_timeout() -> None:
    async def hanging(input: dict[str, Any]) -> Prediction:
        await asyncio.sleep(10)
        raise AssertionError("unreachable")

    report = run_eval(PythonSystem(hanging), yes_no_dataset(2), timeout=0.05, retries=0)
    assert report.errors_by_type == {"SystemTimeout": 2}


def test_concurrency_is_bounded() -> None:
    in_flight = 0
    peak = 0

    async def counting(input: dict[str, Any]) -> Prediction:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1
        return Prediction(label=input["answer"])

    run_eval(PythonSystem(counting), yes_no_dataset(60), concurrency=7)
    assert peak == 7


@pytest.mark.parametrize("threaded", [True, False])
def test_each_result_is_in_the_store_before_progress_reports_it(
    store: Store, threaded: bool
) -> None:
    seen: list[tuple[int, int]] = []
    run_ids: list[str] = []

    def progress(done: int, total: int) -> None:
        if not run_ids:
            run_ids.append(store.list_runs(limit=1)[0].id)
        seen.append((done, len(store.completed_pairs(run_ids[0]))))

    system = PythonSystem(mostly_right, threaded=threaded)
    run_eval(system, yes_no_dataset(25), k=2, store=store, progress=progress, concurrency=2)
    assert seen[-1][0] == 50
    assert all(done == stored for done, stored in seen)
    assert len(seen) > 1  # stored as the run goes, not all at the end


def test_stored_run_records_config_dataset_and_completion(store: Store) -> None:
    dataset = yes_no_dataset(12)
    report = run_eval(
        PythonSystem(mostly_right),
        dataset,
        k=2,
        limit=10,
        seed=7,
        store=store,
        label_map={"yes": "y", "no": "n"},
    )
    info = store.get_run(report.run_id or "")
    assert info.status == "completed"
    assert info.n_pairs == 20
    assert info.n_done == 20
    assert info.config["seed"] == 7
    assert info.config["label_map"] == {"yes": "y", "no": "n"}
    assert info.system == {"kind": "python", "target": "tests.helpers.systems:mostly_right"}
    assert store.load_dataset(info.dataset_hash).content_hash == dataset.content_hash
    assert report.mapped is not None
    assert report.mapped.labels == ["n", "y"]


def test_limit_keeps_only_the_first_examples() -> None:
    report = run_eval(PythonSystem(echo_label), yes_no_dataset(50), limit=8)
    assert report.n_examples == 8


@pytest.mark.parametrize(
    ("option", "value"), [("k", 0), ("concurrency", 0), ("timeout", 0.0), ("limit", 0)]
)
def test_invalid_options_are_input_errors(option: str, value: float) -> None:
    with pytest.raises(InputError, match=option):
        run_eval(PythonSystem(echo_label), yes_no_dataset(3), **{option: value})


def test_retry_after_is_honoured_and_capped() -> None:
    rng = random.Random(0)
    assert RetryPolicy().delay(SystemHTTPError(429, "x", retry_after=3.0), 1, rng) == 3.0
    assert RetryPolicy().delay(SystemHTTPError(503, "x", retry_after=9999.0), 1, rng) == 120.0


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 8, 12])
def test_backoff_grows_exponentially_with_jitter_within_bounds(attempt: int) -> None:
    rng = random.Random(attempt)
    ceiling = min(30.0, 0.5 * 2 ** (attempt - 1))
    delays = {RetryPolicy().delay(SystemTimeout("x"), attempt, rng) for _ in range(20)}
    assert all(ceiling / 2 <= d <= ceiling for d in delays)
    assert len(delays) > 1  # jittered, not lockstep


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (SystemUnreachable("x"), True),
        (SystemTimeout("x"), True),
        (SystemHTTPError(429, "x"), True),
        (SystemHTTPError(500, "x"), True),
        (SystemHTTPError(503, "x"), True),
        (SystemHTTPError(404, "x"), False),
        (SystemHTTPError(422, "x"), False),
        (ToolError("x"), False),
    ],
)
def test_which_failures_are_retryable(error: SystemUnderTestError, retryable: bool) -> None:
    assert error.retryable is retryable
