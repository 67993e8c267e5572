"""Column types for text that came from outside: what a system, dataset or model produced.

Python strings may hold lone surrogates (``json.loads('"\\ud800"')`` gives one, so does
``surrogateescape`` decoding of a command line), and no database driver can encode
them; PostgreSQL text holds no NUL either. One such character in a label would fail
the whole transaction of a run. JSON columns are safe (the serializer writes
``\\ud800`` and ``\\u0000`` escapes); plain text columns use :class:`UntrustedText`,
which stores each lone surrogate and NUL as U+FFFD, on every database alike. The exact
text stays available wherever it matters, in the JSON column beside it.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Dialect, String, Text
from sqlalchemy.types import TypeDecorator

__all__ = ["UntrustedString", "UntrustedText", "storable"]

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: str) -> str:
    """``value`` with every NUL and lone surrogate replaced by U+FFFD (linear time)."""
    return _UNSTORABLE.sub("\ufffd", value)


class UntrustedText(TypeDecorator[str]):
    """Unbounded text from outside Arbiter, stored with lone surrogates replaced."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return storable(value) if isinstance(value, str) else value


class UntrustedString(TypeDecorator[str]):
    """Bounded text from outside Arbiter (``UntrustedString(200)``), as :class:`UntrustedText`."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return storable(value) if isinstance(value, str) else value
