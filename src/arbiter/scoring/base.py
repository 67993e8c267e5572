"""The scorer model: ``@scorer`` factories, built scorers, and what one call returns.

A scorer is made by a *factory*: a function taking keyword arguments (a rubric, a
tolerance, a label map) and returning the function that scores one output::

    @scorer(name="shorter_than", description="The text has at most `limit` characters.")
    def shorter_than(*, limit: int = 280) -> ScoreFunction:
        def score(example: Example, output: Output) -> Score:
            text = output.answer_text or ""
            return Score(value=len(text), passed=len(text) <= limit)
        return score

``shorter_than(limit=100)`` checks the arguments against the signature (``"100"`` from
a command line becomes ``100``) and returns a :class:`BuiltScorer` that carries a
:class:`~arbiter.contract.ScorerSpec` (name, arguments, version), so a stored run can
rebuild exactly the scorers it used. The inner function may be sync (deterministic
scorers: called inline) or async (model scorers). Whatever it raises becomes an errored
score for that example: a scorer never stops a run.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from arbiter.contract import Example, Output, Score, ScorerKind, ScorerSpec
from arbiter.errors import InputError
from arbiter.judging.context import JudgingContext
from arbiter.validation import describe_validation_error

__all__ = [
    "CONTEXT",
    "GATE",
    "BuiltScorer",
    "Reference",
    "ScoreFunction",
    "Scorer",
    "ScorerArgument",
    "ScorerFactory",
    "ScorerMoment",
    "ScoringContext",
    "has_reference",
    "repetition_passed",
    "scorer",
]

ScoreFunction = Callable[[Example, Output], Score | Awaitable[Score]]
"""What a factory returns: scores one output, sync or async."""

_MAX_EXPLANATION = 2_000
"""Characters kept of a scorer's explanation or error (it may quote untrusted text)."""


Reference = Literal["label", "expected"]
"""What of an example a scorer compares an output with (see :func:`scorer`)."""

ScorerMoment = Literal["plan", "retrieve", "act", "compose", "deliver", "run"]
"""When in an agent's run what a scorer measures happens: planning, retrieval, acting
(tool calls), composing the answer, delivering it, or the run as a whole."""


def has_reference(example: Example, reference: Reference) -> bool:
    """Whether ``example`` carries what a scorer with this ``reference`` needs."""
    if reference == "label":
        return example.reference_label is not None
    return example.expected is not None or example.expected_label is not None


CONTEXT = "context"
"""A reserved argument name: a factory that declares it is given the
:class:`ScoringContext` it is built in; it is never part of the spec."""

GATE = "gate"
"""A reserved argument name: a factory that declares ``gate: bool`` lets a run make its
scorers gate or not by argument (``--scorer NAME:gate=true``, ``args = {gate = true}``).
Its value is recorded once, as the spec's ``gating``, never in ``args``; its default is
the factory's default gating."""


ScoringContext = JudgingContext
"""What a factory may need beyond its arguments: how model scorers reach models (the
judging layer's shared context: providers, the model-call cache, budget and meter).
Deterministic scorers ignore it; a run closes the contexts of its scorers when it ends
(:meth:`BuiltScorer.aclose`)."""


class Scorer(Protocol):
    """Anything that scores one output of one example (a :class:`BuiltScorer`, a test double)."""

    @property
    def spec(self) -> ScorerSpec:
        """How to rebuild this scorer."""
        ...

    async def __call__(self, example: Example, output: Output) -> Score:
        """Score ``output``; never raises (a failure is an errored score)."""
        ...


@dataclass(frozen=True)
class ScorerArgument:
    """One argument of a scorer factory, as ``arbiter scorers`` lists it."""

    name: str
    """The keyword."""
    annotation: str
    """Its type, as written in the factory's signature."""
    default: Any
    """The default (``inspect.Parameter.empty`` when required)."""
    doc: str = ""
    """Its line from the factory's docstring ``Args:`` section."""

    @property
    def required(self) -> bool:
        """Whether the argument has no default."""
        return self.default is inspect.Parameter.empty


