"""Which ingested runs the judge panels see, and what their rulings condemn.

An agent's judge setting is a switch (``inherit`` the deployment's default, ``on`` or
``off``) and an optional sample rate. Resolving it is lenient on purpose: a stored value
that cannot be read falls back to the default and says so, because a typo must neither
silence the judges nor turn them on; a rate outside [0, 1] is clamped. Resolution is
pure: the caller logs the warnings.

A run the judges see is one a deterministic scorer failed (``flagged``), one that ended
in error (``anomalous``), or a clean one the seeded draw picked (``sampled``), exactly
as the online pipeline escalates its items.

A delivered answer whose groundedness judges fail is condemned: the judges found its
claims unsupported by what the agent retrieved or was told. An answer a gate withheld is
never condemned (the gate already acted, and its withholding is its own event).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "JUDGE_SWITCHES",
    "JudgePrefs",
    "JudgeSwitch",
    "JudgeTrigger",
    "condemning_judges",
    "judge_trigger",
    "resolve_judge_prefs",
]

JudgeSwitch = Literal["inherit", "on", "off"]
"""An agent's own judge setting: the deployment default, always, or never."""
JUDGE_SWITCHES: tuple[JudgeSwitch, ...] = ("inherit", "on", "off")
JudgeTrigger = Literal["anomalous", "flagged", "sampled"]
"""Why a run reached the judges."""


@dataclass(frozen=True)
class JudgePrefs:
    """What an agent's runs get: judges or not, and the share of clean runs judged."""

    enabled: bool
    """Whether the judges run on the agent's runs at all."""
    sample_rate: float
    """Share of clean runs judged too, in [0, 1]."""
    switch_from: Literal["agent", "default"]
    """Where ``enabled`` came from."""
    rate_from: Literal["agent", "default"]
    """Where ``sample_rate`` came from."""


def _rate(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


def resolve_judge_prefs(
    raw: Mapping[str, object] | None, *, default_on: bool, default_rate: float
) -> tuple[JudgePrefs, list[str]]:
    """An agent's judge preferences from its stored setting and the deployment default.

    Args:
        raw: The agent's stored setting (``{"judges": ..., "sample_rate": ...}``), as
            stored; None: it has none.
        default_on: Whether judges run by default.
        default_rate: The default sample rate (clamped to [0, 1]).

    Returns:
        The preferences, and one warning per stored value that could not be read (each
        of which fell back to the default).

    Examples:
        >>> prefs, _ = resolve_judge_prefs({"judges": "on", "sample_rate": 3}, default_on=False,
        ...     default_rate=0.0)
        >>> prefs.enabled, prefs.sample_rate
        (True, 1.0)
        >>> prefs, warnings = resolve_judge_prefs({"judges": "yes"}, default_on=False,
        ...     default_rate=0.1)
        >>> prefs.enabled, warnings
        (False, ["judges: 'yes' is not inherit, on or off; the default (off) applies"])
    """
    fallback_rate = _rate(default_rate)
    base_rate = 0.0 if fallback_rate is None else fallback_rate
    warnings: list[str] = []
    entry: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
    if raw is not None and not isinstance(raw, Mapping):
        warnings.append(f"judge setting {_shown(raw)} is not a table; the defaults apply")
    switch = entry.get("judges", "inherit")
    enabled, switch_from = default_on, "default"
    if isinstance(switch, str) and switch.strip().lower() in JUDGE_SWITCHES:
        word = switch.strip().lower()
        if word != "inherit":
            enabled, switch_from = word == "on", "agent"
    elif switch is not None:
        default = "on" if default_on else "off"
        warnings.append(
            f"judges: {_shown(switch)} is not inherit, on or off; the default ({default}) applies"
        )
    rate, rate_from = base_rate, "default"
    given = entry.get("sample_rate")
    if given is not None:
        found = _rate(given)
        if found is None:
            warnings.append(
                f"sample_rate: {_shown(given)} is not a number; the default ({base_rate:g}) applies"
            )
        else:
            rate, rate_from = found, "agent"
    prefs = JudgePrefs(
        enabled=enabled,
        sample_rate=rate,
        switch_from=switch_from,  # type: ignore[arg-type]
        rate_from=rate_from,  # type: ignore[arg-type]
    )
    return prefs, warnings


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def judge_trigger(*, failed_rules: bool, errored: bool, drawn: bool) -> JudgeTrigger | None:
    """Why a run goes to the judges (None: it does not).

    Args:
        failed_rules: A deterministic scorer failed the run.
        errored: The run ended in error.
        drawn: The seeded draw picked it among the clean runs.
    """
    if errored:
        return "anomalous"
    if failed_rules:
        return "flagged"
    return "sampled" if drawn else None


def condemning_judges(
    rulings: Iterable[tuple[str, bool | None]], *, family: Collection[str], withheld: bool
) -> list[str]:
    """The groundedness judges whose failing ruling condemns a delivered answer.

    Args:
        rulings: (judge, verdict) of each judge that was asked; None: it abstained.
        family: The judges of the groundedness family.
        withheld: A gate withheld the answer: nothing is condemned.

    Examples:
        >>> family = {"groundedness", "answer_groundedness"}
        >>> condemning_judges([("answer_groundedness", False), ("content_safety", False)],
        ...     family=family, withheld=False)
        ['answer_groundedness']
        >>> condemning_judges([("answer_groundedness", False)], family=family, withheld=True)
        []
    """
    if withheld:
        return []
    return list(
        dict.fromkeys(name for name, passed in rulings if passed is False and name in family)
    )
