"""Heuristic rules as data: the models a rule file is validated into.

A rule file is JSON: either a list of rules or ``{"version": ..., "rules": [...]}``.
Each rule has a ``kind``:

- ``confidence_below``: the confidence is under ``threshold`` (or is not a number in
  [0, 1]);
- ``implies``: when the ``when`` condition holds, the ``then`` condition must hold too
  (``anomaly_score >= 0.8`` requires ``label == "critical"``: the silent contradiction);
- ``required_field``: a dotted path must be present, not null and not blank;
- ``label_in``: the label must be one of ``labels``.

Fields are dotted paths from the prediction's root: ``label``, ``confidence``,
``raw_output.anomaly_score``, ``metadata.source``; an integer segment indexes a list.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arbiter.datasets.jsonio import read_json_file
from arbiter.validation import validate_document

__all__ = [
    "ComparisonOp",
    "Condition",
    "ConfidenceBelow",
    "HeuristicRules",
    "Implies",
    "LabelIn",
    "RequiredField",
    "Rule",
    "compile_path",
    "default_rules",
    "load_rules",
    "parse_rules",
]

ComparisonOp = Literal["==", "!=", ">", ">=", "<", "<=", "in", "not_in", "exists", "missing"]
"""Operators of a condition; ``exists``/``missing`` ignore ``value``."""

MISSING: Any = object()
"""What a compiled path returns for a field that is absent."""

_ORDERED: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def compile_path(path: str) -> Callable[[Any], Any]:
    """A fast getter for a dotted path; it returns ``MISSING`` when a segment is absent.

    Args:
        path: Keys separated by dots, e.g. ``raw_output.anomaly_score``.

    Returns:
        A function of the prediction dict.
    """
    segments = tuple(path.split("."))
    if len(segments) == 1:
        key = segments[0]

        def get_one(document: Any) -> Any:
            # type() first: an ABC isinstance check costs several times a dict look-up.
            if type(document) is dict or isinstance(document, Mapping):
                return document.get(key, MISSING)
            return MISSING

        return get_one

    def get(document: Any) -> Any:
        current = document
        for segment in segments:
            if type(current) is dict or isinstance(current, Mapping):
                current = current.get(segment, MISSING)
            elif isinstance(current, list) and segment.lstrip("-").isdigit():
                index = int(segment)
                current = current[index] if -len(current) <= index < len(current) else MISSING
            else:
                return MISSING
            if current is MISSING:
                return MISSING
        return current

    return get


def _check_path(path: str) -> str:
    if not path or any(not segment.strip() for segment in path.split(".")):
        raise ValueError(f"must be a dotted path such as 'raw_output.status', got {path!r}")
    return path


class Condition(BaseModel):
    """A test of one field: ``{"field": "label", "op": "==", "value": "critical"}``."""

    model_config = ConfigDict(extra="forbid")

    field: str
    """Dotted path of the field, from the prediction's root."""
    op: ComparisonOp = "=="
    """The comparison."""
    value: Any = None
    """The operand (a list for ``in`` / ``not_in``)."""

    @field_validator("field")
    @classmethod
    def _dotted_path(cls, value: str) -> str:
        return _check_path(value)

    def describe(self) -> str:
        """The condition as one line: ``raw_output.anomaly_score >= 0.8``."""
        if self.op in ("exists", "missing"):
            return f"{self.field} {self.op}"
        return f"{self.field} {self.op} {json.dumps(self.value, default=str)}"

    def compile(self) -> Callable[[Any], bool]:
        """A predicate of the prediction dict; a type mismatch makes it False."""
        get = compile_path(self.field)
        op, value = self.op, self.value
        if op == "exists":
            return lambda doc: get(doc) is not MISSING
        if op == "missing":
            return lambda doc: get(doc) is MISSING
        if op in ("in", "not_in"):
            try:
                members: frozenset[Any] | tuple[Any, ...] = frozenset(value or ())
            except TypeError:
                members = tuple(value or ())
            inside = op == "in"

            def member(doc: Any) -> bool:
                found = get(doc)
                if found is MISSING:
                    return False
                try:
                    return (found in members) is inside
                except TypeError:
                    return not inside

            return member
        if op in ("==", "!="):
            equal = op == "=="

            def compare_eq(doc: Any) -> bool:
                found = get(doc)
                return found is not MISSING and (found == value) is equal

            return compare_eq
        compare = _ORDERED[op]

        def ordered(doc: Any) -> bool:
            found = get(doc)
            if found is MISSING or isinstance(found, bool):
                return False
            try:
                return bool(compare(found, value))
            except TypeError:
                return False

        return ordered


