"""What makes two runs' figures not directly comparable, one line each.

``arbiter diff`` prints these as warnings before its tables; ``arbiter gate --baseline``
splits them with :func:`baseline_refusals`: what makes the outcomes themselves mean
different things (k, label maps, the scorers that gate) refuses the baseline, the rest
is a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arbiter import escape
from arbiter.contract import RunConfig, RunInfo, ScorerSpec

__all__ = ["baseline_refusals", "comparability_notes", "scorer_notes"]


def comparability_notes(a: RunInfo, b: RunInfo) -> list[str]:
    """What makes two runs' figures not directly comparable, one line each.

    Covers the datasets, k and label maps (which ``arbiter gate --baseline`` refuses on);
    :func:`scorer_notes` covers the scorers.
    """
    notes = []
    if a.dataset_hash != b.dataset_hash:
        notes.append(
            f"the runs used different datasets ({a.dataset_name} {a.dataset_hash[:12]} "
            f"vs {b.dataset_name} {b.dataset_hash[:12]})"
        )
    return notes + _outcome_notes(a, b)


def baseline_refusals(
    run: RunInfo,
    baseline: RunInfo,
    run_scorers: Sequence[ScorerSpec],
    baseline_scorers: Sequence[ScorerSpec],
) -> tuple[list[str], list[str]]:
    """Why a run cannot be gated against a baseline, and what only deserves a warning.

    Refused: another k, another label map, another set of gating scorers, or a gating
    scorer built with other arguments (the pass / fail outcome the gate compares then
    means different things). Warned: another version of a gating scorer, and every
    difference of scorers that do not gate. The datasets are left to the gate, which
    compares the examples in common.

    Returns:
        ``(refusals, warnings)``, one line each.
    """
    refusals = _outcome_notes(run, baseline)
    warnings: list[str] = []
    gating_run = {spec.label: spec for spec in run_scorers if spec.gating}
    gating_base = {spec.label: spec for spec in baseline_scorers if spec.gating}
    if set(gating_run) != set(gating_base):
        refusals.append(
            f"the run gates on {', '.join(gating_run) or 'no scorer'} and the baseline on "
            f"{', '.join(gating_base) or 'no scorer'}: their outcomes (accuracy, pass^k) mean "
            "different things"
        )
    for name in sorted(set(gating_run) & set(gating_base)):
        spec_a, spec_b = gating_run[name], gating_base[name]
        changes = _spec_changes(spec_a, spec_b)
        if spec_a.name != spec_b.name or any(not c.startswith("version ") for c in changes):
            refusals.append(
                f"the gating scorer {name!r} differs, run vs baseline ({'; '.join(changes)}): "
                "its pass / fail means different things in the two runs"
            )
        elif changes:
            warnings.append(
                f"the gating scorer {name!r} differs, run vs baseline ({'; '.join(changes)}): "
                "check that the new version grades as the old one did"
            )
    gating = {*gating_run, *gating_base}
    warnings += _difference_notes(
        {spec.label: spec for spec in run_scorers if spec.label not in gating},
        {spec.label: spec for spec in baseline_scorers if spec.label not in gating},
        sides=("the run", "the baseline"),
    )
    return refusals, warnings


def _gating_note(gating_a: Sequence[str], gating_b: Sequence[str]) -> str:
    return (
        f"the runs gate on different scorers ({', '.join(gating_a) or 'none'} vs "
        f"{', '.join(gating_b) or 'none'}): their outcomes (accuracy, pass^k) mean "
        "different things"
    )


def _outcome_notes(a: RunInfo, b: RunInfo) -> list[str]:
    """The notes on k and label maps: the outcomes of two runs differ in meaning."""
    notes = []
    config_a, config_b = a.run_config, b.run_config
    if config_a.k != config_b.k:
        notes.append(f"the runs used different k ({config_a.k} vs {config_b.k}): pass^k differs")
    if _label_map(config_a) != _label_map(config_b):
        notes.append(
            "the runs used different label maps: their mapped figures mean different things"
        )
    return notes


def scorer_notes(specs_a: Sequence[ScorerSpec], specs_b: Sequence[ScorerSpec]) -> list[str]:
    """What makes two runs' scorers not directly comparable, one line each: a scorer in
    one run only, one built differently (another scorer, version or arguments), and a
    different set of gating scorers (the outcomes then mean different things).

    The ``label`` scorer's label map is left to :func:`comparability_notes`.
    """
    notes = _difference_notes(
        {spec.label: spec for spec in specs_a}, {spec.label: spec for spec in specs_b}
    )
    gating_a = [spec.label for spec in specs_a if spec.gating]
    gating_b = [spec.label for spec in specs_b if spec.gating]
    if set(gating_a) != set(gating_b):
        notes.append(_gating_note(gating_a, gating_b))
    return notes


def _difference_notes(
    by_name_a: dict[str, ScorerSpec],
    by_name_b: dict[str, ScorerSpec],
    *,
    sides: tuple[str, str] = ("run A", "run B"),
) -> list[str]:
    """A scorer in one run only, and one built differently, one line each."""
    notes = []
    for run, mine, theirs in ((sides[0], by_name_a, by_name_b), (sides[1], by_name_b, by_name_a)):
        alone = [name for name in mine if name not in theirs]
        if alone:
            names = ", ".join(repr(name) for name in alone)
            verb = "is" if len(alone) == 1 else "are"
            notes.append(f"scorer {names} {verb} only in {run}: not compared")
    for name, spec_a in by_name_a.items():
        spec_b = by_name_b.get(name)
        if spec_b is not None and (changes := _spec_changes(spec_a, spec_b)):
            notes.append(
                f"scorer {name!r} differs between the runs ({'; '.join(changes)}): "
                "its figures mean different things"
            )
    return notes


_SHOWN_ARGUMENT_CHARS = 60
"""Characters of an argument value a scorer note shows."""


def _spec_changes(a: ScorerSpec, b: ScorerSpec) -> list[str]:
    if a.name != b.name:
        return [f"{a.name} vs {b.name}"]
    changes = [f"version {a.version} vs {b.version}"] if a.version != b.version else []
    for key in sorted(set(a.args) | set(b.args)):
        if a.name == "label" and key == "label_map":
            continue  # comparability_notes reports it, and the gate refuses on it
        value_a, value_b = a.args.get(key), b.args.get(key)
        if value_a != value_b:
            changes.append(f"{key} {_argument(key, a)} vs {_argument(key, b)}")
    return changes


def _argument(key: str, spec: ScorerSpec) -> str:
    if key not in spec.args:
        return "unset"
    return escape.clip(repr(spec.args[key]), _SHOWN_ARGUMENT_CHARS)


def _label_map(config: RunConfig) -> dict[str, Any] | None:
    """The run's label map: its option, else the one its ``label`` scorer was built with."""
    if config.label_map:
        return dict(config.label_map)
    for spec in config.scorers:
        mapping = spec.args.get("label_map") if spec.name == "label" else None
        if isinstance(mapping, dict) and mapping:
            return dict(mapping)
    return None
