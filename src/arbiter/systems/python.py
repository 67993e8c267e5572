"""The ``python`` system under test: a callable named ``"package.module:function"``.

The target may be a sync or async callable taking the input dict, or a factory (a
callable with no required parameters, a class included) that returns one. It may
return a ``Prediction``, a dict in the shape of one, or a bare label string.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from arbiter.contract import Prediction
from arbiter.errors import InputError, InvalidSystemResponse, SystemCrashed, SystemUnderTestError

__all__ = ["PythonSystem", "resolve_target"]

PredictFn = Callable[[dict[str, Any]], Any]


def resolve_target(target: str) -> PredictFn:
    """Import ``"package.module:attribute"`` and return the predicting callable.

    Raises:
        InputError: The target is malformed, cannot be imported, or is not callable.
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise InputError(f"python target {target!r} must look like 'package.module:function'")
    if "" not in sys.path and os.getcwd() not in sys.path:
        # Like `python -m` and uvicorn: modules in the working directory are importable.
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"python target {target!r}: cannot import {module_name!r}: {exc}") from exc
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"python target {target!r}: {module_name!r} has no {part!r}") from None
    if not callable(obj):
        raise InputError(f"python target {target!r} is not callable")
    if _is_factory(obj):
        try:
            made = obj()
        except Exception as exc:
            raise InputError(
                f"python target {target!r}: calling the factory raised {type(exc).__name__}: {exc}"
            ) from exc
        if not callable(made):
            raise InputError(f"python target {target!r} is a factory but returned {made!r}")
        obj = made
    return obj  # type: ignore[no-any-return]


def _is_factory(obj: Any) -> bool:
    """A class, or a callable whose signature needs no argument at all."""
    if inspect.isclass(obj):
        return True
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return not positional


class PythonSystem:
    """Wrap a Python callable as a system under test.

    Sync callables run in a worker thread so a slow one cannot stall the event loop;
    pass ``threaded=False`` for cheap pure functions.

    Args:
        target: ``"package.module:function"`` or the callable itself.
        threaded: Run sync callables in ``asyncio.to_thread``.
    """

    def __init__(self, target: str | PredictFn, *, threaded: bool = True) -> None:
        self.target = target if isinstance(target, str) else _qualified_name(target)
        self._fn: PredictFn = resolve_target(target) if isinstance(target, str) else target
        self._is_async = inspect.iscoroutinefunction(self._fn) or inspect.iscoroutinefunction(
            getattr(self._fn, "__call__", None)  # noqa: B004 - an instance with async __call__
        )
        self.threaded = threaded

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """Predict for one input; any exception becomes ``SystemCrashed``."""
        try:
            if self._is_async:
                result = await self._fn(input)
            elif self.threaded:
                result = await asyncio.to_thread(self._fn, input)
            else:
                result = self._fn(input)
                if inspect.isawaitable(result):
                    result = await _await(result)
        except SystemUnderTestError:
            raise
        except Exception as exc:
            raise SystemCrashed(f"{self.target} raised {type(exc).__name__}: {exc}") from exc
        return _as_prediction(result, self.target)

    def describe(self) -> dict[str, Any]:
        """A JSON-able description from which the system can be rebuilt."""
        return {"kind": "python", "target": self.target}


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def _qualified_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or "<unknown>"
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{name}"


def _as_prediction(result: Any, target: str) -> Prediction:
    if isinstance(result, Prediction):
        return result
    if isinstance(result, str):
        return Prediction(label=result)
    if isinstance(result, dict):
        try:
            return Prediction.model_validate(result)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "prediction"
            raise InvalidSystemResponse(
                f"{target} returned an invalid prediction: field {where!r}: {first['msg']}"
            ) from None
    raise InvalidSystemResponse(
        f"{target} returned {type(result).__name__}; expected a Prediction, dict or label string"
    )