class _RuleBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    """Name reported when the rule fires; derived from the rule when not given."""

    def rule_name(self) -> str:
        """The name given, or one derived from the rule."""
        return self.name or self._default_name()

    def _default_name(self) -> str:
        return str(getattr(self, "kind", type(self).__name__))


class ConfidenceBelow(_RuleBase):
    """Fires when the confidence is under ``threshold``, outside [0, 1] or not a number."""

    kind: Literal["confidence_below"] = "confidence_below"
    """Discriminator."""
    threshold: float = Field(ge=0.0, le=1.0)
    """Confidences strictly below it fire."""
    flag_missing: bool = False
    """Also fire when the prediction gives no confidence (null or absent)."""

    def _default_name(self) -> str:
        return "confidence_below"


class Implies(_RuleBase):
    """Fires when ``when`` holds and ``then`` does not: a contradiction inside the answer."""

    kind: Literal["implies"] = "implies"
    """Discriminator."""
    when: Condition
    """The premise; the rule is silent when it does not hold (or its field is absent)."""
    then: Condition
    """What the premise requires."""
    message: str | None = None
    """What to report when it fires; derived from the conditions when not given."""

    def _default_name(self) -> str:
        return f"implies:{self.when.field}"


class RequiredField(_RuleBase):
    """Fires when a field is absent, null or a blank string."""

    kind: Literal["required_field"] = "required_field"
    """Discriminator."""
    field: str
    """Dotted path of the field."""

    @field_validator("field")
    @classmethod
    def _dotted_path(cls, value: str) -> str:
        return _check_path(value)

    def _default_name(self) -> str:
        return f"required_field:{self.field}"


class LabelIn(_RuleBase):
    """Fires when the label is not one of the declared vocabulary."""

    kind: Literal["label_in"] = "label_in"
    """Discriminator."""
    labels: list[str] = Field(min_length=1)
    """The vocabulary (compared exactly)."""

    def _default_name(self) -> str:
        return "label_in"


Rule = Annotated[ConfidenceBelow | Implies | RequiredField | LabelIn, Field(discriminator="kind")]
"""One heuristic rule, told apart by its ``kind``."""

RULE_KINDS = ("confidence_below", "implies", "required_field", "label_in")


class HeuristicRules(BaseModel):
    """The heuristic layer's rules, in order (a rule file); findings come out in this
    order. Not the safety detectors' compiled patterns (``safety.patterns.RuleSet``)."""

    model_config = ConfigDict(extra="forbid")

    version: str = "1"
    """Version string chosen by the rule set's author."""
    rules: list[Rule] = Field(default_factory=list)
    """The rules."""

    @cached_property
    def vocabulary(self) -> list[str] | None:
        """The labels of the first ``label_in`` rule, or None when there is none."""
        for rule in self.rules:
            if isinstance(rule, LabelIn):
                return list(rule.labels)
        return None


def parse_rules(document: Any, *, source: str = "rules") -> HeuristicRules:
    """Validate a parsed rule document (a list of rules or ``{"rules": [...]}``).

    Args:
        document: The parsed JSON.
        source: Name of where it came from, for the error message.

    Returns:
        The rule set.

    Raises:
        InputError: A rule is invalid; the message names the field, e.g.
            ``rules.json: rules[2].threshold: Input should be a valid number``.
    """
    if isinstance(document, list):
        document = {"rules": document}
    return validate_document(HeuristicRules, document, where=source)


def load_rules(path: str | Path) -> HeuristicRules:
    """Read and validate a JSON rule file.

    Raises:
        InputError: The file cannot be read, is not JSON, or a rule is invalid; the
            message names the file and the field (or line for bad JSON).
    """
    location = Path(path)
    return parse_rules(read_json_file(location, what="rules file"), source=str(location))


def default_rules() -> HeuristicRules:
    """The bundled Synapse-style rule set (``online/data/rules.json``)."""
    text = files("arbiter.online").joinpath("data", "rules.json").read_text(encoding="utf-8")
    return parse_rules(json.loads(text), source="arbiter/online/data/rules.json")
