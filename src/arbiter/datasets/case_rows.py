"""Rows of a jury case file read as examples of a dataset.

A jury case (:class:`~arbiter.contract.Case`: ``task``, ``context``, ``output``,
optionally ``expected``, ``defective``, ``defects``, ``id``, ``metadata``) becomes the
example a ``precomputed`` system answers and the ``jury`` scorer judges::

    Example(
        id=case.id,
        input={"task": case.task, "context": case.context},
        output=case.output,
        expected=case.expected,  # ACCEPT, REVISE, REJECT or None
        metadata={**case.metadata, "jury_case": {"defective": ..., "defects": [...]}},
    )

The case is validated by ``Case`` itself, so a row is a valid example exactly when
``arbiter judge`` would accept it as a case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arbiter.contract import Case, Example

__all__ = ["CASE_METADATA_KEY", "CASE_ONLY_KEYS", "example_of_case", "is_case_row"]

CASE_METADATA_KEY = "jury_case"
"""Key of an example's metadata holding what its case knew beyond task, context, output
and expected: ``{"defective": bool | None, "defects": [...]}``."""
CASE_ONLY_KEYS = frozenset({"task", "context", "defective", "defects"})
"""Keys a jury case has and an example has not."""


def is_case_row(row: Mapping[str, Any]) -> bool:
    """Whether a dataset row is shaped as a jury case: no ``input``, a key only cases have.

    A case missing its ``task`` is still read as one, so its error names the field.
    """
    return "input" not in row and not CASE_ONLY_KEYS.isdisjoint(row)


def example_of_case(case: Case) -> Example:
    """The example a jury case is read as (see the module docstring).

    Raises:
        ValueError: The case's metadata already uses the reserved ``jury_case`` key.
    """
    if CASE_METADATA_KEY in case.metadata:
        raise ValueError(
            f"field 'metadata.{CASE_METADATA_KEY}': reserved for the case's defect labels "
            "when a case file is read as a dataset; rename it"
        )
    labels = {
        "defective": case.defective,
        "defects": [defect.model_dump(mode="json") for defect in case.defects],
    }
    return Example(
        id=case.id,
        input={"task": case.task, "context": case.context},
        output=case.output,
        expected=case.expected,
        metadata={**case.metadata, CASE_METADATA_KEY: labels},
    )
