"""Scorers by name: an explicit registry, built-ins and plugins alike, and the option syntax.

``ScorerRegistry.default()`` knows the built-in scorers of this package; the service
layer adds the ones engines provide (the jury) and :meth:`ScorerRegistry.load_plugins`
adds every factory published in the entry-point group ``arbiter.scorers``. Nothing is
registered at import time.

A scorer's name is the name it is registered under: for a plugin, its entry point's
name, whatever name its ``@scorer`` gives. The spec a run stores, the scores and
``arbiter scorers`` all carry that name, so a run that names the entry point can be
rebuilt by it (``--resume``, ``replay``). A plugin never replaces a scorer registered
before it (a built-in, the jury, an earlier plugin): it is ignored with one warning per
process, naming its distribution.

On a command line a scorer is written ``NAME[:ARG=VALUE,...]``: ``casefold``,
``numeric:abs_tol=0.01,path=result.total``, ``contains:text=Paris,as=has_paris``. Values
are read as JSON when they look like JSON lists, objects or quoted strings, and are
otherwise strings the factory's type hints convert (``0.01`` to a float, ``true`` to a
bool). ``as`` names the scorer in the run, so one scorer can be used twice.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from functools import cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar

from arbiter.contract import ScorerSpec
from arbiter.errors import InputError
from arbiter.plugins import Registry
from arbiter.scoring.base import BuiltScorer, ScorerFactory, ScoringContext

__all__ = [
    "BUILTIN_SCORERS",
    "ENTRY_POINT_GROUP",
    "ScorerRegistry",
    "parse_scorer_option",
]

ENTRY_POINT_GROUP = "arbiter.scorers"
"""Entry-point group of third-party scorers: ``name = "package.module:factory"``."""

BUILTIN_SCORERS: dict[str, str] = {
    "label": "arbiter.scoring.labels:label",
    "exact": "arbiter.scoring.text:exact",
    "casefold": "arbiter.scoring.text:casefold",
    "normalized": "arbiter.scoring.text:normalized",
    "contains": "arbiter.scoring.text:contains",
    "any_of": "arbiter.scoring.text:any_of",
    "all_of": "arbiter.scoring.text:all_of",
    "length": "arbiter.scoring.text:length",
    "regex": "arbiter.scoring.patterns:regex",
    "numeric": "arbiter.scoring.numeric:numeric",
    "json": "arbiter.scoring.structured:json_output",
    "f1_tokens": "arbiter.scoring.overlap:f1_tokens",
    "rubric": "arbiter.scoring.rubric:rubric",
}
"""Built-in scorers of this package, by name: ``module:factory``, imported on first use."""

_log = logging.getLogger(__name__)

_ARGUMENT_START = re.compile(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class _Pending:
    """A scorer factory not imported yet: a built-in's module, or a plugin's entry point."""

    def __init__(
        self,
        name: str,
        where: str,
        load: Callable[[], object],
        distribution: str | None = None,
    ) -> None:
        self.name = name
        self.where = where
        self.distribution = distribution  # a plugin's; None for a scorer of Arbiter's own
        self._load = load

    def __call__(self, *, context: ScoringContext | None = None, **arguments: Any) -> BuiltScorer:
        return self.load()(context=context, **arguments)

    def load(self) -> ScorerFactory:
        try:
            factory = self._load()
        except Exception as exc:  # a broken plugin is the user's input, not our crash
            raise InputError(
                f"scorer {self.name!r} ({self.where}) cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(factory, ScorerFactory):
            raise InputError(
                f"scorer {self.name!r} ({self.where}) is not a factory made with @scorer"
            )
        return factory if factory.name == self.name else _renamed(factory, self.name)


def _renamed(factory: ScorerFactory, name: str) -> ScorerFactory:
    """The same factory registered as ``name``: its specs and scores carry that name."""
    return ScorerFactory(
        factory.factory,
        name=name,
        kind=factory.kind,
        version=factory.version,
        description=factory.description,
        reference=factory.reference,
        dimension=factory.dimension,
        applies_to=factory.applies_to,
        moment=factory.moment,
        gating=factory.gating,
        needs_trajectory=factory.needs_trajectory,
    )


def _distribution(point: EntryPoint) -> str:
    """The name of the distribution publishing ``point`` (as ``pip`` lists it)."""
    name = point.dist.name if point.dist is not None else None
    return str(name) if name else "an unnamed distribution"


@cache  # a command builds several registries: the user is told once
def _warn_ignored(name: str, distribution: str, owner: str | None) -> None:
    """Say that ``distribution``'s scorer ``name`` is ignored, and which one is used."""
    used = "the built-in scorer" if owner is None else f"the scorer of {owner!r}"
    _log.warning(
        "scorer plugin %r of %r is ignored: %s of that name is used (rename the plugin's "
        "entry point to use it)",
        name,
        distribution,
        used,
    )


def _import(target: str) -> Callable[[], object]:
    module, _, attribute = target.partition(":")
    return lambda: getattr(import_module(module), attribute)


