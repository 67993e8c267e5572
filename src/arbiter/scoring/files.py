"""Scorer arguments that name a file: how they are marked, and a ready-made text one.

A factory argument whose type is a :class:`FileArgument` (``RubricFile | None``, a jury
``Roster``, the json scorer's ``JsonSchemaFile``) takes a path, reads the file when the
scorer is built and keeps what it read in the spec, so a resumed run rebuilds the same
scorer even if the file changed since. Being marked is what lets an eval file resolve
such a path relative to itself, as it does ``dataset.path``: the mark is on the type, so
a plugin's file arguments are found the same way as the built-ins', by no list of names.

A plugin reading a text file needs nothing more than :class:`TextFile`::

    @scorer(name="uses_glossary")
    def uses_glossary(*, glossary: TextFile) -> ScoreFunction:
        terms = glossary["text"].split()
        ...
"""

from __future__ import annotations

import hashlib
import types
from typing import Any, Union, get_args, get_origin, get_type_hints

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from arbiter.datasets.jsonio import read_text
from arbiter.errors import InputError
from arbiter.scoring.base import CONTEXT, ScorerFactory

__all__ = ["FileArgument", "TextFile", "file_arguments", "names_a_file"]


class FileArgument:
    """Marks an argument type whose text value is the path of a file it reads when built.

    Subclass it first, before the container the value is kept in
    (``class RubricFile(FileArgument, dict[str, str])``); the subclass validates a path
    by reading the file, and a stored value by checking it.
    """

    __slots__ = ()


class TextFile(FileArgument, dict[str, str]):
    """A text file argument: a path, read when the scorer is built (UTF-8, a regular file).

    It is stored as ``{"path", "sha256", "text"}``, so the scorer's spec holds the text
    itself; a stored value whose text does not match its hash is refused.
    """

    __slots__ = ()
    what = "file"
    """What the file is, for messages (``no such file``, ``is not UTF-8``)."""
    holds = "text"
    """What the file holds, for the message about a stored value that was tampered with."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(cls.read)

    @classmethod
    def read(cls, value: Any) -> TextFile:
        """The file ``value`` names: a path to read, or a stored ``{path, sha256, text}``.

        Raises:
            ValueError: The file cannot be read, or a stored value is malformed or its
                text does not match its sha256.
        """
        if isinstance(value, str):
            try:
                text = read_text(value, what=cls.what)
            except InputError as exc:
                raise ValueError(str(exc)) from None
            return cls(path=value, sha256=_sha256(text), text=text)
        if (
            isinstance(value, dict)
            and set(value) == {"path", "sha256", "text"}
            and all(isinstance(v, str) for v in value.values())
        ):
            if _sha256(value["text"]) != value["sha256"]:
                raise ValueError(
                    f"{value['path']}: the stored {cls.holds} does not match its sha256"
                )
            return cls(value)
        raise ValueError(f"expected the path of a {cls.what}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def names_a_file(annotation: object) -> bool:
    """Whether a type hint is a :class:`FileArgument`, alone or in a union (``X | None``)."""
    if get_origin(annotation) in (Union, types.UnionType):
        return any(names_a_file(member) for member in get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, FileArgument)


def file_arguments(factory: ScorerFactory) -> frozenset[str]:
    """The arguments of ``factory`` that take the path of a file.

    A factory whose hints cannot be resolved has none here; building it says why.
    """
    try:
        hints = get_type_hints(factory.factory)
    except (NameError, TypeError):
        return frozenset()
    hints.pop("return", None)
    hints.pop(CONTEXT, None)
    return frozenset(name for name, hint in hints.items() if names_a_file(hint))
