"""Layer 2: the same input to several systems, and what their answers say together."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from arbiter.contract import Prediction
from arbiter.errors import SystemCrashed, SystemHTTPError, SystemTimeout
from arbiter.online.disagreement import score_disagreement
from arbiter.systems.base import SystemUnderTest

TIMEOUT = 0.05


class Answers:
    """A system that answers one label and remembers what it was asked."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.inputs: list[dict[str, Any]] = []

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        self.inputs.append(input)
        return Prediction(label=self.label)


class Raises:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        raise self.error


class Hangs:
    async def __call__(self, input: dict[str, Any]) -> Prediction:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class ReturnsGarbage:
    def __init__(self, value: object) -> None:
        self.value = value

    async def __call__(self, input: dict[str, Any]) -> Any:
        return self.value


class WaitsForAll:
    """Answers only once every one of ``expected`` calls has started: proves overlap."""

    def __init__(self, label: str, started: list[str], everyone_in: asyncio.Event, expected: int):
        self.label, self.started, self.everyone_in, self.expected = (
            label,
            started,
            everyone_in,
            expected,
        )

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        self.started.append(self.label)
        if len(self.started) == self.expected:
            self.everyone_in.set()
        await self.everyone_in.wait()
        return Prediction(label="same")


async def test_all_answer_the_same_label_agree() -> None:
    systems = {"ollama": Answers("high"), "gemini": Answers("high"), "openrouter": Answers("high")}

    result = await score_disagreement({"amount": 10}, systems, timeout=TIMEOUT)

    assert result.agreed is True
    assert result.labels_by_provider == {"ollama": "high", "gemini": "high", "openrouter": "high"}
    assert result.errors_by_provider == {}


@pytest.mark.parametrize(
    "extra",
    [{}, {"down": Raises(SystemCrashed("boom"))}, {"slow": Hangs()}],
    ids=["no-failure", "with-a-crash", "with-a-hang"],
)
async def test_two_different_labels_disagree_whatever_else_failed(
    extra: dict[str, SystemUnderTest],
) -> None:
    systems: dict[str, SystemUnderTest] = {"a": Answers("high"), "b": Answers("low"), **extra}

    result = await score_disagreement({}, systems, timeout=TIMEOUT)

    assert result.agreed is False
    assert result.labels_by_provider == {"a": "high", "b": "low"}
    assert set(result.errors_by_provider) == set(extra)


@pytest.mark.parametrize(
    ("failing", "expected_error"),
    [
        (
            Raises(SystemTimeout("read timed out after 2s")),
            "SystemTimeout: read timed out after 2s",
        ),
        (
            Raises(SystemHTTPError(503, "HTTP 503\n  from the service")),
            "SystemHTTPError: HTTP 503 from the service",
        ),
        (Raises(RuntimeError("driver\nexploded")), "RuntimeError: driver exploded"),
        (Raises(KeyError()), "KeyError"),
        (Hangs(), f"SystemTimeout: no answer within {TIMEOUT:g}s"),
        (
            ReturnsGarbage({"label": "high"}),
            "InvalidSystemResponse: expected a Prediction, got dict",
        ),
        (ReturnsGarbage(None), "InvalidSystemResponse: expected a Prediction, got NoneType"),
        (
            ReturnsGarbage(Prediction(label="  ")),
            "InvalidSystemResponse: the prediction's label is empty",
        ),
    ],
    ids=["sut-timeout", "http-503", "runtime-error", "bare-error", "hang", "dict", "none", "blank"],
)
async def test_a_failure_beside_agreeing_answers_makes_agreement_unknown(
    failing: SystemUnderTest, expected_error: str
) -> None:
    systems = {"a": Answers("high"), "broken": failing, "b": Answers("high")}

    result = await score_disagreement({}, systems, timeout=TIMEOUT)

    assert result.agreed is None
    assert result.labels_by_provider == {"a": "high", "b": "high"}
    assert result.errors_by_provider == {"broken": expected_error}


async def test_a_timeout_raised_inside_a_system_is_not_reported_as_ours() -> None:
    result = await score_disagreement(
        {}, {"a": Raises(TimeoutError("upstream socket")), "b": Answers("x")}, timeout=TIMEOUT
    )

    assert result.errors_by_provider == {"a": "TimeoutError: upstream socket"}


async def test_a_long_error_message_is_cut_to_one_short_line() -> None:
    result = await score_disagreement({}, {"a": Raises(ValueError("x" * 5000))}, timeout=TIMEOUT)

    line = result.errors_by_provider["a"]
    assert line.startswith("ValueError: xxx")
    assert len(line) <= 300
    assert "\n" not in line


async def test_none_answering_is_unknown_with_every_error_kept() -> None:
    systems: dict[str, SystemUnderTest] = {"a": Raises(SystemCrashed("one")), "b": Hangs()}

    result = await score_disagreement({}, systems, timeout=TIMEOUT)

    assert result.agreed is None
    assert result.labels_by_provider == {}
    assert result.errors_by_provider == {
        "a": "SystemCrashed: one",
        "b": f"SystemTimeout: no answer within {TIMEOUT:g}s",
    }


@pytest.mark.parametrize(
    ("systems", "expected"),
    [({}, None), ({"only": Answers("low")}, True), ({"only": Raises(SystemCrashed("x"))}, None)],
    ids=["no-system", "one-answers", "one-fails"],
)
async def test_degenerate_rosters(
    systems: dict[str, SystemUnderTest], expected: bool | None
) -> None:
    result = await score_disagreement({}, systems, timeout=TIMEOUT)

    assert result.agreed is expected


async def test_every_system_gets_the_same_input_in_its_own_copy() -> None:
    class Mutates(Answers):
        async def __call__(self, input: dict[str, Any]) -> Prediction:
            input["tampered"] = True
            return await super().__call__(input)

    first, second = Mutates("low"), Answers("low")
    given = {"amount": 12.5, "country": "DE"}

    await score_disagreement(given, {"first": first, "second": second}, timeout=TIMEOUT)

    assert second.inputs == [{"amount": 12.5, "country": "DE"}]
    assert given == {"amount": 12.5, "country": "DE"}


@pytest.mark.parametrize("count", [2, 5])
async def test_systems_are_called_concurrently(count: int) -> None:
    # Each system answers only after all have started: called one after another, the
    # first would wait for the others forever and time out.
    started: list[str] = []
    everyone_in = asyncio.Event()
    systems = {f"s{i}": WaitsForAll(f"s{i}", started, everyone_in, count) for i in range(count)}

    result = await score_disagreement({}, systems, timeout=1.0)

    assert result.errors_by_provider == {}
    assert result.agreed is True
    assert sorted(started) == sorted(systems)


async def test_a_hanging_system_does_not_hold_back_the_others_answers() -> None:
    fast = Answers("low")

    result = await score_disagreement({}, {"fast": fast, "slow": Hangs()}, timeout=TIMEOUT)

    assert result.labels_by_provider == {"fast": "low"}
    assert "slow" in result.errors_by_provider
