"""Reading and writing runs, datasets and results through one ``Store`` object.

The store implements the sink the offline harness declares
(:class:`arbiter.harness.sink.RunStore`) and imports nothing of Arbiter's but the
contract and the exception tree. Every database failure reaches the caller as one
:class:`~arbiter.errors.StoreUnavailable` line saying what could not be done and where,
never as SQL.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    BindParameter,
    Engine,
    Table,
    Text,
    bindparam,
    cast,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    type_coerce,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from arbiter.contract import (
    Dataset,
    Example,
    Output,
    PairResult,
    RunInfo,
    RunSegment,
    RunStatus,
    Score,
)
from arbiter.errors import InputError, RunBusy, StoreError, StoreUnavailable
from arbiter.store import jury_models as _jury_models  # noqa: F401  (the jury's tables)
from arbiter.store import online_models as _online_models  # noqa: F401  (online results)
from arbiter.store.models import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_VERSION_CHARS,
    Base,
    DatasetRow,
    ResultRow,
    RunLeaseRow,
    RunRow,
    RunSegmentRow,
)

__all__ = ["LEASE_TTL_S", "RunLease", "Store", "new_run_id"]

LEASE_TTL_S = 60.0
"""A lease whose holder has not renewed it for this long may be taken over."""

_RESULTS: Table = ResultRow.__table__  # type: ignore[assignment]
_DATASETS: Table = DatasetRow.__table__  # type: ignore[assignment]

R = TypeVar("R")


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes for timezone-aware columns; they were written in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def new_run_id(*, random_hex: int = 6) -> str:
    """A short, sortable, unique run id: ``YYYYMMDD-HHMMSS-xxxxxx``.

    Args:
        random_hex: Random hex digits after the second (at most 32). Six keep a run made
            at the terminal readable; a server making hundreds a second needs more
            (with six, two of 300 ids made in one second collide about once a minute).
    """
    return f"{_now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:random_hex]}"


def _cause(exc: SQLAlchemyError) -> str:
    """The database's own reason, one line, without the SQL statement SQLAlchemy appends."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


