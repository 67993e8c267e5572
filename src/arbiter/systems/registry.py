"""System kinds by name: the one list the CLI, eval files, the factory and the service read.

A *kind* of system under test (``python``, ``http``, ``mcp``, ``precomputed``, or a
plugin's) is one :class:`SystemKind`: what ``--target`` names for it, which run options
it reads, how the stored description of a run's system is made from those options, and
how a system is rebuilt from that description (a start, a ``--resume``, the online
scorer). Adding a kind is one module holding its ``SystemKind`` plus its registration:
a built-in's line in :data:`BUILTIN_KINDS`, or, for a third party, an entry point in
the group ``arbiter.systems`` naming the ``SystemKind`` object::

    [project.entry-points."arbiter.systems"]
    echo = "my_package.echo:KIND"

The registry is an object made where it is needed (:meth:`SystemRegistry.default`),
never a table filled at import; a kind's module is imported only when the kind is used,
and a plugin never replaces a built-in kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arbiter.errors import InputError
from arbiter.plugins import Catalog
from arbiter.systems.base import SystemUnderTest

__all__ = [
    "BUILTIN_KINDS",
    "ENTRY_POINT_GROUP",
    "SystemKind",
    "SystemOptions",
    "SystemRegistry",
    "require",
]

ENTRY_POINT_GROUP = "arbiter.systems"
"""Entry-point group of third-party system kinds: ``name = "package.module:KIND"``."""

BUILTIN_KINDS: dict[str, str] = {
    "python": "arbiter.systems.python:KIND",
    "http": "arbiter.systems.http:KIND",
    "mcp": "arbiter.systems.mcp:KIND",
    "precomputed": "arbiter.systems.precomputed:KIND",
}
"""Built-in kinds, by name: ``module:attribute`` of each one's ``SystemKind``."""

DEFAULT_KIND = "python"
"""The kind of a run that names none."""


@dataclass(frozen=True)
class SystemOptions:
    """What a run says about its system: the CLI's options or an eval file's ``[system]``."""

    target: str | None = None
    """``--target`` / ``target``: what the kind calls (a callable, a URL, ...)."""
    method: str = "POST"
    """``--method``: the request method."""
    body_template: Any = None
    """``--body-template``: parsed JSON with ``{{input.field}}`` placeholders."""
    label_path: str | None = None
    """``--label-path``: where the label is in the answer."""
    confidence_path: str | None = None
    """``--confidence-path``: where the confidence is."""
    id_path: str | None = None
    """``--id-path``: where the answer's own id is."""
    header_names: tuple[str, ...] = ()
    """``--header`` / ``headers``: the names of the headers sent (values are never stored)."""
    tool: str | None = None
    """``--tool``: the tool to call."""
    fixed_arguments: Mapping[str, Any] = field(default_factory=dict)
    """``--arg`` / ``arguments``: arguments merged into every call."""
    timeout: float = 30.0
    """Seconds per call."""
    output_field: str = "output"
    """``--output-field``: where each row's recorded output sits."""


Describe = Callable[[SystemOptions], dict[str, Any]]
"""Run options -> the stored, rebuildable description of the system (no secret in it)."""

Build = Callable[[Mapping[str, Any], Mapping[str, str]], SystemUnderTest]
"""(stored description, header values) -> the system under test."""


@dataclass(frozen=True)
class SystemKind:
    """One kind of system under test.

    Examples:
        >>> KIND = SystemKind(
        ...     name="echo",
        ...     summary="answers each input's field named by --target",
        ...     target="the input field to answer with",
        ...     describe=lambda options: {"kind": "echo", "target": options.target},
        ...     build=lambda description, headers: EchoSystem(description["target"]),
        ... )  # doctest: +SKIP
    """

    name: str
    """The name ``--system`` and ``kind =`` give, and the stored description's ``kind``."""
    summary: str
    """What it is, in a few words (listed by the docs and in messages)."""
    describe: Describe
    """Makes the stored description from run options; raises ``InputError`` on bad ones."""
    build: Build
    """Rebuilds the system from its stored description and the header values."""
    target: str | None = None
    """What ``--target`` names for it, for messages (``"the service URL"``); None: it
    takes none (the kind's ``describe`` says what to do instead)."""
    reads: frozenset[str] = frozenset()
    """The options of :class:`SystemOptions` it reads besides ``target`` and ``timeout``."""

    def __post_init__(self) -> None:
        unknown = self.reads - {f.name for f in dataclasses.fields(SystemOptions)}
        if unknown:
            raise ValueError(f"system kind {self.name!r} reads unknown options {sorted(unknown)}")


def require(description: Mapping[str, Any], kind: str, *keys: str) -> None:
    """Refuse a stored description lacking one of ``keys``.

    Raises:
        InputError: ``a {kind} system needs 'url' and 'tool'``.
    """
    missing = [key for key in keys if not description.get(key)]
    if missing:
        raise InputError(f"a {kind} system needs {' and '.join(repr(k) for k in missing)}")


class SystemRegistry(Catalog[SystemKind]):
    """System kinds by name; an object made where it is needed and passed in."""

    what = "system kind"
    group = ENTRY_POINT_GROUP
    holds = SystemKind
    builtins = BUILTIN_KINDS

    def register_kind(self, kind: SystemKind, *, replace: bool = False) -> None:
        """Add a kind under its own name.

        Raises:
            ValueError: The name is taken (pass ``replace=True`` to override).
        """
        self.register(kind, replace=replace)

    def kind(self, name: object) -> SystemKind:
        """The kind registered as ``name``, imported if it was not yet.

        Raises:
            InputError: No kind has that name (the message lists the known ones), or a
                plugin's kind cannot be loaded or is not a ``SystemKind``.
        """
        return self.get(name)

    def reading(self, option: str) -> list[str]:
        """The kinds that read ``option`` (a :class:`SystemOptions` field), by name."""
        return [name for name in self.names() if option in self.kind(name).reads]

    def describe(self, kind: str, options: SystemOptions) -> dict[str, Any]:
        """The stored description of a ``kind`` system given ``options``.

        Raises:
            InputError: Unknown kind, a target it needs is missing, or an option it
                reads is invalid.
        """
        found = self.kind(kind)
        if found.target is not None and not options.target:
            raise InputError(f"--target is required for --system {kind}: give {found.target}")
        return found.describe(options)

    def build(
        self, description: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> SystemUnderTest:
        """Rebuild a system from the description its ``describe()`` returned.

        Header values are never stored (they may be secrets), so pass them again in
        ``headers`` when resuming a run against a service that needs them.

        Raises:
            InputError: The kind is unknown, an option is invalid, or a header the run
                used is not given again.
        """
        kind = self.kind(description.get("kind"))
        return kind.build(description, _given_headers(description, headers))


def _given_headers(
    description: Mapping[str, Any], headers: Mapping[str, str] | None
) -> dict[str, str]:
    given = dict(headers or {})
    # Header names are case-insensitive (RFC 9110): "authorization" answers "Authorization".
    known = {name.lower() for name in given}
    missing = sorted(n for n in description.get("headers") or [] if n.lower() not in known)
    if missing:
        raise InputError(
            f"the run used header(s) {', '.join(missing)}; pass them again with --header"
        )
    return given
