"""Which scorers a run uses: the registry the service layer offers, and option parsing.

The registry here is the scoring package's built-ins, the scorers engines provide (the
jury, the trajectory scorers, the decomposed LLM judges) and every installed plugin, so
the command line, an eval file and a server build scorers the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arbiter.contract import Example, ScorerSpec
from arbiter.errors import InputError
from arbiter.scoring.base import BuiltScorer, ScoringContext, has_reference
from arbiter.scoring.registry import ScorerRegistry, _import, _Pending

__all__ = ["ENGINE_SCORERS", "build_scorers", "check_references", "scorer_registry", "scorer_specs"]

ENGINE_SCORERS: dict[str, str] = {
    "jury": "arbiter.jury.scorer:jury",
}
"""Scorers the engines provide, by name: ``module:factory``, imported on first use (the
scoring layer cannot name them: they sit above it). The trajectory scorers and the LLM
judges have catalogs of their own (``TRAJECTORY_SCORERS``, ``JUDGE_SCORERS``), merged in
by :func:`scorer_registry`."""


def scorer_registry(*, plugins: bool = True) -> ScorerRegistry:
    """Every scorer a run may name: built-ins, the engines' scorers (the jury, the
    trajectory scorers, the decomposed LLM judges), installed plugins.

    Nothing is imported until a scorer is used: building the registry stays cheap.

    Raises:
        ValueError: Two catalogs name the same scorer (a mistake in Arbiter itself).
    """
    from arbiter.judges import JUDGE_SCORERS
    from arbiter.safety import SAFETY_SCORERS
    from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

    registry = ScorerRegistry.default(plugins=False)
    for catalog in (ENGINE_SCORERS, TRAJECTORY_SCORERS, JUDGE_SCORERS, SAFETY_SCORERS):
        # Added catalog by catalog, not merged: a name two catalogs share raises here
        # instead of one silently shadowing the other.
        for name, target in catalog.items():
            # The registry's lazy entry, as for its built-ins (it has no public one yet).
            registry.add(name, _Pending(name, target, _import(target)))
    if plugins:
        registry.load_plugins()  # after the engines' scorers: a plugin never replaces one
    return registry


def scorer_specs(
    options: Sequence[str],
    *,
    gate_on: Sequence[str] = (),
    label_map: Mapping[str, str] | None = None,
    registry: ScorerRegistry | None = None,
) -> list[ScorerSpec]:
    """The specs of a run's scorers, from ``--scorer`` options, checked.

    Args:
        options: ``NAME[:ARG=VALUE,...]`` each; none: ``label``.
        gate_on: Names of the scorers that gate; none: every scorer gates.
        label_map: The run's label map, given to a ``label`` scorer that names none.
        registry: Where names are looked up; None: :func:`scorer_registry`.

    Raises:
        InputError: A malformed option, an unknown scorer or argument, two scorers with
            one name, or a ``--gate-on`` naming no scorer of the run.
    """
    registry = registry or scorer_registry()
    specs = [registry.spec_of(option) for option in options or ["label"]]
    if label_map:
        specs = [_with_label_map(spec, label_map) for spec in specs]
    names = [spec.label for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise InputError(
                f"two scorers are named {name!r} in this run; tell them apart with as=NAME"
            )
    unknown = [name for name in gate_on if name not in names]
    if unknown:
        raise InputError(
            f"--gate-on {unknown[0]!r} names no scorer of this run; its scorers: "
            + ", ".join(names)
        )
    if gate_on:
        specs = [spec.model_copy(update={"gating": spec.label in gate_on}) for spec in specs]
    return specs


def build_scorers(
    specs: Sequence[ScorerSpec],
    *,
    context: ScoringContext | None = None,
    registry: ScorerRegistry | None = None,
) -> list[BuiltScorer]:
    """Build the scorers the specs describe, in their context (providers, cache).

    Raises:
        InputError: As :meth:`ScorerRegistry.build_all`.
    """
    return (registry or scorer_registry()).build_all(specs, context=context)


def _with_label_map(spec: ScorerSpec, label_map: Mapping[str, str]) -> ScorerSpec:
    if spec.name != "label" or spec.args.get("label_map"):
        return spec
    return spec.model_copy(update={"args": {**spec.args, "label_map": dict(label_map)}})


_REFERENCE_FIELDS = {"label": "expected_label", "expected": "expected"}


def check_references(
    examples: Sequence[Example],
    specs: Sequence[ScorerSpec],
    source: str,
    *,
    registry: ScorerRegistry | None = None,
) -> None:
    """Refuse a run whose scorer needs a reference no example of the dataset has.

    Raises:
        InputError: ``source: no example has an expected_label, which scorer 'label'
            compares with; ...``.
    """
    registry = registry or scorer_registry()
    for spec in specs:
        reference = registry.factory_of(spec.name).reference
        if reference is None or any(has_reference(e, reference) for e in examples):
            continue
        raise InputError(
            f"{source}: no example has an {_REFERENCE_FIELDS[reference]}, which scorer "
            f"{spec.label!r} compares with; add one, or score with scorers that need none "
            "(--scorer, see arbiter scorers)"
        )
