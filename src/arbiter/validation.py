"""The one formatter of validation errors: a pydantic error as the document's author reads it.

Every input (datasets, case files, configs, rosters, stored rows, model answers) is
validated against a Pydantic model; this module turns the first error into one line
naming the field as it is written in the document (``rules[0].threshold``, not
``rules.HeuristicRules.rules.0.confidence_below.threshold``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from arbiter.errors import InputError

__all__ = ["describe_validation_error", "format_loc", "validate_document"]

M = TypeVar("M", bound=BaseModel)


def validate_document(model: type[M], document: Any, *, where: str) -> M:
    """``model`` validated from a parsed document, or one ``InputError`` line.

    Raises:
        InputError: ``where: field 'a.b[0].c': why`` for the first problem.
    """
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe_validation_error(exc, model)}") from None


def describe_validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """``field 'a.b[0].c': why (and N more)`` from pydantic's first error.

    Args:
        exc: The error.
        model: The model that was validated: its fields tell field names apart from the
            union members pydantic puts in the location (``HeuristicRules``, a rule's ``kind``),
            which are dropped so the location reads as the author wrote the document.
    """
    errors = exc.errors(include_url=False)
    # A value failing a union fails every member; the members of another type ("should
    # be a valid list") say nothing the author needs when the member they meant failed.
    informative = [e for e in errors if not str(e["type"]).endswith("_type")] or errors
    loc = format_loc(informative[0]["loc"], model)
    message = " ".join(str(informative[0]["msg"]).split()).removeprefix("Value error, ")
    more = f" (and {len(informative) - 1} more)" if len(informative) > 1 else ""
    return (f"field {loc!r}: {message}" if loc else message) + more


def format_loc(loc: Sequence[int | str], model: Any = None) -> str:
    """A pydantic error location as the document's author would write it: ``a.b[0].c``.

    Union members and discriminator tags in ``loc`` are not fields of the document and
    are dropped; list indices become ``[i]``.
    """
    parts: list[str] = []
    current: Any = model
    for segment in loc:
        current = _unwrap(current)
        members = _union_members(current)
        if members is not None and isinstance(segment, str):
            chosen = _member_for(members, segment)
            if chosen is not None or _is_type_tag(segment):
                current = chosen
                continue
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
            current = _item_type(current)
            continue
        if current is None and _is_type_tag(segment):
            continue
        parts.append(f".{segment}" if parts else str(segment))
        current = _field_type(current, segment)
    return "".join(parts)


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(_unwrap(a) for a in get_args(annotation) if a is not type(None))
    return None


def _member_for(members: tuple[Any, ...], tag: str) -> Any:
    for member in members:
        origin = get_origin(member)
        if origin is not None and tag.startswith(f"{getattr(origin, '__name__', '')}["):
            return member  # "list[...]" names the list member
        if getattr(member, "__name__", None) == tag:
            return member
        fields = getattr(member, "model_fields", None)
        if isinstance(fields, dict):
            for info in fields.values():
                literal = _unwrap(info.annotation)
                if get_origin(literal) is typing.Literal and tag in get_args(literal):
                    return member
    return None


def _is_type_tag(segment: str) -> bool:
    """A segment pydantic adds for a union member that is not a model (``str``, ``list[...]``)."""
    return "[" in segment or segment in {"str", "int", "float", "bool", "none", "dict", "list"}


def _item_type(annotation: Any) -> Any:
    args = get_args(annotation)
    if get_origin(annotation) in (list, tuple, Sequence, set, frozenset) and args:
        return _unwrap(args[0])
    return None


def _field_type(annotation: Any, name: str) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        info = annotation.model_fields.get(name)
        if info is None:  # an alias
            info = next((f for f in annotation.model_fields.values() if f.alias == name), None)
        return _unwrap(info.annotation) if info is not None else None
    if get_origin(annotation) is dict:
        args = get_args(annotation)
        return _unwrap(args[1]) if len(args) == 2 else None
    return None
