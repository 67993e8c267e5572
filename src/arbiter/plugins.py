"""The one registry mechanism: factories by name, explicit objects, plugins by entry point.

Providers, embedders and vector stores each have a registry (a subclass of
:class:`Registry`): an object made where it is needed and passed to what builds things,
never a process-wide table filled at import. Built-ins are added by the subclass's
``default()``; third parties publish a factory in the subclass's entry-point group and
it is imported only when first used.

A :class:`Catalog` holds descriptions instead of factories: one object per name (a
system kind, a trajectory format) of the class it ``holds``, a built-in's found at its
``module:attribute``, a plugin's at its entry point, each imported when first asked for
and checked to be of that class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from arbiter.errors import InputError

__all__ = ["Catalog", "Registry", "unknown_name"]

LISTED_NAMES = 12
"""Known names an unknown-name message lists in full; beyond it, the closest ones only."""


def unknown_name(
    what: str, name: object, known: tuple[str, ...], listed_by: str | None = None
) -> str:
    """``unknown scorer 'contians'; did you mean 'contains'?`` and where the rest are.

    The closest known names (difflib) are suggested; a short list of names is given
    whole, a long one by the command that lists it (``listed_by``), else its start.
    """
    import difflib

    close: list[str] = []
    if isinstance(name, str) and name.strip():
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        if len(name) >= 2:  # a prefix or a part of a name is a good guess too
            close += [n for n in known if n.startswith(name) and n not in close]
            close += [n for n in known if name in n and n not in close]
        close = close[:3]
    message = f"unknown {what} {name!r}"
    if close:
        message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    if len(known) <= LISTED_NAMES:
        return message + f"{' ' if close else '; '}known: {', '.join(repr(n) for n in known)}"
    if listed_by:
        return message + f" ({listed_by} lists every {what})"
    shown = ", ".join(repr(n) for n in known[:LISTED_NAMES])
    return message + f"; known: {shown} and {len(known) - LISTED_NAMES} more"


F = TypeVar("F", bound=Callable[..., Any])
D = TypeVar("D")


class Registry(Generic[F]):
    """Factories of one kind of thing, by name."""

    what: ClassVar[str] = "plugin"
    """What the registry holds, for messages ("provider", "vector store")."""
    group: ClassVar[str] = ""
    """Entry-point group third parties publish their factories in."""
    listed_by: ClassVar[str | None] = None
    """The command that lists every name, pointed to when a name is unknown."""

    def __init__(self) -> None:
        self._factories: dict[str, F] = {}

    def add(self, name: str, factory: F, *, replace: bool = False) -> None:
        """Make ``name`` buildable by ``factory``.

        Raises:
            ValueError: ``name`` is empty, or taken (pass ``replace=True`` to override).
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a {self.what} needs a non-empty name")
        if name in self._factories and not replace:
            raise ValueError(f"a {self.what} named {name!r} is registered already")
        self._factories[name] = factory

    def names(self) -> tuple[str, ...]:
        """Every registered name, sorted."""
        return tuple(sorted(self._factories))

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def factory(self, name: object) -> F:
        """The factory registered as ``name``.

        Raises:
            InputError: No factory has that name; the message lists the known ones.
        """
        found = self._factories.get(name) if isinstance(name, str) else None
        if found is None:
            raise InputError(unknown_name(self.what, name, self.names(), self.listed_by))
        return found

    def load_plugins(self) -> None:
        """Add every factory of the entry-point group; a plugin never replaces a built-in."""
        if not self.group:
            return
        for point in entry_points(group=self.group):
            if point.name not in self._factories:
                self._factories[point.name] = self._lazy(point)

    def _lazy(self, point: EntryPoint) -> F:
        """A factory that imports the plugin's module only when first called."""

        def load(*args: Any, **kwargs: Any) -> Any:
            try:
                factory = point.load()
            except Exception as exc:  # a broken plugin is the user's input, not our crash
                raise InputError(
                    f"{self.what} plugin {point.name!r} ({point.value}) cannot be loaded: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            return factory(*args, **kwargs)

        return cast(F, load)


class _Pending(Generic[D]):
    """An entry not imported yet: a built-in's ``module:attribute``, or an entry point."""

    def __init__(
        self, catalog: type[Catalog[D]], name: str, where: str, load: Callable[[], object]
    ) -> None:
        self.catalog, self.name, self.where, self._load = catalog, name, where, load

    def __call__(self) -> D:
        what, holds = self.catalog.what, self.catalog.holds
        try:
            found = self._load()
            if not isinstance(found, holds) and callable(found):
                found = found()  # a plugin may publish a factory of its entry
        except InputError:
            raise
        except Exception as exc:  # a broken plugin is the user's input, not our crash
            raise InputError(
                f"{what} {self.name!r} ({self.where}) cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(found, holds):
            raise InputError(f"{what} {self.name!r} ({self.where}) is not a {holds.__name__}")
        # Registered under its entry point's name, which runs store and users type.
        if getattr(found, "name", self.name) != self.name and dataclasses.is_dataclass(found):
            found = dataclasses.replace(found, name=self.name)  # type: ignore[type-var]
        return cast(D, found)


def _attribute(target: str) -> Callable[[], object]:
    module, _, attribute = target.partition(":")
    return lambda: getattr(import_module(module), attribute)


class Catalog(Registry[Callable[[], D]]):
    """Named entries of one class (``holds``), built-ins and plugins, each loaded once."""

    holds: ClassVar[type]
    """The class every entry is (a frozen dataclass with a ``name``)."""
    builtins: ClassVar[Mapping[str, str]] = {}
    """Built-in entries, by name: ``module:attribute``, imported on first use."""

    def __init__(self) -> None:
        super().__init__()
        self._loaded: dict[str, D] = {}

    @classmethod
    def default(cls, *, plugins: bool = True) -> Self:
        """The built-ins, and (``plugins=True``) every entry of the entry-point group."""
        catalog = cls()
        for name, target in cls.builtins.items():
            catalog.add(name, _Pending(cls, name, target, _attribute(target)))
        if plugins:
            catalog.load_plugins()
        return catalog

    def load_plugins(self) -> None:
        """Add every entry of the entry-point group; a plugin never replaces an entry."""
        for point in entry_points(group=self.group):
            if point.name not in self:
                self.add(point.name, _Pending(type(self), point.name, point.value, point.load))

    def register(self, entry: D, *, replace: bool = False) -> None:
        """Add an entry under its own ``name``.

        Raises:
            ValueError: The name is taken (pass ``replace=True`` to override).
        """
        name = str(getattr(entry, "name", ""))
        self.add(name, lambda: entry, replace=replace)
        self._loaded.pop(name, None)

    def get(self, name: object) -> D:
        """The entry registered as ``name``, imported if it was not yet.

        Raises:
            InputError: No entry has that name (the message lists the known ones), or a
                plugin's entry cannot be loaded or is not of the class held.
        """
        if isinstance(name, str) and name in self._loaded:
            return self._loaded[name]
        found = self.factory(name)()
        self._loaded[str(name)] = found
        return found
