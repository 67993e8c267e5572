"""The model-call cache: provider answers kept on disk, keyed by the whole request.

A :class:`CachedProvider` wraps any provider. Before a request reaches the model it
looks the request's key up in a :class:`ResponseCache`; a hit is answered at once with
``cached=True``, zero tokens and no cost, a miss goes to the model and its answer is
stored. The key is the sha256 of the canonical JSON of everything that shapes the
answer: the provider's name, base URL and dialect, and every field of the
:class:`~arbiter.providers.base.CompletionRequest` (model, system prompt, prompt,
schema and its name, effort, output-token limit, and any field added later) except
``timeout`` and ``metadata``, which never reach the model.

Where it lives: one SQLite file in WAL mode, ``Settings.model_cache_path()``, which is
``cache_dir/models.sqlite3``; ``cache_dir`` is ``ARBITER_CACHE_DIR``, by default
``cache/`` under the Arbiter home (``ARBITER_HOME``, by default ``.arbiter`` in the
working folder). Deleting the file empties the cache. Whether a run uses it is the
run's choice (``RunConfig.uses_cache``: on when k is 1, ``--cache`` / ``--no-cache``
decide otherwise); the mock provider is never cached.

A lookup is one indexed ``SELECT`` on the event loop's thread (tens of microseconds,
and WAL readers never wait for writers); a write runs in a worker thread, so a second
process holding the write lock delays no lookup. Several processes may share the file.
What could go wrong degrades to a miss, never to an error: an entry that does not
decode, a file that is not a database or is truncated, a folder that cannot be
written, a disk that is full. The first such problem of a cache is logged as one
warning (later ones at debug level), so a damaged cache says so once and the run goes
on calling models. Answers larger than ``max_entry_bytes`` are not stored, nor are
answers the caller would refuse: by default an answer is kept only when its text is
JSON that follows the request's schema, so a rerun asks again instead of replaying an
answer that errored (the rubric and the jury's critics validate against exactly that
schema; the bounds strict schemas drop are not checked by them either).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from arbiter.contract import Usage
from arbiter.errors import InvalidResponse
from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider, close_provider
from arbiter.providers.parse import json_document

__all__ = [
    "CACHE_FORMAT",
    "DEFAULT_MAX_ENTRY_BYTES",
    "AnswerCache",
    "CachedProvider",
    "ResponseCache",
    "follows_schema",
    "provider_identity",
    "request_key",
]

CACHE_FORMAT = 2
"""Version of the key and of the stored shape; a change starts a fresh cache (2: texts
hashed as length-prefixed UTF-8 instead of inside one JSON document)."""

DEFAULT_MAX_ENTRY_BYTES = 1024 * 1024
"""Largest answer stored (1 MiB of JSON); a larger one is answered but not kept."""

_NOT_IN_KEY = {"timeout", "metadata"}
"""Request fields that never reach the model, so never change its answer."""

_MAX_SCHEMAS = 64
"""Schema digests a cached provider keeps."""

_BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another process's write lock before giving up."""

_log = logging.getLogger(__name__)

_Validator = Any
"""A ``jsonschema`` validator (the library has no type hints)."""

_Flight = asyncio.Future[CompletionResponse]
"""A request on its way to the model, awaited by every identical request meanwhile."""


def provider_identity(provider: Provider) -> dict[str, str | None]:
    """What tells one provider's model server from another's: name, base URL, dialect.

    Read from the provider's ``name``, ``base_url`` and ``dialect`` attributes (the
    built-in vendors have them; a provider without them is told apart by name alone).
    """
    return {
        "name": provider.name,
        "base_url": _text_attribute(provider, "base_url"),
        "dialect": _text_attribute(provider, "dialect"),
    }


def _text_attribute(provider: Provider, name: str) -> str | None:
    value = getattr(provider, name, None)
    return value if isinstance(value, str) else None


