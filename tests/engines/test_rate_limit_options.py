"""The shared rate limits as users give them: ``arbiter run --rate-limit`` and an eval
file's ``run.rate_limit``, read into limits by name, refused with one line and exit 3
when malformed, and obeyed by a run on the local engine (a cluster's workers obey them
through the limits actor: tests/engines/test_ray_limits.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from arbiter.engines.rate import CallLimit, LocalGate
from arbiter.errors import InputError
from arbiter.service.engines import SYSTEM, EngineChoice, parse_rate_limits
from tests.conftest import Result

SYSTEMS = Path(__file__).with_name("systems.py")


@pytest.mark.parametrize(
    ("values", "limits"),
    [
        (["20/s"], {SYSTEM: CallLimit(per_second=20.0)}),
        (["2.5/s,burst=4"], {SYSTEM: CallLimit(per_second=2.5, burst=4)}),
        (
            ["30/s", "openai=600/min,burst=5,concurrency=8"],
            {
                SYSTEM: CallLimit(per_second=30.0),
                "openai": CallLimit(concurrency=8, per_second=10.0, burst=5),
            },
        ),
    ],
)
def test_rate_limits_are_read_by_name(values: list[str], limits: dict[str, CallLimit]) -> None:
    assert parse_rate_limits(values) == limits


def test_the_systems_limit_takes_the_systems_name_and_a_providers_keeps_its_own() -> None:
    choice = EngineChoice.of("ray", None, rate_limits=["20/s", "mock=1/s"])
    assert choice.limits("python:m:f") == {
        "python:m:f": CallLimit(per_second=20.0),
        "mock": CallLimit(per_second=1.0),
    }
    assert choice.gate("python:m:f") is None  # a cluster gates its workers itself
    local = EngineChoice.of(None, None, rate_limits=["20/s"]).gate("python:m:f")
    assert local is not None
    assert set(local.buckets) == {"python:m:f"}


BAD = [
    ("fast", "expected [PROVIDER=]N/s or N/min"),
    ("20/h", "expected [PROVIDER=]N/s or N/min"),
    ("0/s", "per_second must be a positive number"),
    ("20/s,burst=0", "burst must be at least 1"),
    ("20/s,concurrency=0", "concurrency must be at least 1"),
    ("20/s,speed=3", "expected [PROVIDER=]N/s or N/min"),
    ("=20/s", "expected [PROVIDER=]N/s or N/min"),
]


@pytest.mark.parametrize(("value", "message"), BAD)
def test_a_malformed_rate_limit_exits_3_with_one_line_naming_the_option(
    cli: Callable[..., Result], tmp_path: Path, value: str, message: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "input": {"q": "x"}, "expected": "x"}\n', encoding="utf-8")
    done = cli("run", "--dataset", str(data), "--target", f"{SYSTEMS}:answer",
               "--rate-limit", value)  # fmt: skip
    assert done.code == 3
    lines = done.err.strip().splitlines()
    assert len(lines) == 1
    assert f"--rate-limit {value!r}" in lines[0]
    assert message in lines[0]
    assert not (tmp_path / "store.db").exists()  # refused before anything was written


def test_a_second_limit_for_one_name_is_refused() -> None:
    with pytest.raises(InputError, match="a second rate limit for the system"):
        parse_rate_limits(["20/s", "30/s"])
    with pytest.raises(InputError, match="a second rate limit for 'openai'"):
        parse_rate_limits(["openai=1/s", "openai=2/s"])


def _eval_file(tmp_path: Path, run: str) -> Path:
    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": {}, "expected": "x"}\n')
    path = tmp_path / "eval.toml"
    path.write_text(f'[dataset]\npath = "d.jsonl"\n[system]\ntarget = "m:f"\n[run]\n{run}\n')
    return path


def test_an_eval_file_gives_its_rate_limits_and_a_bad_one_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    from arbiter.service.eval_file import load_eval_file
    from arbiter.service.scoring import scorer_registry

    def load(run: str) -> EngineChoice:
        path = _eval_file(tmp_path, run)
        plan = load_eval_file(path, registry=scorer_registry(), timeout=1, concurrency=1, retries=0)
        return plan.engine

    assert load('rate_limit = "20/s"').rate_limits == ((SYSTEM, CallLimit(per_second=20.0)),)
    both = load('engine = "ray"\nrate_limit = ["20/s", "openai=60/min"]')
    assert dict(both.rate_limits) == {
        SYSTEM: CallLimit(per_second=20.0),
        "openai": CallLimit(per_second=1.0),
    }
    with pytest.raises(InputError, match=r"eval.toml:6: run.rate_limit 'x/s': expected"):
        load('rate_limit = "x/s"')


def test_rate_limit_is_in_run_help(cli: Callable[..., Result]) -> None:
    done = cli("run", "--help")
    assert done.code == 0
    assert "--rate-limit" in done.out
    assert "N/min" in done.out


def test_a_local_run_starts_no_more_calls_in_a_window_than_burst_and_rate(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    rows = [{"id": f"r{i}", "input": {"q": "x", "log": str(log)}, "expected": "x"}
            for i in range(24)]  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = cli("run", "--dataset", str(data), "--target", f"{SYSTEMS}:logged",
               "--concurrency", "8", "--rate-limit", "40/s,burst=2", "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["accuracy"]["estimate"] == 1.0
    starts = [float(line) for line in log.read_text().split()]
    assert len(starts) == 24
    # Two start at once (the burst), then one every 1/40 s: a busy machine can only delay
    # calls, never bring them forward. Without the limit all 24 start within milliseconds.
    assert max(starts) - min(starts) >= (24 - 2) / 40 - 0.005


def test_the_local_gate_spaces_calls_by_its_bucket_and_bounds_a_providers_slots() -> None:
    now = [0.0]
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    gate = LocalGate(
        {"svc": CallLimit(per_second=4, burst=1), "openai": CallLimit(concurrency=1)},
        clock=lambda: now[0],
        sleep=fake_sleep,
    )

    async def scenario() -> list[str]:
        order: list[str] = []
        let_go = asyncio.Event()

        async def hold(name: str) -> None:
            async with gate("openai"):
                order.append(f"{name} in")
                if name == "first":
                    await let_go.wait()
                order.append(f"{name} out")

        for _ in range(3):
            async with gate("svc"):
                pass
        first = asyncio.create_task(hold("first"))
        second = asyncio.create_task(hold("second"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert order == ["first in"]  # one slot: the second waits for it
        let_go.set()
        await asyncio.gather(first, second)
        async with gate("elsewhere"):  # no limit of its own: passes at once
            order.append("elsewhere")
        return order

    order = asyncio.run(scenario())
    assert order == ["first in", "first out", "second in", "second out", "elsewhere"]
    assert waits == [pytest.approx(0.25), pytest.approx(0.5)]
