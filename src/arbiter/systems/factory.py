"""Build a system under test from its kind and options, or from a stored description."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arbiter.errors import InputError
from arbiter.systems.base import ResponseMapping, SystemUnderTest

__all__ = ["SYSTEM_KINDS", "build_system"]

SYSTEM_KINDS = ("python", "http", "mcp", "precomputed")
"""Kinds of system under test the CLI can build."""


def build_system(
    description: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
) -> SystemUnderTest:
    """Rebuild a system from the dict its ``describe()`` returned.

    Header values are never stored (they may be secrets), so pass them again in
    ``headers`` when resuming a run against a service that needs them.

    Raises:
        InputError: The kind is unknown or an option is invalid.
    """
    kind = description.get("kind")
    required = {"python": ("target",), "http": ("url",), "mcp": ("url", "tool")}.get(str(kind), ())
    missing = [key for key in required if not description.get(key)]
    if missing:
        raise InputError(f"a {kind} system needs {' and '.join(repr(k) for k in missing)}")
    if kind == "python":
        from arbiter.systems.python import PythonSystem

        return PythonSystem(str(description["target"]))
    if kind == "precomputed":
        from arbiter.systems.precomputed import DEFAULT_OUTPUT_FIELD, PrecomputedSystem

        return PrecomputedSystem(description.get("field", DEFAULT_OUTPUT_FIELD))
    if kind == "http":
        from arbiter.systems.http import HttpSystem

        return HttpSystem(
            str(description["url"]),
            method=str(description.get("method", "POST")),
            body_template=description.get("body_template"),
            mapping=ResponseMapping.model_validate(description.get("mapping") or {}),
            headers=_check_headers(description, headers),
            timeout=float(description.get("timeout", 10.0)),
        )
    if kind == "mcp":
        from arbiter.systems.mcp import McpToolSystem

        return McpToolSystem(
            str(description["url"]),
            str(description["tool"]),
            fixed_arguments=description.get("fixed_arguments") or {},
            mapping=ResponseMapping.model_validate(description.get("mapping") or {}),
            headers=_check_headers(description, headers),
            timeout=float(description.get("timeout", 30.0)),
        )
    raise InputError(f"unknown system kind {kind!r}; expected one of {', '.join(SYSTEM_KINDS)}")


def _check_headers(
    description: Mapping[str, Any], headers: Mapping[str, str] | None
) -> dict[str, str]:
    given = dict(headers or {})
    # Header names are case-insensitive (RFC 9110): "authorization" answers "Authorization".
    known = {name.lower() for name in given}
    missing = sorted(n for n in description.get("headers") or [] if n.lower() not in known)
    if missing:
        raise InputError(
            f"the run used header(s) {', '.join(missing)}; pass them again with --header"
        )
    return given