def request_key(
    request: CompletionRequest, provider: Mapping[str, Any], *, schema_digest: str | None = None
) -> str:
    """The cache key of ``request`` sent to ``provider`` (see :func:`provider_identity`).

    The sha256 of the format and the provider's identity (canonical JSON), then of each
    keyed field of the request in name order, each as its name, a kind, its length and
    its bytes: a text as UTF-8 (lone surrogates kept, so any text has a key), any other
    value as canonical JSON, the schema as its digest. Lengths make the encoding
    unambiguous; texts are hashed as they are, not escaped into JSON, so a long prompt
    costs little more than its bytes.

    Args:
        request: The request.
        provider: The provider's identity.
        schema_digest: The sha256 of ``request.json_schema``'s canonical JSON, when the
            caller has it already; None: computed here.

    Examples:
        >>> request = CompletionRequest(model="m", system="s", prompt="p", json_schema={})
        >>> a = request_key(request, {"name": "mock"})
        >>> a == request_key(request.model_copy(update={"timeout": 5.0}), {"name": "mock"})
        True
        >>> a == request_key(request.model_copy(update={"prompt": "q"}), {"name": "mock"})
        False
    """
    return _request_digest(_key_head(provider), request, schema_digest)


def _key_head(provider: Mapping[str, Any]) -> hashlib._Hash:
    """The hash state every key of ``provider`` starts from (a ``hashlib`` sha256)."""
    return hashlib.sha256(_canonical({"format": CACHE_FORMAT, "provider": dict(provider)}))


def _request_digest(
    head: hashlib._Hash, request: CompletionRequest, schema_digest: str | None
) -> str:
    digest = head.copy()
    for name in _keyed_fields(type(request)):
        if name == "json_schema":
            value: Any = schema_digest or _schema_digest(request.json_schema)
        else:
            value = getattr(request, name)
        digest.update(_field_record(name, value))
    return digest.hexdigest()


@cache
def _keyed_fields(kind: type[CompletionRequest]) -> tuple[str, ...]:
    """The request fields in the key, in name order (every field added later included)."""
    return tuple(sorted(name for name in kind.model_fields if name not in _NOT_IN_KEY))


def _field_record(name: str, value: Any) -> bytes:
    """One field as ``name NUL kind length NUL bytes``."""
    if isinstance(value, str):
        kind, data = b"s", value.encode("utf-8", "surrogatepass")
    else:
        kind, data = b"j", _json_bytes(value)
    return b"%s\0%s%d\0%s" % (name.encode("ascii"), kind, len(data), data)


def _json_bytes(value: Any) -> bytes:
    """A value's canonical JSON; the common scalars without an encoder's set-up."""
    if value is None:
        return b"null"
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if type(value) is int:
        return b"%d" % value
    return _canonical(value)


def _schema_digest(schema: Mapping[str, Any]) -> str:
    """sha256 of a JSON schema's canonical JSON."""
    return hashlib.sha256(_canonical(schema)).hexdigest()


