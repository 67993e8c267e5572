"""One output scored by one registered scorer, outside any run.

The MCP server's ``score`` tool and :func:`arbiter.assert_output` are this function: the
scorer is looked up and built the way a run builds it (a ``NAME:ARG=VALUE`` option or a
name with arguments), the output is read as any system's answer would be, and the score
comes back as the scorer gave it (an abstention stays ``passed=None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue, ValidationError

from arbiter.contract import Example, Output, Score
from arbiter.errors import InputError
from arbiter.scoring.base import ScoringContext, has_reference
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import scorer_registry
from arbiter.validation import describe_validation_error

__all__ = ["score_output"]

_REFERENCE_NAMES = {"label": "expected_label", "expected": "expected"}


async def score_output(
    output: Any,
    *,
    scorer: str,
    args: Mapping[str, Any] | None = None,
    expected: JsonValue = None,
    expected_label: str | None = None,
    input: Mapping[str, Any] | None = None,
    example_id: str = "output",
    registry: ScorerRegistry | None = None,
    context: ScoringContext | None = None,
) -> Score:
    """Score one output with one scorer.

    Args:
        output: What the system produced: a string (both its label and its text), an
            ``Output`` or ``Prediction`` (or a dict in either shape), or any other JSON.
        scorer: A registered scorer's name, optionally with arguments
            (``f1_tokens:threshold=0.5``).
        args: Arguments of the scorer (over those of ``scorer``).
        expected: The reference a scorer compares with (a text, a number, any JSON).
        expected_label: The right label, for label scorers.
        input: The input the output answers, for scorers that read it.
        example_id: The id the example is given (it shows in explanations).
        registry: Where the scorer is looked up; None: every registered scorer.
        context: Providers and cache for model scorers; None: a fresh one.

    Returns:
        The scorer's score (an errored score when the scorer raised).

    Raises:
        InputError: An unknown scorer or argument, an output that is not an output, or
            a reference the scorer needs that is not given.
    """
    registry = registry or scorer_registry()
    spec = registry.spec_of(scorer)
    if args:
        spec = spec.model_copy(update={"args": {**spec.args, **dict(args)}})
    try:
        read = Output.coerce(output)
    except ValueError as exc:  # a ValidationError too: an object shaped as an invalid output
        why = describe_validation_error(exc, Output) if isinstance(exc, ValidationError) else exc
        raise InputError(f"output: {why}") from None
    try:
        example = Example(
            id=example_id, input=dict(input or {}), expected=expected, expected_label=expected_label
        )
    except ValidationError as exc:
        raise InputError(f"example: {describe_validation_error(exc, Example)}") from None
    reference = registry.factory_of(spec.name).reference
    if reference is not None and not has_reference(example, reference):
        raise InputError(
            f"scorer {spec.label!r} compares the output with a reference: give "
            f"{_REFERENCE_NAMES[reference]}"
        )
    built = registry.build(spec, context=context or ScoringContext())
    try:
        return await built(example, read)
    finally:
        await built.aclose()
