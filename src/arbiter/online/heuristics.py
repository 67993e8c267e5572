"""Layer 1 of online scoring: free, deterministic rules over one prediction.

The rules are data (``arbiter.online.rules``); this module compiles them once into
plain closures with their field paths resolved, so checking an item costs a few
dictionary look-ups per rule. ``check_heuristics`` is pure and never raises for a
malformed prediction: a field that is absent or of the wrong type is what the rules
report, not an error. ``HeuristicsLayer`` runs them in the pipeline, on every item.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from arbiter.contract import HeuristicFinding, HeuristicResult
from arbiter.online.layer import LayerContext
from arbiter.online.reading import Item
from arbiter.online.rules import (
    MISSING,
    ConfidenceBelow,
    HeuristicRules,
    Implies,
    LabelIn,
    RequiredField,
    Rule,
    compile_path,
)

__all__ = ["CompiledRules", "HeuristicsLayer", "check_heuristics", "compile_rules"]

Check = Callable[[Any], HeuristicFinding | None]
"""A compiled rule: the finding when it fires on a prediction dict, else None."""

_SHOWN_CHARS = 80


class CompiledRules:
    """Rules compiled into closures, ready for the hot path.

    Args:
        rules: The rules, in the order findings are reported.
    """

    __slots__ = ("_checks", "names")

    def __init__(self, rules: Iterable[Rule]) -> None:
        rule_list = list(rules)
        self.names: tuple[str, ...] = tuple(rule.rule_name() for rule in rule_list)
        """Name of each rule, in order."""
        self._checks: tuple[Check, ...] = tuple(_compile(rule) for rule in rule_list)

    def __len__(self) -> int:
        return len(self._checks)

    def check(self, prediction: Mapping[str, Any]) -> HeuristicResult:
        """Run every rule; see :func:`check_heuristics`."""
        findings = [f for f in (check(prediction) for check in self._checks) if f is not None]
        return HeuristicResult(flagged=bool(findings), findings=findings)


def compile_rules(rules: HeuristicRules | Iterable[Rule]) -> CompiledRules:
    """Compile a rule set (or a list of rules) for :func:`check_heuristics`."""
    return CompiledRules(rules.rules if isinstance(rules, HeuristicRules) else rules)


def check_heuristics(
    prediction: Mapping[str, Any], rules: CompiledRules | HeuristicRules
) -> HeuristicResult:
    """Check one prediction against the rules.

    Args:
        prediction: The prediction as a plain dict (``id``, ``label``, ``confidence``,
            ``raw_output``, ``metadata``); fields may be missing or of any type.
        rules: Compiled rules (fastest: compile once with :func:`compile_rules`) or a
            rule set, compiled on each call.

    Returns:
        ``flagged`` and the findings of the rules that fired, in rule order.

    Examples:
        >>> from arbiter.online.rules import default_rules
        >>> rules = compile_rules(default_rules())
        >>> result = check_heuristics(
        ...     {"label": "nominal", "confidence": 0.9,
        ...      "raw_output": {"status": "nominal", "anomaly_score": 0.93}}, rules)
        >>> [f.rule for f in result.findings]
        ['silent_contradiction']
    """
    compiled = rules if isinstance(rules, CompiledRules) else compile_rules(rules)
    return compiled.check(prediction)


class HeuristicsLayer:
    """The rules as a free layer: checked on every item; a finding escalates it.

    Args:
        rules: The rules, compiled or as a set (compiled once here).
    """

    name = "heuristics"
    expensive = False
    budget_floor = None

    def __init__(self, rules: CompiledRules | HeuristicRules) -> None:
        self.rules = rules if isinstance(rules, CompiledRules) else compile_rules(rules)

    async def run(self, item: Item, context: LayerContext) -> HeuristicResult:
        """The findings; flags the item with the names of the rules that fired."""
        result = self.rules.check(item.doc)
        if result.flagged:
            context.flag(", ".join(finding.rule for finding in result.findings))
        return result


def _compile(rule: Rule) -> Check:
    if isinstance(rule, ConfidenceBelow):
        return _confidence_below(rule)
    if isinstance(rule, Implies):
        return _implies(rule)
    if isinstance(rule, RequiredField):
        return _required_field(rule)
    return _label_in(rule)


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else repr(value[: _SHOWN_CHARS + 1])
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _confidence_below(rule: ConfidenceBelow) -> Check:
    name, threshold, flag_missing = rule.rule_name(), rule.threshold, rule.flag_missing

    def check(prediction: Any) -> HeuristicFinding | None:
        value = prediction.get("confidence", MISSING) if _is_mapping(prediction) else None
        if value is MISSING or value is None:
            if flag_missing:
                return HeuristicFinding(rule=name, message="the prediction gives no confidence")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            return HeuristicFinding(
                rule=name, message=f"confidence {_shown(value)} is not a number"
            )
        if not 0.0 <= value <= 1.0:
            return HeuristicFinding(rule=name, message=f"confidence {value:g} is outside [0, 1]")
        if value < threshold:
            return HeuristicFinding(
                rule=name, message=f"confidence {value:g} is below {threshold:g}"
            )
        return None

    return check


def _implies(rule: Implies) -> Check:
    name = rule.rule_name()
    premise, conclusion = rule.when.compile(), rule.then.compile()
    get_then = compile_path(rule.then.field)
    then_field, fixed = rule.then.field, rule.message
    requirement = f"{rule.when.describe()} requires {rule.then.describe()}"

    def check(prediction: Any) -> HeuristicFinding | None:
        if not premise(prediction) or conclusion(prediction):
            return None
        found = get_then(prediction)
        got = "absent" if found is MISSING else _shown(found)
        return HeuristicFinding(
            rule=name, message=f"{fixed or requirement}; got {then_field} = {got}"
        )

    return check


def _required_field(rule: RequiredField) -> Check:
    name, field = rule.rule_name(), rule.field
    get = compile_path(field)

    def check(prediction: Any) -> HeuristicFinding | None:
        value = get(prediction)
        if value is MISSING:
            problem = "is missing"
        elif value is None:
            problem = "is null"
        elif isinstance(value, str) and not value.strip():
            problem = "is blank"
        else:
            return None
        return HeuristicFinding(rule=name, message=f"required field {field!r} {problem}")

    return check


def _label_in(rule: LabelIn) -> Check:
    name = rule.rule_name()
    vocabulary = frozenset(rule.labels)
    allowed = ", ".join(rule.labels)

    def check(prediction: Any) -> HeuristicFinding | None:
        label = prediction.get("label", MISSING) if _is_mapping(prediction) else MISSING
        if isinstance(label, str) and label in vocabulary:
            return None
        shown = "missing" if label is MISSING else _shown(label)
        return HeuristicFinding(rule=name, message=f"label {shown} is not one of {allowed}")

    return check
