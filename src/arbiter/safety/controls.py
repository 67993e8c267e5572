"""The assurance pack's control map: requirements tied to the pack members that evidence them.

The controls are data (``safety/data/controls.toml``): EU AI Act Articles 9, 10, 12, 13,
14 and 15 and the NIST AI RMF functions GOVERN, MAP, MEASURE and MANAGE, each citing
the pack members that bear on it. :func:`control_map` is pure: given what each member
holds, each control's status is ``evidence`` when every cited member holds some,
``partial evidence`` when some do, and ``no evidence`` when none do (or a cited member
is absent). No status says a deployment conforms: a person reads the evidence.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

from pydantic import ValidationError

from arbiter.contract.assurance import (
    Control,
    ControlEntry,
    ControlMap,
    ControlStatus,
    EvidenceItem,
    MemberEvidence,
)
from arbiter.errors import InputError

__all__ = ["CONTROLS_FILE", "MAP_NOTE", "control_map", "parse_controls", "shipped_controls"]

CONTROLS_FILE = "controls.toml"
"""The shipped control map, in ``arbiter/safety/data``."""

MAP_NOTE = (
    "A status says what this pack holds for a requirement: 'evidence' (every cited file "
    "holds some), 'partial evidence' (some do) or 'no evidence' (none do). It is not an "
    "assessment of conformity: a person judges the evidence against the requirement."
)
"""What every control map says of its statuses."""

_ABSENT = MemberEvidence(present=False, summary="not in this pack")


def parse_controls(text: str, source: str) -> list[Control]:
    """The controls of a control-map TOML text.

    Raises:
        InputError: ``source: field: why`` when the text is not a valid map (not TOML, a
            control without a field, an id given twice, a ``why`` for a member it does
            not cite).
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: not TOML: {exc}") from None
    raw = document.get("control")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{source}: control: no [[control]] table")
    controls: list[Control] = []
    seen: set[str] = set()
    for number, table in enumerate(raw, 1):
        where = f"{source}: control {number}"
        try:
            control = Control.model_validate(table)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "control"
            raise InputError(f"{where}: {field}: {first['msg']}") from None
        if control.id in seen:
            raise InputError(f"{where}: id: {control.id!r} is given twice")
        stray = sorted(set(control.why) - set(control.evidence))
        if stray:
            raise InputError(f"{where}: why: {stray[0]!r} is not among its evidence")
        seen.add(control.id)
        controls.append(control)
    return controls


@cache
def shipped_controls() -> tuple[Control, ...]:
    """The control map shipped with Arbiter."""
    text = resources.files("arbiter.safety").joinpath("data", CONTROLS_FILE).read_text("utf-8")
    return tuple(parse_controls(text, CONTROLS_FILE))


def _status(items: Sequence[EvidenceItem]) -> ControlStatus:
    present = sum(item.status == "present" for item in items)
    if present == 0:
        return "no evidence"
    return "evidence" if present == len(items) else "partial evidence"


def control_map(controls: Sequence[Control], members: Mapping[str, MemberEvidence]) -> ControlMap:
    """Each control with what the pack's members hold for it.

    Args:
        controls: The controls, in the map's order.
        members: What each pack member holds, by file name; a cited member missing
            from it holds no evidence.
    """
    entries = []
    for control in controls:
        items = []
        for name in control.evidence:
            found = members.get(name, _ABSENT)
            items.append(
                EvidenceItem(
                    file=name,
                    status="present" if found.present else "no evidence",
                    summary=found.summary,
                    why=control.why.get(name, ""),
                )
            )
        entries.append(
            ControlEntry(
                id=control.id,
                framework=control.framework,
                reference=control.reference,
                title=control.title,
                requirement=control.requirement,
                status=_status(items),
                evidence=items,
            )
        )
    return ControlMap(note=MAP_NOTE, controls=entries)
