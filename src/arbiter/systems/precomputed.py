"""The ``precomputed`` system under test: the dataset already carries the outputs.

Logs of an LLM app, or a jury case file, hold what the system answered next to what it
was asked; scoring them calls nothing. The output of an example is the one the dataset
row carried at its top level (``Example.output``: the loader reads the row's
``output_field`` into it), else ``example.input[field]``. An example with neither is a
failed pair (:class:`~arbiter.errors.MissingField`), not a stopped run.

::

    from arbiter.datasets import load_dataset
    from arbiter.harness.runner import run_eval

    dataset = load_dataset("logs.jsonl", output_field="response")
    report = run_eval(PrecomputedSystem("response"), dataset, scorers=[...])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from arbiter.contract import Example, Output, Prediction
from arbiter.errors import InputError, InvalidSystemResponse, MissingField
from arbiter.systems.registry import SystemKind, SystemOptions
from arbiter.validation import describe_validation_error

__all__ = ["DEFAULT_OUTPUT_FIELD", "KIND", "PrecomputedSystem"]

DEFAULT_OUTPUT_FIELD = "output"
"""Where a precomputed output sits unless told otherwise."""


class PrecomputedSystem:
    """Answer every example with the output its dataset row carries.

    Args:
        field: The row's field holding the output: read from the top level (as
            ``Example.output``) or, failing that, from ``input``.

    Raises:
        InputError: ``field`` is not a non-empty string.
    """

    call_timeout = 0.0
    """Every answer is immediate: the runner needs no timer around it."""
    always_suspends = False
    """An answer never waits on I/O, so the runner yields after each to store results."""

    def __init__(self, field: str = DEFAULT_OUTPUT_FIELD) -> None:
        if not isinstance(field, str) or not field.strip():
            raise InputError(f"a precomputed system needs an output field name, got {field!r}")
        self.field = field

    async def answer(self, example: Example) -> Output:
        """The output recorded for ``example``.

        Raises:
            MissingField: The example carries no output (at the top level or in its input).
            InvalidSystemResponse: The recorded value is shaped as an output but invalid
                (a confidence outside [0, 1], ...).
        """
        if example.output is not None:
            value: Any = example.output
        elif example.input.get(self.field) is not None:
            value = example.input[self.field]
        else:
            raise MissingField(f"example {example.id!r} has no field {self.field!r}")
        return _coerce(value, f"example {example.id!r}")

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """The classifier form of ``input[field]``, for callers holding only an input.

        The runner calls :meth:`answer`, which also reads outputs recorded at the top
        level of a row and keeps free text as text.

        Raises:
            MissingField: The input has no such field.
            InvalidSystemResponse: The value has neither a label nor a text.
        """
        if input.get(self.field) is None:
            raise MissingField(f"the input has no field {self.field!r}")
        output = _coerce(input[self.field], "the input")
        label = output.label if output.label is not None else output.text
        if label is None:
            raise InvalidSystemResponse(
                f"the input's {self.field!r} has no label or text to predict with"
            )
        raw = output.raw if isinstance(output.raw, dict) else {}
        return Prediction(
            id=output.id,
            raw_output=raw,
            label=label,
            confidence=output.confidence,
            metadata=output.metadata,
        )

    def describe(self) -> dict[str, Any]:
        """A JSON-able description from which the system can be rebuilt."""
        return {"kind": "precomputed", "field": self.field}


def _coerce(value: Any, where: str) -> Output:
    try:
        return Output.coerce(value)
    except ValidationError as exc:  # one line naming the field, not pydantic's report
        why = describe_validation_error(exc, Output)
        raise InvalidSystemResponse(f"{where}: the recorded output is unreadable: {why}") from None
    except ValueError as exc:
        raise InvalidSystemResponse(f"{where}: the recorded output is unreadable: {exc}") from None


def _describe(options: SystemOptions) -> dict[str, Any]:
    if options.target:
        raise InputError(
            "--system precomputed calls nothing: drop --target (the outputs come from "
            f"the dataset's {options.output_field!r} field)"
        )
    return {"kind": "precomputed", "field": options.output_field}


def _build(description: Mapping[str, Any], headers: Mapping[str, str]) -> PrecomputedSystem:
    return PrecomputedSystem(description.get("field", DEFAULT_OUTPUT_FIELD))


KIND = SystemKind(
    name="precomputed",
    summary="the answers the dataset already holds; nothing is called",
    describe=_describe,
    build=_build,
    reads=frozenset({"output_field"}),
)
"""The ``precomputed`` kind: no target; ``--output-field`` names where the answers are."""
