"""The trust policy: how conduct is weighed, where the ladder's floors are, and what the
breaker does.

A policy is TOML (the shipped defaults are ``arbiter/trust/data/policy.toml``). Parsing
is strict on purpose: a typo in a key must not silently leave a default in force, so an
unknown key, a value of the wrong type or out of range, or floors out of order is an
:class:`~arbiter.errors.InputError` naming the key (and the file's line when read from
a file).
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, cast

from arbiter.contract.trust import BreakerMode
from arbiter.errors import InputError

__all__ = [
    "BREAKER_MODES",
    "POLICY_FILE",
    "TrustPolicy",
    "default_policy",
    "load_policy",
    "parse_policy",
    "policy_document",
    "policy_from_mapping",
    "policy_toml",
]

POLICY_FILE = "policy.toml"
"""The shipped policy's file name in ``arbiter/trust/data/``."""
BREAKER_MODES: tuple[BreakerMode, ...] = ("off", "notify", "freeze")

_Where = Callable[[Sequence[str]], str]


@dataclass(frozen=True)
class TrustPolicy:
    """A parsed, checked trust policy (see the shipped file for what each key means)."""

    half_life_days: float = 14.0
    window_runs: int = 200
    trust_critical: tuple[str, ...] = (
        "scope_adherence",
        "grounded_overlap",
        "numeric_fidelity",
        "no_tool_loops",
        "output_sanity",
    )
    trust_dim_weight: float = 0.3
    at_risk_floor: float = 0.6
    healthy_floor: float = 0.8
    trusted_floor: float = 0.95
    min_runs_proven: int = 10
    min_runs_trusted: int = 50
    stale_days: float = 30.0
    breaker_mode: BreakerMode = "off"
    breaker_agents: Mapping[str, BreakerMode] = field(default_factory=dict)

    def mode_for(self, agent: str) -> BreakerMode:
        """The breaker's mode for ``agent``: its own, else the policy's."""
        return self.breaker_agents.get(agent, self.breaker_mode)

    def with_mode(self, mode: BreakerMode) -> TrustPolicy:
        """The same policy with another default breaker mode."""
        return replace(self, breaker_mode=mode)


# section -> key -> (attribute, kind)
_SCHEMA: dict[str, dict[str, tuple[str, str]]] = {
    "conduct": {
        "half_life_days": ("half_life_days", "positive"),
        "window_runs": ("window_runs", "count"),
        "trust_critical": ("trust_critical", "names"),
        "trust_dim_weight": ("trust_dim_weight", "unit"),
    },
    "floors": {
        "at_risk": ("at_risk_floor", "unit"),
        "healthy": ("healthy_floor", "unit"),
        "trusted": ("trusted_floor", "unit"),
    },
    "evidence": {
        "min_runs_proven": ("min_runs_proven", "count"),
        "min_runs_trusted": ("min_runs_trusted", "count"),
        "stale_days": ("stale_days", "positive"),
    },
    "breaker": {"mode": ("breaker_mode", "mode"), "agents": ("breaker_agents", "agents")},
}


def _fail(where: _Where, location: Sequence[str], message: str) -> InputError:
    return InputError(f"{where(location)}: policy key '{'.'.join(location)}' {message}")


