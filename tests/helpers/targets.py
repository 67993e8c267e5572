"""Import targets of every shape the ``python`` system accepts, for its tests."""

from __future__ import annotations

from typing import Any

from arbiter.contract import Prediction


def sync_fn(input: dict[str, Any]) -> Prediction:
    return Prediction(label=str(input["x"]))


async def async_fn(input: dict[str, Any]) -> Prediction:
    return Prediction(label=str(input["x"]))


def returns_dict(input: dict[str, Any]) -> dict[str, Any]:
    return {"label": str(input["x"]), "confidence": 0.5}


def returns_str(input: dict[str, Any]) -> str:
    return str(input["x"])


def returns_bad_dict(input: dict[str, Any]) -> dict[str, Any]:
    return {"label": "a", "confidence": 7}


def returns_int(input: dict[str, Any]) -> int:
    return 3


def factory() -> Any:
    prefix = "made-"

    def predict(input: dict[str, Any]) -> Prediction:
        return Prediction(label=prefix + str(input["x"]))

    return predict


class Model:
    """A class is a factory: instantiated once, then its instances are called."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        self.calls += 1
        return Prediction(label=f"model-{input['x']}")


NOT_CALLABLE = 42


def bad_factory() -> int:
    return 1