def _canonical(document: Any) -> bytes:
    return json.dumps(
        document,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=to_jsonable_python,  # a field of another type added to the request later
    ).encode("utf-8", "surrogatepass")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    response BLOB NOT NULL,
    created REAL NOT NULL
)
"""


class AnswerCache(Protocol):
    """Where a :class:`CachedProvider` looks answers up and stores them: a
    :class:`ResponseCache` file, or a database table
    (:class:`~arbiter.providers.cache_sql.SqlResponseCache`)."""

    def get(self, key: str) -> CompletionResponse | None:
        """The answer stored under ``key``; None on a miss."""
        ...

    def put(self, key: str, response: CompletionResponse) -> bool:
        """Store ``response`` under ``key``; False when it was not kept."""
        ...

    def close(self) -> None:
        """Release what the cache holds open."""
        ...


class ResponseCache:
    """Provider answers in one SQLite file, shared safely by threads and processes.

    Nothing is opened until the first lookup or write, so building a cache (checking a
    run's options) touches no file. :meth:`close` closes the connections; the next use
    opens them again.

    Args:
        path: The SQLite file; its folder is created on first use.
        max_entry_bytes: Answers whose stored JSON is larger are not kept.
    """

    def __init__(self, path: Path, *, max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES) -> None:
        self.path = Path(path)
        self.max_entry_bytes = max_entry_bytes
        # Two connections: lookups on the caller's thread never queue behind a write
        # that waits for another process's lock in a worker thread.
        self._reader: sqlite3.Connection | None = None
        self._writer: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._broken = False
        self._warned = False
        self._warned_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def get(self, key: str) -> CompletionResponse | None:
        """The answer stored under ``key``; None on a miss (or anything unreadable)."""
        with self._read_lock:
            try:
                reader = self._reader or self._open_reader()
                if reader is None:
                    return None
                row = reader.execute(
                    "SELECT response FROM responses WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                self._trouble("a lookup failed, the model is asked", exc)
                return None
        if row is None:
            return None
        try:
            return CompletionResponse.model_validate_json(row[0])
        except (ValidationError, ValueError, TypeError) as exc:
            # A miss: the fresh answer replaces the entry.
            self._trouble("an entry does not decode, the model is asked", exc)
            return None

    def put(self, key: str, response: CompletionResponse) -> bool:
        """Store ``response`` under ``key``; False when it was not kept (too large, text
        JSON cannot carry, or the file cannot be written)."""
        try:
            body = response.model_dump_json(exclude={"cached"}).encode("utf-8")
        except ValueError:
            return False  # a text JSON cannot carry (a lone surrogate): answered, not kept
        if len(body) > self.max_entry_bytes:
            return False
        with self._write_lock:
            try:
                writer = self._writer or self._open_writer()
                if writer is None:
                    return False
                writer.execute(
                    "INSERT OR REPLACE INTO responses (key, response, created) VALUES (?, ?, ?)",
                    (key, body, time.time()),
                )
            except sqlite3.Error as exc:
                self._trouble("an answer was not stored", exc)
                return False
        return True

    def entries(self) -> int:
        """How many answers the file holds."""
        with self._read_lock:
            try:
                reader = self._reader or self._open_reader()
                if reader is None:
                    return 0
                (count,) = reader.execute("SELECT count(*) FROM responses").fetchone()
            except sqlite3.Error:
                return 0
        return int(count)

    def close(self) -> None:
        """Close the connections (the next use opens them again)."""
        with self._read_lock:
            reader, self._reader = self._reader, None
        with self._write_lock:
            writer, self._writer = self._writer, None
        for connection in (reader, writer):
            if connection is not None:
                connection.close()

    def _connect(self) -> sqlite3.Connection | None:
        """A connection with the table in place; None (and one warning) if the file
        cannot serve as a cache, which then answers every lookup with a miss."""
        if self._broken:
            return None
        connection: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,  # autocommit: every write is its own short transaction
                check_same_thread=False,  # guarded by this object's locks
            )
            connection.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL loses no consistency, only (on power loss) the last
            # answers: they would simply be asked again.
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(_SCHEMA)
        except (OSError, ValueError, sqlite3.Error) as exc:
            if connection is not None:
                connection.close()
            if _busy(exc):
                return None  # another process holds the file for longer than we wait: later
            self._broken = True
            self._trouble("the file is unusable, running without the cache", exc)
            return None
        return connection

    def _trouble(self, what: str, exc: BaseException) -> None:
        """Log a problem: the cache's first as a warning, the others at debug level."""
        with self._warned_lock:
            first, self._warned = not self._warned, True
        if not first:
            _log.debug("model-call cache %s: %s: %s", self.path, what, exc)
            return
        _log.warning(
            "model-call cache %s: %s: %s (further cache problems are logged at debug level)",
            self.path,
            what,
            exc,
        )

    def _open_reader(self) -> sqlite3.Connection | None:
        self._reader = self._connect()
        return self._reader

    def _open_writer(self) -> sqlite3.Connection | None:
        self._writer = self._connect()
        return self._writer


def _busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's busy or locked (extended codes included): another
    connection holds the file, which may be free on the next try."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def follows_schema(request: CompletionRequest, response: CompletionResponse) -> bool:
    """Whether an answer is worth keeping: its text is JSON that follows the request's
    schema (what a caller parsing it with the schema's model accepts).

    Examples:
        >>> schema = {"type": "object", "required": ["ok"]}
        >>> request = CompletionRequest(model="m", system="s", prompt="p", json_schema=schema)
        >>> follows_schema(request, CompletionResponse(text='{"ok": 1}', model="m"))
        True
        >>> follows_schema(request, CompletionResponse(text='{"no": 1}', model="m"))
        False
    """
    return _answer_follows(response, _validator(request.json_schema))


def _answer_follows(response: CompletionResponse, validator: _Validator) -> bool:
    try:
        document = json_document(response.text)
    except InvalidResponse:
        return False
    return bool(validator.is_valid(document))


def _validator(schema: Mapping[str, Any]) -> _Validator:
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]  # no hints

    kind = validator_for(schema)
    return kind(schema)


