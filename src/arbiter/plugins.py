"""The one registry mechanism: factories by name, explicit objects, plugins by entry point.

Providers, embedders and vector stores each have a registry (a subclass of
:class:`Registry`): an object made where it is needed and passed to what builds things,
never a process-wide table filled at import. Built-ins are added by the subclass's
``default()``; third parties publish a factory in the subclass's entry-point group and
it is imported only when first used.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Generic, TypeVar, cast

from arbiter.errors import InputError

__all__ = ["Registry"]

F = TypeVar("F", bound=Callable[..., Any])


class Registry(Generic[F]):
    """Factories of one kind of thing, by name."""

    what: ClassVar[str] = "plugin"
    """What the registry holds, for messages ("provider", "vector store")."""
    group: ClassVar[str] = ""
    """Entry-point group third parties publish their factories in."""

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
            known = ", ".join(repr(n) for n in self.names())
            raise InputError(f"unknown {self.what} {name!r}; known: {known}")
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
