"""Build a system under test from its stored description (see :mod:`arbiter.systems.registry`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arbiter.systems.base import SystemUnderTest
from arbiter.systems.registry import SystemRegistry

__all__ = ["build_system"]


def build_system(
    description: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    registry: SystemRegistry | None = None,
) -> SystemUnderTest:
    """Rebuild a system from the dict its ``describe()`` returned.

    Header values are never stored (they may be secrets), so pass them again in
    ``headers`` when resuming a run against a service that needs them.

    Args:
        description: The stored description (its ``kind`` names the kind).
        headers: Header values the system needs.
        registry: Where kinds are looked up; None: the built-ins and installed plugins.

    Raises:
        InputError: The kind is unknown or an option is invalid.
    """
    systems = registry if registry is not None else SystemRegistry.default()
    return systems.build(description, headers=headers)