@dataclass
class BuiltScorer:
    """A scorer built from a factory with checked arguments; carries its spec."""

    spec: ScorerSpec
    """How to rebuild this scorer."""
    function: ScoreFunction = field(repr=False)
    """The inner function the factory returned."""
    is_async: bool = field(default=False, repr=False)
    """Whether ``function`` returns an awaitable (decided once, when built)."""
    context: ScoringContext | None = field(default=None, repr=False)
    """The context the factory was given (a model scorer's providers), if it took one."""

    @property
    def name(self) -> str:
        """The name its scores carry."""
        return self.spec.label

    async def __call__(self, example: Example, output: Output) -> Score:
        """Score one output; an exception or a wrong return becomes an errored score."""
        try:
            result = self.function(example, output)
            # A Score is never awaitable: only other results need the (costly) check.
            if self.is_async or (type(result) is not Score and inspect.isawaitable(result)):
                result = await cast(Awaitable[Score], result)
        except Exception as exc:  # a scorer's bug is recorded for this example, not raised
            return Score(name=self.name, error=_one_line(f"{type(exc).__name__}: {exc}"))
        if not isinstance(result, Score):
            kind = type(result).__name__
            return Score(
                name=self.name, error=f"TypeError: the scorer returned {kind}, not a Score"
            )
        result.name = self.name
        if len(result.explanation) > _MAX_EXPLANATION:
            result.explanation = result.explanation[:_MAX_EXPLANATION] + " [...]"
        return result

    def with_alias(self, alias: str | None) -> BuiltScorer:
        """The same scorer under another name in the run."""
        spec = self.spec.model_copy(update={"alias": alias})
        return BuiltScorer(spec, self.function, self.is_async, self.context)

    def gating(self, gating: bool) -> BuiltScorer:
        """The same scorer, taking part in pass / fail (or only reported)."""
        spec = self.spec.model_copy(update={"gating": gating})
        return BuiltScorer(spec, self.function, self.is_async, self.context)

    async def aclose(self) -> None:
        """Close what the scorer's context opened (providers, cache); a run calls it at
        its end. Safe to call more than once."""
        if self.context is not None:
            await self.context.aclose()


