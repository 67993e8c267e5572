"""The ``python`` system: every accepted target shape, and every way it can be wrong."""

from __future__ import annotations

import pytest

from arbiter.errors import InputError, InvalidSystemResponse, SystemCrashed
from arbiter.systems.python import PythonSystem

T = "tests.helpers.targets"


@pytest.mark.parametrize(
    ("target", "label"),
    [
        ("sync_fn", "7"),
        ("async_fn", "7"),
        ("returns_dict", "7"),
        ("returns_str", "7"),
        ("factory", "made-7"),
        ("Model", "model-7"),
    ],
)
async def test_accepted_target_shapes(target: str, label: str) -> None:
    system = PythonSystem(f"{T}:{target}")
    prediction = await system({"x": 7})
    assert prediction.label == label
    assert system.describe() == {"kind": "python", "target": f"{T}:{target}"}


@pytest.mark.parametrize("threaded", [True, False])
async def test_sync_callable_runs_with_or_without_a_thread(threaded: bool) -> None:
    system = PythonSystem(f"{T}:sync_fn", threaded=threaded)
    assert (await system({"x": "a"})).label == "a"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "must look like 'package.module:function'"),
        (f"{T}:", "must look like"),
        ("tests.helpers.no_such_module:f", "cannot import"),
        (f"{T}:missing", "has no 'missing'"),
        (f"{T}:NOT_CALLABLE", "is not callable"),
        (f"{T}:bad_factory", "is a factory but returned 1"),
    ],
)
def test_bad_targets_are_input_errors(target: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        PythonSystem(target)


async def test_an_exception_inside_the_system_becomes_system_crashed() -> None:
    system = PythonSystem(f"{T}:sync_fn")
    with pytest.raises(SystemCrashed, match="KeyError"):
        await system({"no_x": 1})


@pytest.mark.parametrize(
    ("target", "message"),
    [("returns_bad_dict", "field 'confidence'"), ("returns_int", "returned int")],
)
async def test_unusable_return_values_are_invalid_responses(target: str, message: str) -> None:
    with pytest.raises(InvalidSystemResponse, match=message):
        await PythonSystem(f"{T}:{target}")({"x": 1})


@pytest.mark.parametrize(
    ("description", "missing"),
    [
        ({"kind": "python"}, "'target'"),
        ({"kind": "http"}, "'url'"),
        ({"kind": "mcp", "url": "http://x/mcp"}, "'tool'"),
    ],
)
def test_a_description_without_its_required_keys_is_an_input_error(
    description: dict[str, str], missing: str
) -> None:
    from arbiter.systems.factory import build_system

    with pytest.raises(InputError, match=missing):
        build_system(description)
