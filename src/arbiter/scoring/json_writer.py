"""``json.dumps`` with its options fixed once, for code that writes many small values.

``json.dumps`` with any non-default option builds a new encoder for every call, and
``JSONEncoder.encode`` builds its C encoder for every call too; for the tool arguments
and results of a trajectory (small objects, tens per run) that set-up costs more than
the writing. :func:`json_writer` builds the C encoder once and returns a function
giving the text ``json.dumps(value, **options)`` gives, raising what it raises for
the values it cannot write (``TypeError``, ``ValueError``, ``RecursionError``).

It never checks for circular references: a value that contains itself raises
``RecursionError`` instead of ``ValueError`` (JSON parsed from text never does).
Without CPython's C accelerator the writer is the plain encoder's ``encode``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _json_encoder
from typing import Any

__all__ = ["json_writer"]


def json_writer(
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
) -> Callable[[Any], str]:
    """A function writing a value as ``json.dumps(value, **options)`` does.

    Args:
        sort_keys: Write object members sorted by key.
        separators: ``(item, key)`` separators; None: ``(", ", ": ")``.
        ensure_ascii: Escape every non-ASCII character.

    Examples:
        >>> json_writer(sort_keys=True, separators=(",", ":"))({"b": [1.5], "a": "é"})
        '{"a":"\\\\u00e9","b":[1.5]}'
    """
    plain = json.JSONEncoder(
        sort_keys=sort_keys,
        separators=separators,
        ensure_ascii=ensure_ascii,
        check_circular=False,
    )
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder's own (slower) path
        return plain.encode
    write_string = (
        _json_encoder.encode_basestring_ascii if ensure_ascii else _json_encoder.encode_basestring
    )
    chunks = make(
        None,  # no markers: circular references are not looked for
        plain.default,
        write_string,
        None,  # no indent
        plain.key_separator,
        plain.item_separator,
        sort_keys,
        False,  # skipkeys
        True,  # allow_nan, as json.dumps
    )

    def write(value: Any) -> str:
        if isinstance(value, str):
            text: str = write_string(value)
            return text
        return "".join(chunks(value, 0))

    # The C encoder's signature is CPython's own business: one that does not write as
    # the plain encoder does is not used.
    probe = {"b": [1.5, None, True, -0.0, 10**20], "a": 'é\n"', "c": {"d": {}}}
    try:
        if write(probe) == plain.encode(probe):
            return write
    except Exception:  # any failure means: use the plain encoder
        pass
    return plain.encode