class ScorerFactory:
    """A factory decorated with :func:`scorer`: call it with arguments to build a scorer."""

    def __init__(
        self,
        factory: Callable[..., ScoreFunction],
        *,
        name: str,
        kind: ScorerKind,
        version: str,
        description: str,
        reference: Reference | None = None,
        dimension: str | None = None,
        applies_to: Collection[str] = (),
        moment: ScorerMoment | None = None,
        gating: bool = True,
        needs_trajectory: bool | None = None,
    ) -> None:
        _check_signature(factory, name)
        gate = inspect.signature(factory).parameters.get(GATE)
        if gate is not None and gate.default is not gating:
            raise TypeError(
                f"the factory of scorer {name!r}: {GATE!r} must default to the scorer's "
                f"gating ({gating}); it defaults to {gate.default!r}"
            )
        self.factory = factory
        self.name = name
        self.kind: ScorerKind = kind
        self.version = version
        self.description = description
        self.reference: Reference | None = reference
        self.dimension = dimension
        self.applies_to = frozenset(applies_to)
        self.moment: ScorerMoment | None = moment
        self.gating = gating
        # A deterministic scorer that names a moment of an agent's run is a trajectory
        # scorer: it has nothing to read in a bare label or text.
        self.needs_trajectory = (
            needs_trajectory
            if needs_trajectory is not None
            else moment is not None and kind == "deterministic"
        )
        """Whether it grades only what an agent's run holds (steps, tool calls,
        retrievals, a plan), so it abstains on every output that carries no trajectory
        or flow run (an offline run's labels and texts)."""
        self._arguments_model: type[BaseModel] | None = None
        self.__doc__ = factory.__doc__
        self.__wrapped__ = factory

    def __repr__(self) -> str:
        return f"<scorer {self.name!r} v{self.version} ({self.kind})>"

    def arguments(self) -> list[ScorerArgument]:
        """The factory's keyword arguments, with their types, defaults and docs."""
        docs = _argument_docs(self.factory.__doc__ or "")
        return [
            ScorerArgument(p.name, _annotation(p.annotation), p.default, docs.get(p.name, ""))
            for p in inspect.signature(self.factory).parameters.values()
            if p.name != CONTEXT
        ]

    def __call__(self, *, context: ScoringContext | None = None, **arguments: Any) -> BuiltScorer:
        """Build the scorer (``context`` reaches the factory only if it declares one).

        Raises:
            InputError: An argument is unknown, missing or of the wrong type.
        """
        parameters = inspect.signature(self.factory).parameters
        known = {name for name in parameters if name != CONTEXT}
        unknown = sorted(set(arguments) - known)
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise InputError(
                f"scorer {self.name!r} has no argument {unknown[0]!r}; its arguments: {listed}"
            )
        try:
            checked = self._check(arguments)
            given = dict(checked)
            gating = bool(checked.pop(GATE)) if GATE in parameters else self.gating
            if CONTEXT in parameters:
                context = given[CONTEXT] = context or ScoringContext()
            else:
                context = None
            function = self.factory(**given)
        except ValidationError as exc:
            reason = describe_validation_error(exc, None)
            if reason.startswith("field "):
                reason = "argument " + reason.removeprefix("field ")
            raise InputError(f"scorer {self.name!r}: {reason}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"scorer {self.name!r}: {exc}") from None
        if not callable(function):
            raise TypeError(f"the factory of scorer {self.name!r} returned no function")
        spec = ScorerSpec(
            name=self.name,
            args=_jsonable(checked, self.name),
            version=self.version,
            kind=self.kind,
            gating=gating,
        )
        return BuiltScorer(spec, function, inspect.iscoroutinefunction(function), context)

    def applies_to_class(self, agent_class: str | None) -> bool:
        """Whether this scorer measures runs of ``agent_class`` (None: an unclassed run).

        An empty ``applies_to`` means every class but ``flow``: flows get only the
        scorers that name ``flow``, since the others read a turn's shape. A run whose
        class nobody recorded (most imported traces) gets every scorer but the flow-only
        ones; each abstains where the run lacks what it reads.
        """
        if agent_class is None:
            return self.applies_to != {"flow"}
        if not self.applies_to:
            return agent_class != "flow"
        return agent_class in self.applies_to

    def _check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments converted to the factory's type hints, defaults filled in."""
        if self._arguments_model is None:
            try:
                hints = get_type_hints(self.factory)
            except Exception as exc:  # a plugin's annotation naming what it never imported
                raise InputError(
                    f"scorer {self.name!r}: the type hints of its factory "
                    f"{self.factory.__module__}.{self.factory.__qualname__} cannot be "
                    f"resolved ({type(exc).__name__}: {exc})"
                ) from None
            fields: dict[str, Any] = {}
            for parameter in inspect.signature(self.factory).parameters.values():
                if parameter.name == CONTEXT:
                    continue
                default = ... if parameter.default is inspect.Parameter.empty else parameter.default
                fields[parameter.name] = (hints.get(parameter.name, Any), default)
            self._arguments_model = create_model(
                f"{self.name}_arguments",
                __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
                **fields,
            )
        checked = self._arguments_model.model_validate(dict(arguments))
        return {name: getattr(checked, name) for name in type(checked).model_fields}


def scorer(
    *,
    name: str,
    kind: ScorerKind = "deterministic",
    version: str = "1",
    description: str | None = None,
    reference: Reference | None = None,
    dimension: str | None = None,
    applies_to: Collection[str] = (),
    moment: ScorerMoment | None = None,
    gating: bool = True,
    needs_trajectory: bool | None = None,
) -> Callable[[Callable[..., ScoreFunction]], ScorerFactory]:
    """Make a function a scorer factory, recording how its scorers are rebuilt.

    Args:
        name: The name the scorer is registered and reported under.
        kind: ``deterministic`` (code only) or ``model`` (asks an LLM).
        version: Bump it when what the scorer computes changes.
        description: One line for ``arbiter scorers``; defaults to the docstring's first.
        reference: What of the example the scorer compares with: ``label``
            (``expected_label``, else a string ``expected``), ``expected`` (``expected``,
            else ``expected_label``) or None (nothing). A run whose dataset has the
            reference on no example is refused before any call; examples without it
            make the scorer abstain.
        dimension: The one quality dimension it measures (``tool_use``, ``cost``, ...),
            for agent scorers.
        applies_to: The agent classes it measures; empty: every class but ``flow``.
        moment: When in an agent's run the thing it measures happens.
        gating: Whether its scorers take part in pass / fail by default (a run can
            still make any scorer gate or not). A factory that declares the reserved
            argument :data:`GATE` defaults it to this value.
        needs_trajectory: Whether it grades only what an agent's run holds, so that
            ``arbiter run`` (whose systems produce labels and texts) refuses it; None:
            a deterministic scorer with a ``moment`` does, any other does not.

    Returns:
        A decorator; the decorated factory takes keyword arguments only.

    Raises:
        TypeError: The factory takes positional-only or ``*args`` parameters.
    """

    def decorate(factory: Callable[..., ScoreFunction]) -> ScorerFactory:
        summary = description or (factory.__doc__ or "").strip().split("\n", 1)[0]
        return ScorerFactory(
            factory,
            name=name,
            kind=kind,
            version=version,
            description=summary,
            reference=reference,
            dimension=dimension,
            applies_to=applies_to,
            moment=moment,
            gating=gating,
            needs_trajectory=needs_trajectory,
        )

    return decorate


def _check_signature(factory: Callable[..., Any], name: str) -> None:
    for parameter in inspect.signature(factory).parameters.values():
        if parameter.name == CONTEXT and parameter.default is inspect.Parameter.empty:
            raise TypeError(f"the factory of scorer {name!r}: {CONTEXT!r} needs a default (None)")
        if parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise TypeError(
                f"the factory of scorer {name!r} must take named arguments only; "
                f"{parameter.name!r} is {parameter.kind.description}"
            )


def _jsonable(arguments: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The arguments as JSON, so the spec can be stored and the scorer rebuilt."""
    try:
        return cast(dict[str, Any], json.loads(json.dumps(dict(arguments), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"scorer {name!r}: its arguments must be plain JSON values: {exc}"
        ) from None


def _annotation(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return "any"
    return (
        annotation
        if isinstance(annotation, str)
        else getattr(annotation, "__name__", str(annotation))
    )


def _argument_docs(docstring: str) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring, one line per argument."""
    docs: dict[str, str] = {}
    lines = inspect.cleandoc(docstring).splitlines()
    inside, current = False, None
    for line in lines:
        stripped = line.strip()
        if stripped == "Args:":
            inside = True
            continue
        if not inside:
            continue
        if stripped and not line.startswith(" "):
            break  # the next section
        head, colon, rest = stripped.partition(":")
        if (
            colon
            and head.isidentifier()
            and line.startswith("    ")
            and not line.startswith(" " * 8)
        ):
            current = head
            docs[current] = rest.strip()
        elif current and stripped:
            docs[current] = f"{docs[current]} {stripped}"
    return docs


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_EXPLANATION else flat[:_MAX_EXPLANATION] + " [...]"


def repetition_passed(scores: Sequence[Score], gating: Collection[str]) -> bool | None:
    """One repetition's outcome from its scores: the rule pass^k and the gate are built on.

    False when a gating scorer failed; True when none failed and at least one passed;
    None (unknown, never a pass) when every gating scorer abstained or errored, or no
    scorer gates.

    Examples:
        >>> ok, unknown = Score(name="a", passed=True), Score(name="b")
        >>> bad = Score(name="c", passed=False)
        >>> repetition_passed([ok, unknown], {"a", "b"}), repetition_passed([ok, bad], {"a", "c"})
        (True, False)
    """
    outcome: bool | None = None
    for score in scores:
        if score.name not in gating or score.passed is None:
            continue
        if score.passed is False:
            return False
        outcome = True
    return outcome