class ScorerRegistry(Registry[ScorerFactory | _Pending]):
    """Scorer factories by name; an object made where it is needed and passed in."""

    what: ClassVar[str] = "scorer"
    group: ClassVar[str] = ENTRY_POINT_GROUP
    listed_by: ClassVar[str | None] = "arbiter scorers"

    @classmethod
    def default(cls, *, plugins: bool = True) -> ScorerRegistry:
        """The built-in scorers, and (``plugins=True``) every installed plugin's."""
        registry = cls()
        for name, target in BUILTIN_SCORERS.items():
            registry.add(name, _Pending(name, target, _import(target)))
        if plugins:
            registry.load_plugins()
        return registry

    def load_plugins(self) -> None:
        """Add every factory of the entry-point group, under its entry point's name.

        A plugin never replaces a scorer registered before it (a built-in, an engine's,
        an earlier plugin's): it is ignored, with one warning per process naming its
        distribution and the name.
        """
        for point in entry_points(group=self.group):
            distribution = _distribution(point)
            if point.name not in self:
                pending = _Pending(point.name, point.value, point.load, distribution)
                self.add(point.name, pending)
                continue
            taken = self.factory(point.name)
            owner = taken.distribution if isinstance(taken, _Pending) else None
            _warn_ignored(point.name, distribution, owner)

    def register_scorer(self, factory: ScorerFactory, *, replace: bool = False) -> None:
        """Add a factory made with ``@scorer`` under its own name.

        Raises:
            TypeError: ``factory`` was not made with ``@scorer``.
            ValueError: The name is taken (pass ``replace=True`` to override).
        """
        if not isinstance(factory, ScorerFactory):
            raise TypeError(f"{factory!r} is not a scorer factory: decorate it with @scorer")
        self.add(factory.name, factory, replace=replace)

    def factory_of(self, name: str) -> ScorerFactory:
        """The factory registered as ``name``, imported if it was not yet.

        Raises:
            InputError: No scorer has that name (the message lists the known ones), or a
                plugin's module cannot be imported.
        """
        found = self.factory(name)
        if isinstance(found, _Pending):
            loaded = found.load()
            self.add(name, loaded, replace=True)
            return loaded
        return found

    def build(self, spec: ScorerSpec, *, context: ScoringContext | None = None) -> BuiltScorer:
        """The scorer a spec describes, with its arguments checked.

        Args:
            spec: What to build.
            context: Providers, settings and cache for model scorers.

        Raises:
            InputError: Unknown scorer, bad arguments, or a stored spec of another version
                than the installed scorer (its results would not be comparable).
        """
        built = self.factory_of(spec.name)(context=context, **spec.args)
        if built.spec.version != spec.version:
            raise InputError(
                f"scorer {spec.name!r} is version {built.spec.version} here, but the run used "
                f"version {spec.version}: its scores would not be comparable"
            )
        return built.with_alias(spec.alias).gating(spec.gating)

    def build_all(
        self, specs: Iterable[ScorerSpec], *, context: ScoringContext | None = None
    ) -> list[BuiltScorer]:
        """Scorers for several specs; their names in the run must be distinct.

        Raises:
            InputError: As :meth:`build`, or two scorers would carry one name.
        """
        built = [self.build(spec, context=context) for spec in specs]
        seen: set[str] = set()
        for scorer in built:
            if scorer.name in seen:
                raise InputError(
                    f"two scorers are named {scorer.name!r} in this run; tell them apart "
                    f"with as=NAME (e.g. {scorer.spec.name}:...,as=other)"
                )
            seen.add(scorer.name)
        return built

    def spec_of(self, option: str) -> ScorerSpec:
        """Parse ``NAME[:ARG=VALUE,...]`` and build the scorer once, to check it.

        Raises:
            InputError: The option is malformed, names no scorer, or has bad arguments.
        """
        name, arguments, alias = parse_scorer_option(option)
        built = self.factory_of(name)(**arguments)
        return built.with_alias(alias).spec


def parse_scorer_option(option: str) -> tuple[str, dict[str, Any], str | None]:
    """Split ``NAME[:ARG=VALUE,...]`` into the name, the arguments and the ``as`` alias.

    Raises:
        InputError: No name, an argument without ``=``, or one given twice.
    """
    name, _, rest = option.strip().partition(":")
    name = name.strip()
    if not _NAME.match(name):
        raise InputError(
            f"--scorer {option!r}: expected NAME[:ARG=VALUE,...], e.g. casefold or "
            "numeric:abs_tol=0.01"
        )
    arguments: dict[str, Any] = {}
    if rest.strip():
        for part in _ARGUMENT_START.split(rest):
            key, equals, value = part.partition("=")
            key = key.strip()
            if not equals or not key.isidentifier():
                raise InputError(f"--scorer {option!r}: {part.strip()!r} is not ARG=VALUE")
            if key in arguments:
                raise InputError(f"--scorer {option!r}: argument {key!r} is given twice")
            arguments[key] = _value(value.strip(), option, key)
    alias = arguments.pop("as", None)
    if alias is not None and (not isinstance(alias, str) or not _NAME.match(alias)):
        raise InputError(f"--scorer {option!r}: as={alias!r} is not a name")
    return name, arguments, alias


def _value(text: str, option: str, key: str) -> Any:
    if text[:1] in ("[", "{", '"'):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"--scorer {option!r}: the value of {key!r} starts like JSON but is not: {exc.msg}"
            ) from None
    return text
