"""Parameter checks, declared once, so every message reads the same way.

As in scikit-learn: "The 'k' parameter of run_eval must be a positive int. Got 0 instead."
A constraint is declared next to the parameter (:func:`validate_params` on a function,
or one of the ``check_*`` helpers in a constructor) and this module writes the message.
A failed check raises :class:`~arbiter.errors.InvalidParameter`, an ``InputError`` (exit
code 3 at the command line) that is also a ``ValueError``.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from arbiter.errors import InvalidParameter

__all__ = [
    "Constraint",
    "NumberRange",
    "OneOf",
    "check",
    "check_choice",
    "check_number",
    "invalid",
    "validate_params",
]

F = TypeVar("F", bound=Callable[..., Any])


class Constraint(Protocol):
    """A rule a parameter's value must follow, and how to say it."""

    @property
    def description(self) -> str:
        """The rule, completing "must be ...", e.g. "a positive int"."""
        ...

    def holds(self, value: object) -> bool:
        """Whether ``value`` follows the rule."""
        ...


@dataclass(frozen=True)
class NumberRange:
    """A real number (an int with ``integer=True``) within bounds; bools never count.

    A constraint on a parameter, not a figure: a measured estimate with its 95% interval
    is :class:`arbiter.contract.Interval`.

    Args:
        minimum: Lower bound, or None.
        maximum: Upper bound, or None.
        integer: Only ints (numpy ints included).
        open_min: The lower bound itself is excluded.
        open_max: The upper bound itself is excluded.
        optional: None is accepted too.
    """

    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    open_min: bool = False
    open_max: bool = False
    optional: bool = False

    @property
    def description(self) -> str:
        """E.g. "a positive int", "a number in [0, 1]", "a number > 0"."""
        kind = "int" if self.integer else "number"
        low, high = self.minimum, self.maximum
        if high is None and self.integer and (low == 1 or (low == 0 and self.open_min)):
            text = "a positive int"
        elif high is None and self.integer and low == 0:
            text = "a non-negative int"
        elif high is None and low == 0 and self.open_min:
            text = "a positive number"
        elif low is not None and high is not None and self.open_min and self.open_max:
            text = (
                f"a {'int' if self.integer else 'float'} in the open interval ({low:g}, {high:g})"
            )
        elif low is not None and high is not None:
            left, right = "(" if self.open_min else "[", ")" if self.open_max else "]"
            text = f"a {kind} in {left}{low:g}, {high:g}{right}"
        elif low is not None:
            text = f"a {kind} {'>' if self.open_min else '>='} {low:g}"
        elif high is not None:
            text = f"a {kind} {'<' if self.open_max else '<='} {high:g}"
        else:
            text = f"a {kind}"
        text = text.replace("a int", "an int")
        return f"{text} or None" if self.optional else text

    def holds(self, value: object) -> bool:
        """Whether ``value`` is a finite number (or an int) within the bounds."""
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.integer and not isinstance(value, numbers.Integral):
            return False
        number = float(value)
        if not math.isfinite(number):
            return False
        if self.minimum is not None and (
            number < self.minimum or (self.open_min and number == self.minimum)
        ):
            return False
        return not (
            self.maximum is not None
            and (number > self.maximum or (self.open_max and number == self.maximum))
        )


@dataclass(frozen=True)
class OneOf:
    """One of a fixed set of values."""

    choices: tuple[object, ...]

    @property
    def description(self) -> str:
        """E.g. "one of 'reject', 'drop_oldest'"."""
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def holds(self, value: object) -> bool:
        """Whether ``value`` is one of the choices."""
        return any(value == choice and type(value) is type(choice) for choice in self.choices)


def invalid(
    name: str, owner: str, rule: str, value: object, *, shown: str | None = None
) -> InvalidParameter:
    """The error for a parameter that breaks its rule, in the one wording used everywhere.

    Args:
        name: The parameter.
        owner: The function or class it belongs to.
        rule: What it must be, completing "must be ...".
        value: What it was.
        shown: How to show the value when its repr would not help (an array's dtype).

    Examples:
        >>> str(invalid("k", "run_eval", "a positive int", 0))
        "The 'k' parameter of run_eval must be a positive int. Got 0 instead."
    """
    if shown is None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
    return InvalidParameter(
        f"The {name!r} parameter of {owner} must be {rule}. Got {shown} instead."
    )


def check(value: object, name: str, owner: str, constraint: Constraint) -> Any:
    """``value`` when it follows ``constraint``; else an ``InvalidParameter`` naming it.

    Raises:
        InvalidParameter: The value breaks the constraint.
    """
    if not constraint.holds(value):
        raise invalid(name, owner, constraint.description, value)
    return value


def check_number(
    value: object,
    name: str,
    owner: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    integer: bool = False,
    open_min: bool = False,
    open_max: bool = False,
    optional: bool = False,
) -> Any:
    """Check a number against bounds (see :class:`NumberRange`); returns it unchanged.

    Raises:
        InvalidParameter: Not a number, not finite, or out of bounds.
    """
    rule = NumberRange(minimum, maximum, integer, open_min, open_max, optional)
    return check(value, name, owner, rule)


def check_choice(value: object, name: str, owner: str, choices: Collection[object]) -> Any:
    """Check that ``value`` is one of ``choices``; returns it unchanged.

    Raises:
        InvalidParameter: It is not.
    """
    return check(value, name, owner, OneOf(tuple(choices)))


def validate_params(
    constraints: Mapping[str, Constraint], *, owner: str | None = None
) -> Callable[[F], F]:
    """Decorate a function so its named parameters are checked on every call.

    Works on sync and async functions. The owner named in messages is ``owner`` or the
    function's name (an async core names its sync wrapper, the function people call).
    Parameters left at their default are checked too (a wrong default is a bug).

    Examples:
        >>> @validate_params({"k": NumberRange(1, integer=True)})
        ... def repeat(k: int = 1) -> int:
        ...     return k
        >>> try:
        ...     repeat(0)
        ... except ValueError as error:
        ...     print(error)
        The 'k' parameter of repeat must be a positive int. Got 0 instead.
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{function.__name__} has no parameter(s) {sorted(unknown)}")
        named = owner or function.__name__

        def checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, constraint in constraints.items():
                check(bound.arguments[name], name, named, constraint)

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                checked(args, kwargs)
                return await function(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            checked(args, kwargs)
            return function(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