def _process_exists(pid: int) -> bool:
    """Whether ``pid`` is a live process of this host (a zombie, killed but not yet
    reaped by its parent, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    try:  # Linux: the state after the command name in /proc/<pid>/stat; Z is a zombie
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


class RunLease:
    """The right to execute one run, held by one process until released.

    Taken with :meth:`Store.acquire_lease`; ``renew`` keeps it alive, ``release`` gives
    it up. Usable as a context manager that releases on exit.
    """

    def __init__(self, store: Store, run_id: str, owner: str) -> None:
        self.store, self.run_id, self.owner = store, run_id, owner

    def renew(self) -> None:
        """Refresh the heartbeat, so other processes see the holder is alive."""
        action = f"renew the lease on run {self.run_id}"
        with self.store.guard(action), self.store.session() as s, s.begin():
            s.execute(
                update(RunLeaseRow)
                .where(RunLeaseRow.run_id == self.run_id, RunLeaseRow.owner == self.owner)
                .values(heartbeat_at=_now())
            )

    def release(self) -> None:
        """Give the run up; a no-op when the lease was already taken over or released."""
        action = f"release the lease on run {self.run_id}"
        with self.store.guard(action), self.store.session() as s, s.begin():
            s.execute(
                delete(RunLeaseRow).where(
                    RunLeaseRow.run_id == self.run_id, RunLeaseRow.owner == self.owner
                )
            )

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Store:
    """The run store. SQLite (WAL) by default; any SQLAlchemy URL, PostgreSQL included.

    Args:
        url: A SQLAlchemy database URL.

    Raises:
        StoreError: The URL is malformed or names a driver that is not installed.
        StoreUnavailable: The database cannot be reached, created or written.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            parsed = make_url(url)
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"the store URL {url!r} is not a database URL: {exc}") from None
        database = parsed.database
        if parsed.get_backend_name() == "sqlite" and database not in (None, "", ":memory:"):
            folder = Path(database).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                raise StoreUnavailable(
                    f"cannot create the store's folder {folder}: {reason}"
                ) from None
        try:
            self.engine: Engine = create_engine(url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open the store {self.describe()}: {exc}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        with self.guard("open the store"):
            _create_schema(self.engine)

    def close(self) -> None:
        """Release the connection pool."""
        self.engine.dispose()

    def session(self) -> Session:
        """A new ORM session on the store's engine (for the repositories beside this one)."""
        return self._sessions()

    @contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Turn any database failure inside the block into one ``StoreUnavailable`` line.

        Args:
            action: What was being done, completing "cannot ...", e.g. "store results".
        """
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot {action} in {self.describe()}: {_cause(exc)}") from None

    def by_prefix(self, session: Session, table: type[R], key: str, what: str) -> R:
        """The row of ``table`` whose id is ``key`` or starts with it, if only one does.

        Args:
            session: An open session.
            table: A table with a string ``id`` primary key.
            key: An id, or a unique prefix of one.
            what: What the rows are, for the message ("run", "jury run").

        Raises:
            StoreError: No row, or more than one, matches.
        """
        row = session.get(table, key)
        if row is not None:
            return row
        column = table.id  # type: ignore[attr-defined]
        matches = session.scalars(
            select(table).where(column.startswith(key, autoescape=True)).limit(2)
        ).all()
        if len(matches) != 1:
            found = f"no {what}" if not matches else f"more than one {what}"
            raise StoreError(f"{found} matches id {key!r} in {self.describe()}")
        return matches[0]

    def describe(self) -> str:
        """The store's URL with any password hidden."""
        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except (SQLAlchemyError, ValueError):
            return "(an invalid store URL)"

    # ------------------------------------------------------------------ datasets

    def save_dataset(self, dataset: Dataset) -> str:
        """Store the dataset under its content hash (once) and return the hash.

        The examples are written as the one JSON value they always were, byte for byte,
        but its text is made example by example: the list of every example's dict that
        the JSON column would serialise is never built (about 0.6 KB an example).

        Raises:
            InputError: An id, the name or the version is longer than the store keeps
                (checked before anything is written).
        """
        _check_fits(dataset)
        content_hash = dataset.content_hash
        action = f"store the dataset {dataset.name!r}"
        with self.guard(action), self.session() as session, session.begin():
            stored = session.scalar(
                select(DatasetRow.content_hash).where(DatasetRow.content_hash == content_hash)
            )
            if stored is None:
                # The text is bound at execution, not in the statement: SQLAlchemy's
                # cache of compiled statements keeps the first statement of each shape,
                # and with it any value in it (the whole text, for the life of the store).
                session.execute(
                    insert(_DATASETS).values(
                        content_hash=content_hash,
                        name=dataset.name,
                        version=dataset.version,
                        n_examples=len(dataset.examples),
                        examples=self._json_text(bindparam(_EXAMPLES_TEXT, type_=Text)),
                        created_at=_now(),
                    ),
                    {_EXAMPLES_TEXT: _examples_text(dataset.examples)},
                )
        return content_hash

    def _json_text(self, value: str | BindParameter[str]) -> Any:
        """``value``, JSON text already, bound to a JSON column as it is: SQLite keeps JSON
        as text; PostgreSQL is told to read the text as ``json``."""
        as_text = type_coerce(value, Text)
        return as_text if self.engine.dialect.name == "sqlite" else cast(as_text, JSON)

    def load_dataset(self, content_hash: str) -> Dataset:
        """The dataset stored under ``content_hash``.

        Raises:
            StoreError: No dataset is stored under that hash.
        """
        with self.guard("read a dataset"), self.session() as session:
            row = session.get(DatasetRow, content_hash)
            if row is None:
                raise StoreError(f"no dataset with hash {content_hash[:12]} in the store")
            examples = [Example.model_validate(e) for e in row.examples]
            return Dataset(name=row.name, version=row.version, examples=examples)

    # ---------------------------------------------------------------------- runs

    def create_run(
        self,
        *,
        dataset: Dataset,
        system: dict[str, Any],
        config: dict[str, Any],
        n_pairs: int,
        name: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        """Register a new run in status ``running`` and return its id.

        Raises:
            InputError: The run's name, or an id, the name or the version of its dataset,
                is longer than the store keeps (checked before anything is written).
        """
        if name is not None and len(name) > MAX_NAME_CHARS:
            raise InputError(
                f"the run name has {len(name):,} characters; the store keeps at most "
                f"{MAX_NAME_CHARS}"
            )
        self.save_dataset(dataset)
        run_id = new_run_id()
        with self.guard("create a run"), self.session() as session, session.begin():
            session.add(
                RunRow(
                    id=run_id,
                    dataset_hash=dataset.content_hash,
                    system=system,
                    config=config,
                    status="running",
                    n_pairs=n_pairs,
                    created_at=_now(),
                    name=name,
                    tags=dict(tags) if tags else None,
                )
            )
        return run_id

    def save_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        """Keep a run's headline figures with its header, for listings."""
        with self.guard(f"store the figures of run {run_id}"), self.engine.begin() as connection:
            connection.execute(update(RunRow).where(RunRow.id == run_id).values(summary=summary))

    def acquire_lease(self, run_id: str, *, ttl_s: float = LEASE_TTL_S) -> RunLease:
        """Take the right to execute ``run_id``; refused while another process holds it.

        A lease is taken over when its holder stopped renewing it ``ttl_s`` ago, or when
        the holder ran on this host and its process no longer exists (a killed run can be
        resumed at once).

        Raises:
            RunBusy: A live process holds the run.
        """
        owner = uuid.uuid4().hex
        host, pid = socket.gethostname(), os.getpid()
        fresh = {"owner": owner, "host": host, "pid": pid, "heartbeat_at": _now()}
        with self.guard(f"lease run {run_id}"):
            try:
                with self.session() as session, session.begin():
                    session.add(RunLeaseRow(run_id=run_id, **fresh))
                return RunLease(self, run_id, owner)
            except IntegrityError:
                pass  # someone holds it, or held it: see whether they still do
            with self.session() as session, session.begin():
                held = session.get(RunLeaseRow, run_id)
                if held is not None:
                    stale = _aware(held.heartbeat_at) < _now() - timedelta(seconds=ttl_s)
                    dead = held.host == host and not _process_exists(held.pid)
                    if not (stale or dead):
                        raise RunBusy(
                            f"run {run_id} is being executed by process {held.pid} on "
                            f"{held.host}; wait for it to finish (or stop it) before resuming"
                        )
                    taken = session.execute(
                        update(RunLeaseRow)
                        .where(RunLeaseRow.run_id == run_id, RunLeaseRow.owner == held.owner)
                        .values(**fresh)
                    )
                    if taken.rowcount != 1:  # type: ignore[attr-defined]
                        raise RunBusy(f"run {run_id} was resumed by another process just now")
                else:
                    session.add(RunLeaseRow(run_id=run_id, **fresh))
        return RunLease(self, run_id, owner)

    def start_segment(self, run_id: str) -> int:
        """Record that execution of ``run_id`` (re)starts now; returns the segment's number."""
        with self.guard(f"start run {run_id}"), self.session() as session, session.begin():
            position = session.scalar(
                select(func.count())
                .select_from(RunSegmentRow)
                .where(RunSegmentRow.run_id == run_id)
            )
            session.add(RunSegmentRow(run_id=run_id, position=position or 0, started_at=_now()))
            session.execute(update(RunRow).where(RunRow.id == run_id).values(status="running"))
            return int(position or 0)

    def end_segment(
        self, run_id: str, segment: int, status: RunStatus, *, elapsed_seconds: float
    ) -> None:
        """Close a segment and move the run to ``status`` (``finished_at`` set if completed)."""
        values: dict[str, Any] = {
            "status": status,
            "elapsed_seconds": RunRow.elapsed_seconds + elapsed_seconds,
        }
        if status == "completed":
            values["finished_at"] = _now()
        action = f"record the end of run {run_id}"
        with self.guard(action), self.session() as session, session.begin():
            session.execute(
                update(RunSegmentRow)
                .where(RunSegmentRow.run_id == run_id, RunSegmentRow.position == segment)
                .values(ended_at=_now(), elapsed_seconds=elapsed_seconds)
            )
            session.execute(update(RunRow).where(RunRow.id == run_id).values(**values))

    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        """Append results of a run in one transaction."""
        if not results:
            return
        now = _now()
        rows = [_result_row(run_id, now, r) for r in results]
        # A Core executemany on the table, bypassing the ORM: results are the hot path.
        with self.guard(f"store results of run {run_id}"), self.engine.begin() as connection:
            connection.execute(insert(_RESULTS), rows)

    def get_run(self, run_id: str) -> RunInfo:
        """The header of one run; a unique prefix of its id is enough.

        Raises:
            StoreError: No run, or more than one, matches ``run_id``.
        """
        with self.guard("read a run"), self.session() as session:
            return self._info(session, self.by_prefix(session, RunRow, run_id, "run"))

    def list_runs(self, *, limit: int = 50, tags: dict[str, str] | None = None) -> list[RunInfo]:
        """The most recent runs, newest first; with ``tags``, only runs carrying them all."""
        with self.guard("list runs"), self.session() as session:
            query = select(RunRow).order_by(RunRow.created_at.desc())
            if not tags:
                rows = session.scalars(query.limit(limit)).all()
            else:  # tags are JSON: filtered here, portably, rather than in SQL
                wanted = tags.items()
                rows = [
                    row
                    for row in session.scalars(query).all()
                    if wanted <= (row.tags or {}).items()
                ][:limit]
            return [self._info(session, row) for row in rows]

    def results(self, run_id: str) -> list[PairResult]:
        """Every stored result of a run, ordered by example and repetition."""
        with self.guard(f"read the results of run {run_id}"), self.session() as session:
            rows = session.scalars(
                select(ResultRow)
                .where(ResultRow.run_id == run_id)
                .order_by(ResultRow.example_id, ResultRow.repetition)
            ).all()
            return [_pair_result(row) for row in rows]

    def completed_pairs(self, run_id: str) -> set[tuple[str, int]]:
        """The (example_id, repetition) pairs of a run that already have a result."""
        with self.guard(f"read the results of run {run_id}"), self.session() as session:
            rows = session.execute(
                select(ResultRow.example_id, ResultRow.repetition).where(ResultRow.run_id == run_id)
            ).all()
            return {(example_id, repetition) for example_id, repetition in rows}

    def _info(self, session: Session, row: RunRow) -> RunInfo:
        n_done = session.scalar(
            select(func.count()).select_from(ResultRow).where(ResultRow.run_id == row.id)
        )
        dataset_name = session.scalar(
            select(DatasetRow.name).where(DatasetRow.content_hash == row.dataset_hash)
        )
        status = row.status
        if status == "running" and not self._held(session, row.id):
            status = "interrupted"  # killed without a chance to say so
        return RunInfo(
            id=row.id,
            dataset_hash=row.dataset_hash,
            dataset_name=dataset_name or "?",
            system=row.system,
            config=row.config,
            status=status,
            n_pairs=row.n_pairs,
            n_done=n_done or 0,
            created_at=row.created_at,
            finished_at=row.finished_at,
            segments=self._segments(session, row),
            name=row.name,
            tags=row.tags or {},
            summary=row.summary,
        )

    def _held(self, session: Session, run_id: str) -> bool:
        held = session.get(RunLeaseRow, run_id)
        if held is None:
            return False
        if held.host == socket.gethostname() and not _process_exists(held.pid):
            return False
        return _aware(held.heartbeat_at) >= _now() - timedelta(seconds=LEASE_TTL_S)

    def _segments(self, session: Session, row: RunRow) -> list[RunSegment]:
        stored = session.scalars(
            select(RunSegmentRow)
            .where(RunSegmentRow.run_id == row.id)
            .order_by(RunSegmentRow.position)
        ).all()
        if not stored:  # a run made before segments were recorded: one, as it was summed
            return [
                RunSegment(
                    started_at=row.created_at,
                    ended_at=row.finished_at,
                    elapsed_seconds=row.elapsed_seconds or 0.0,
                )
            ]
        segments = []
        for i, segment in enumerate(stored):
            elapsed = segment.elapsed_seconds
            if elapsed is None:  # killed: it lasted at least until its last result
                until = stored[i + 1].started_at if i + 1 < len(stored) else None
                query = select(func.max(ResultRow.completed_at)).where(
                    ResultRow.run_id == row.id, ResultRow.completed_at >= segment.started_at
                )
                if until is not None:
                    query = query.where(ResultRow.completed_at < until)
                last = session.scalar(query)
                started = _aware(segment.started_at)
                elapsed = (_aware(last) - started).total_seconds() if last is not None else 0.0
            segments.append(
                RunSegment(
                    started_at=segment.started_at,
                    ended_at=segment.ended_at,
                    elapsed_seconds=max(0.0, elapsed),
                )
            )
        return segments


def _examples_text(examples: Sequence[Example]) -> str:
    """The JSON the store has always kept for a dataset's examples, ``json.dumps`` of the
    list of their dumps (what the JSON column's serialiser wrote), made one example at a
    time: the text of a list is its items' texts joined by ``", "`` in brackets."""
    parts = ["["]
    pending: list[str] = []
    for number, example in enumerate(examples):
        if number:
            pending.append(", ")
        pending.append(json.dumps(example.model_dump(mode="json")))
        if len(pending) >= _TEXT_PIECES:  # a million small strings would outweigh the text
            parts.append("".join(pending))
            pending = []
    parts.append("".join(pending))
    parts.append("]")
    return "".join(parts)


_TEXT_PIECES = 20_000

_EXAMPLES_TEXT = "examples_text"
"""The name the dataset's text is bound under when it is written."""


def _check_fits(dataset: Dataset) -> None:
    """Refuse what a column is too short for: PostgreSQL would fail the write half-way,
    SQLite would keep it, so the limits are checked here, alike for both."""
    where = f"dataset {dataset.name[:60]!r}"
    if len(dataset.name) > MAX_NAME_CHARS:
        raise InputError(
            f"{where}: the name has {len(dataset.name):,} characters; the store keeps at "
            f"most {MAX_NAME_CHARS}"
        )
    if len(dataset.version) > MAX_VERSION_CHARS:
        raise InputError(
            f"{where}: the version has {len(dataset.version):,} characters; the store keeps "
            f"at most {MAX_VERSION_CHARS}"
        )
    for number, example in enumerate(dataset.examples, start=1):
        if len(example.id) > MAX_ID_CHARS:
            raise InputError(
                f"{where}: example {number} has an id of {len(example.id):,} characters "
                f"({example.id[:40]!r}...); the store keeps ids of at most {MAX_ID_CHARS}"
            )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # The wait first: switching a new file to WAL takes a lock another process opening
    # the same store may hold, and without a busy timeout that fails at once ("locked").
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _result_row(run_id: str, now: datetime, result: PairResult) -> dict[str, Any]:
    """The row of one result; the output goes whole into ``output`` (its label also apart)."""
    output = result.output
    return {
        "run_id": run_id,
        "completed_at": now,
        "example_id": result.example_id,
        "repetition": result.repetition,
        "label": result.label,
        "correct": result.correct,
        "passed": result.passed,
        "output": None if output is None else _output_json(output),
        "scores": [s.model_dump(mode="json", exclude_defaults=True) for s in result.scores],
        "error_type": result.error_type,
        "error_message": result.error_message,
        "latency_ms": result.latency_ms,
        "attempts": result.attempts,
    }


def _output_json(output: Output) -> dict[str, Any]:
    """The output as stored: its defaults left out, but not a trajectory's, whose steps'
    ``kind`` is a default and yet what tells each step's type when it is read back."""
    stored = output.model_dump(mode="json", exclude_defaults=True)
    if output.trajectory is not None:
        stored["trajectory"] = output.trajectory.model_dump(mode="json", exclude_none=True)
    return stored


def _pair_result(row: ResultRow) -> PairResult:
    """A stored row as a result; rows of schema 1 (before scorers) read as scored by label."""
    if row.scores is not None:
        output = None if row.output is None else Output.model_validate(row.output)
        return PairResult(
            example_id=row.example_id,
            repetition=row.repetition,
            output=output,
            scores=[Score.model_validate(s) for s in row.scores],
            passed=row.passed,
            error_type=row.error_type,
            error_message=row.error_message,
            latency_ms=row.latency_ms,
            attempts=row.attempts,
        )
    legacy = None
    scores: list[Score] = []
    if row.error_type is None and row.label is not None:
        legacy = Output(
            id=row.prediction_id or "",
            label=row.label,
            raw=row.raw_output,
            confidence=row.confidence,
        )
        scores = [
            Score(name="label", answer=row.label, passed=row.correct, value=float(row.correct))
        ]
    return PairResult(
        example_id=row.example_id,
        repetition=row.repetition,
        output=legacy,
        scores=scores,
        passed=row.correct if legacy is not None else False,
        error_type=row.error_type,
        error_message=row.error_message,
        latency_ms=row.latency_ms,
        attempts=row.attempts,
    )


_SCHEMA_ATTEMPTS = 200
"""Each lost race means another process made a table: the attempts are bounded by the
tables times the racers, well under this."""


def _create_schema(engine: Engine) -> None:
    """Create the missing tables and columns. Processes opening one new store at the same
    time (pytest-xdist workers, server workers) race between "is the table there?" and
    "create it": the loser's error means the winner made it, so it looks again."""
    for attempt in range(_SCHEMA_ATTEMPTS):
        try:
            Base.metadata.create_all(engine)
            _add_missing_columns(engine)
            return
        except SQLAlchemyError as exc:
            text = str(getattr(exc, "orig", exc)).lower()
            raced = any(sign in text for sign in ("already exists", "duplicate", "locked"))
            if not raced or attempt == _SCHEMA_ATTEMPTS - 1:
                raise
            # SQLite refuses a lock upgrade at once (no busy wait) when waiting could
            # deadlock: step back a moment and look again.
            time.sleep(0.01 * (1 + attempt % 10))


def _add_missing_columns(engine: Engine) -> None:
    """Upgrade a store made by an older version: add the (nullable) columns it lacks.

    Columns are only ever added, never changed or dropped, so ``ALTER TABLE ... ADD
    COLUMN`` is the whole migration, on SQLite and PostgreSQL alike.
    """
    inspector = inspect(engine)
    statements = []
    for table in Base.metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            if not column.nullable:
                raise StoreError(
                    f"the store's table {table.name} lacks column {column.name}, which cannot "
                    "be added in place; use a new store (ARBITER_DB_URL)"
                )
            kind = column.type.compile(dialect=engine.dialect)
            statements.append(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')
    if statements:
        with engine.begin() as connection:
            for statement in statements:
                connection.execute(text(statement))