def _number(value: Any, where: _Where, location: Sequence[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, location, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise _fail(where, location, f"must be finite, got {value!r}")
    return float(value)


def _value(kind: str, value: Any, where: _Where, location: Sequence[str]) -> Any:
    if kind == "positive":
        number = _number(value, where, location)
        if number <= 0:
            raise _fail(where, location, f"must be above 0, got {value!r}")
        return number
    if kind == "unit":
        number = _number(value, where, location)
        if not 0.0 <= number <= 1.0:
            raise _fail(where, location, f"must be within [0, 1], got {value!r}")
        return number
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _fail(where, location, f"must be a whole number of at least 1, got {value!r}")
        return value
    if kind == "names":
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise _fail(where, location, f"must be a list of scorer names, got {value!r}")
        return tuple(dict.fromkeys(value))
    if kind == "mode":
        if value not in BREAKER_MODES:
            raise _fail(where, location, f"must be one of off, notify, freeze; got {value!r}")
        return value
    # agents: a table of agent name -> mode
    if not isinstance(value, dict):
        raise _fail(where, location, f"must be a table of agent = mode, got {value!r}")
    return {
        str(agent): _value("mode", mode, where, [*location, str(agent)])
        for agent, mode in value.items()
    }


def policy_from_mapping(document: Mapping[str, Any], *, where: _Where | None = None) -> TrustPolicy:
    """A checked policy from parsed TOML (or the same shape as JSON).

    Args:
        document: The sections ``conduct``, ``floors``, ``evidence``, ``breaker``.
        where: Names the source of a key, for error messages; default ``policy``.

    Raises:
        InputError: An unknown section or key, a bad value, or floors / minimums out
            of order; the message names the key.
    """
    name: _Where = where or (lambda _location: "policy")
    if not isinstance(document, Mapping):
        raise InputError(f"{name(())}: a policy must be a table of sections")
    values: dict[str, Any] = {}
    for section, table in document.items():
        keys = _SCHEMA.get(section)
        if keys is None:
            known = ", ".join(_SCHEMA)
            raise _fail(name, [section], f"is unknown (sections: {known})")
        if not isinstance(table, Mapping):
            raise _fail(name, [section], "must be a table")
        for key, value in table.items():
            entry = keys.get(key)
            if entry is None:
                known = ", ".join(keys)
                raise _fail(name, [section, key], f"is unknown (keys of [{section}]: {known})")
            attribute, kind = entry
            values[attribute] = _value(kind, value, name, [section, key])
    policy = TrustPolicy(**values)
    if not policy.at_risk_floor <= policy.healthy_floor <= policy.trusted_floor:
        raise _fail(name, ["floors"], "must be ordered at_risk <= healthy <= trusted")
    if policy.min_runs_trusted < policy.min_runs_proven:
        raise _fail(
            name, ["evidence", "min_runs_trusted"], "must be at least evidence.min_runs_proven"
        )
    return policy


def parse_policy(text: str, *, where: str = "policy") -> TrustPolicy:
    """A checked policy from TOML text (``where`` names it in errors).

    Raises:
        InputError: Not TOML, or not a valid policy (see :func:`policy_from_mapping`).
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML: {exc}") from None
    lines = _key_lines(text)

    def located(location: Sequence[str]) -> str:
        parts = tuple(location)
        while parts:
            if parts in lines:
                return f"{where}:{lines[parts]}"
            parts = parts[:-1]
        return where

    return policy_from_mapping(document, where=located)


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of each ``[section]`` and ``key =`` (enough for a policy file)."""
    lines: dict[tuple[str, ...], int] = {}
    section: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("[") and "]" in line:
            section = tuple(p.strip().strip("\"'") for p in line.strip("[]").split("."))
            lines.setdefault(section, number)
        elif "=" in line and not line.startswith("#"):
            key = line.split("=", 1)[0].strip().strip("\"'")
            lines.setdefault((*section, key), number)
    return lines


def load_policy(path: str | os.PathLike[str]) -> TrustPolicy:
    """Read and check a policy file.

    Raises:
        InputError: The file cannot be read, or is not a valid policy.
    """
    where = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"{where}: cannot read the policy file: {reason}") from None
    return parse_policy(text, where=where)


def shipped_policy_text() -> str:
    """The shipped policy file's text."""
    return resources.files("arbiter.trust").joinpath("data", POLICY_FILE).read_text("utf-8")


@cache
def default_policy() -> TrustPolicy:
    """The shipped policy (read once)."""
    return parse_policy(shipped_policy_text(), where=f"arbiter/trust/data/{POLICY_FILE}")


def policy_document(policy: TrustPolicy) -> dict[str, dict[str, Any]]:
    """The policy as its sections (the inverse of :func:`policy_from_mapping`)."""
    out: dict[str, dict[str, Any]] = {}
    for section, keys in _SCHEMA.items():
        table: dict[str, Any] = {}
        for key, (attribute, _kind) in keys.items():
            value = getattr(policy, attribute)
            table[key] = (
                list(value)
                if isinstance(value, tuple)
                else dict(value)
                if isinstance(value, Mapping)
                else value
            )
        out[section] = table
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def policy_toml(policy: TrustPolicy) -> str:
    """The policy as TOML text that :func:`parse_policy` reads back to the same policy."""
    lines: list[str] = []
    for section, table in policy_document(policy).items():
        agents = cast("dict[str, str]", table.pop("agents", None) or {})
        lines.append(f"[{section}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
        if section == "breaker":
            lines.append("")
            lines.append("[breaker.agents]")
            lines += [f"{_toml_value(name)} = {_toml_value(mode)}" for name, mode in agents.items()]
        lines.append("")
    return "\n".join(lines)