@dataclass
class _KnownSchema:
    """A schema a cached provider has seen, with what it costs to derive from it."""

    schema: Mapping[str, Any]
    digest: str
    validator: _Validator | None = None
    """Built on the first answer that is checked against it."""

    def follows(self, response: CompletionResponse) -> bool:
        if self.validator is None:
            self.validator = _validator(self.schema)
        return _answer_follows(response, self.validator)


class CachedProvider:
    """A provider whose answers come from a :class:`ResponseCache` when it has them.

    Args:
        provider: The provider asked on a miss.
        cache: Where answers are looked up and stored.
        keep: Which answers to store; default: those whose text is JSON following the
            request's schema (:func:`follows_schema`): an answer the caller refuses is
            asked again next time, not replayed.
    """

    def __init__(
        self,
        provider: Provider,
        cache: AnswerCache,
        *,
        keep: Callable[[CompletionRequest, CompletionResponse], bool] | None = None,
    ) -> None:
        self.name = provider.name
        self.provider = provider
        self.cache = cache
        self._keep = keep
        self._identity = provider_identity(provider)
        self._head = _key_head(self._identity)
        # Callers build a schema once and send that same object with every request; its
        # canonical JSON costs more than the rest of the key, so its digest (and its
        # validator) is kept, with the schema, so that its id cannot be reused by
        # another object.
        self._schemas: dict[int, _KnownSchema] = {}
        # By event loop as well as key: a future can only be awaited on its own loop,
        # and one provider may serve runs on several loops (threads) at once.
        self._pending: dict[tuple[asyncio.AbstractEventLoop, str], _Flight] = {}
        self.hits = 0
        """Requests answered from the cache (or by an identical request in flight)."""
        self.misses = 0
        """Requests that went to the model."""

    def __repr__(self) -> str:
        return f"CachedProvider({self.provider!r}, {self.cache!r})"

    def key(self, request: CompletionRequest) -> str:
        """The cache key of ``request`` on this provider."""
        return _request_digest(self._head, request, self._known(request.json_schema).digest)

    def _known(self, schema: Mapping[str, Any]) -> _KnownSchema:
        known = self._schemas.get(id(schema))
        if known is None or known.schema is not schema:
            if len(self._schemas) >= _MAX_SCHEMAS:
                self._schemas.clear()
            known = self._schemas[id(schema)] = _KnownSchema(schema, _schema_digest(schema))
        return known

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """The cached answer to ``request``, else the provider's (then stored).

        Identical requests in flight at once reach the provider once: the others wait
        for that answer and count as cache hits.

        Raises:
            ProviderError: As the wrapped provider (a failure is never stored).
        """
        started = time.perf_counter()
        key = self.key(request)
        flight = (asyncio.get_running_loop(), key)
        pending = self._pending.get(flight)
        if pending is not None:
            found = await asyncio.shield(pending)
        else:
            stored = self.cache.get(key)
            if stored is None:
                self.misses += 1
                asked = asyncio.ensure_future(self._ask(key, request))
                self._pending[flight] = asked
                asked.add_done_callback(lambda done: self._settle(flight, done))
                # Shielded: a caller cancelled (its run interrupted) leaves the answer
                # to whoever else waits for it.
                return await asyncio.shield(asked)
            found = stored
        self.hits += 1
        return found.model_copy(
            update={
                "cached": True,
                "usage": Usage(cost_usd=0.0),
                "latency_ms": (time.perf_counter() - started) * 1000,
            }
        )

    async def _ask(self, key: str, request: CompletionRequest) -> CompletionResponse:
        response = await self.provider.complete(request)
        if self._keeps(request, response):
            await asyncio.to_thread(self.cache.put, key, response)
        return response

    def _keeps(self, request: CompletionRequest, response: CompletionResponse) -> bool:
        if self._keep is not None:
            return self._keep(request, response)
        return self._known(request.json_schema).follows(response)

    def _settle(self, flight: tuple[asyncio.AbstractEventLoop, str], done: _Flight) -> None:
        if self._pending.get(flight) is done:
            del self._pending[flight]
        if not done.cancelled():
            done.exception()  # retrieved here: every waiter may have gone

    async def aclose(self) -> None:
        """Close the wrapped provider's connections (the cache is its owner's to close)."""
        await close_provider(self.provider)
