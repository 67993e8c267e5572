"""The ``python`` system under test: a callable named ``"package.module:function"``.

The target may be a sync or async callable taking the input dict, or a factory (a
callable with no required parameters, a class included) that returns one. It may
return a ``Prediction``, a dict in the shape of one, or a bare label string.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.contract import Prediction
from arbiter.errors import InputError, InvalidSystemResponse, SystemCrashed, SystemUnderTestError
from arbiter.systems.registry import SystemKind, SystemOptions, require
from arbiter.validation import describe_validation_error

__all__ = ["KIND", "PythonSystem", "resolve_target"]

PredictFn = Callable[[dict[str, Any]], Any]


def _is_path(module_name: str) -> bool:
    return module_name.endswith(".py") or "/" in module_name or os.sep in module_name


def _import(target: str, module_name: str) -> Any:
    """The module a target names: by dotted name, or from a ``.py`` file path."""
    if not _is_path(module_name):
        if "" not in sys.path and os.getcwd() not in sys.path:
            # Like `python -m` and uvicorn: modules in the working directory are importable.
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(module_name)
    path = Path(module_name).expanduser().resolve()
    if not path.is_file():
        raise InputError(f"python target {target!r}: no such file {module_name}")
    # Its folder comes first on the path, so the file can import its neighbours.
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"arbiter_target_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"python target {target!r}: {module_name} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def resolve_target(target: str) -> PredictFn:
    """Import ``"package.module:attribute"`` (or ``"path/to/file.py:attribute"``) and
    return the predicting callable.

    Raises:
        InputError: The target is malformed, cannot be imported (it is missing, or
            importing it raised), or is not callable.
    """
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise InputError(
            f"python target {target!r} must look like 'package.module:function' "
            "or 'path/to/file.py:function'"
        )
    try:
        module = _import(target, module_name)
    except InputError:
        raise
    except Exception as exc:  # a module that fails on import is the user's input
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise InputError(
            f"python target {target!r}: cannot import {module_name!r}: {reason}"
        ) from None
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
        if isinstance(target, str):
            module_name, _, attribute = target.rpartition(":")
            if module_name and _is_path(module_name):  # stored absolute: resumable anywhere
                target = f"{Path(module_name).expanduser().resolve()}:{attribute}"
        self.target = target if isinstance(target, str) else _qualified_name(target)
        self._fn: PredictFn = resolve_target(target) if isinstance(target, str) else target
        self._is_async = inspect.iscoroutinefunction(self._fn) or inspect.iscoroutinefunction(
            getattr(self._fn, "__call__", None)  # noqa: B004 - an instance with async __call__
        )
        self.threaded = threaded
        # A sync callable in a worker thread always suspends; an async one may not.
        self.always_suspends = threaded and not self._is_async

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
            reason = describe_validation_error(exc, Prediction)
            raise InvalidSystemResponse(
                f"{target} returned an invalid prediction: {reason}"
            ) from None
    raise InvalidSystemResponse(
        f"{target} returned {type(result).__name__}; expected a Prediction, dict or label string"
    )


def _describe(options: SystemOptions) -> dict[str, Any]:
    return {"kind": "python", "target": options.target}


def _build(description: Mapping[str, Any], headers: Mapping[str, str]) -> PythonSystem:
    require(description, "python", "target")
    return PythonSystem(str(description["target"]))


KIND = SystemKind(
    name="python",
    summary="a Python callable",
    target="'package.module:function'",
    describe=_describe,
    build=_build,
)
"""The ``python`` kind: ``--target package.module:function`` or ``path/to/file.py:function``."""
