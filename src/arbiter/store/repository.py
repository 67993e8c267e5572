"""Reading and writing runs, datasets and results through one ``Store`` object."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import Engine, Table, create_engine, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from arbiter.contract import Dataset, Example
from arbiter.errors import StoreError, StoreUnavailable
from arbiter.store import jury_models as _jury_models  # noqa: F401  (the jury's tables)
from arbiter.store import online_models as _online_models  # noqa: F401  (online results)
from arbiter.store.models import Base, DatasetRow, ResultRow, RunRow

__all__ = ["PairResult", "RunInfo", "RunStatus", "Store"]

RunStatus = Literal["running", "completed", "interrupted", "failed"]

_RESULTS: Table = ResultRow.__table__  # type: ignore[assignment]


class PairResult(BaseModel):
    """The outcome of one (example, repetition) pair."""

    example_id: str
    """Id of the example."""
    repetition: int
    """0-based repetition index."""
    label: str | None
    """Predicted label; None when the call failed."""
    confidence: float | None = None
    """The system's confidence, if it gave one."""
    prediction_id: str | None = None
    """The system's own id for the answer."""
    raw_output: dict[str, Any] | None = None
    """The system's untouched answer."""
    correct: bool
    """Whether the (mapped, if a label map is set) label equals the expected one."""
    error_type: str | None = None
    """Class name of the error when the call failed."""
    error_message: str | None = None
    """One-line error message when the call failed."""
    latency_ms: float
    """Duration of the last attempt in milliseconds."""
    attempts: int = 1
    """Calls made, retries included."""


class RunInfo(BaseModel):
    """A stored run's header, without its results."""

    id: str
    """Run id."""
    dataset_hash: str
    """Content hash of the dataset."""
    dataset_name: str
    """Dataset name."""
    system: dict[str, Any]
    """Description of the system under test (rebuildable)."""
    config: dict[str, Any]
    """Run options: k, concurrency, timeout, retries, label_map, limit, seed."""
    status: RunStatus
    """Where the run is."""
    n_pairs: int
    """(example, repetition) pairs the run must complete."""
    n_done: int = 0
    """Pairs completed so far."""
    created_at: datetime
    """When the run was created."""
    finished_at: datetime | None = None
    """When the run last finished, if it did."""
    elapsed_seconds: float = Field(default=0.0)
    """Wall-clock seconds spent running, summed over resumed segments."""


def _now() -> datetime:
    return datetime.now(UTC)


def new_run_id() -> str:
    """A short, sortable, unique run id: ``YYYYMMDD-HHMMSS-xxxxxx``."""
    return f"{_now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


class Store:
    """The run store. SQLite (WAL) by default; any SQLAlchemy URL, PostgreSQL included.

    Args:
        url: A SQLAlchemy database URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = create_engine(url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open the store {self.describe()}: {exc}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        try:
            Base.metadata.create_all(self.engine)
        except SQLAlchemyError as exc:
            cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise StoreUnavailable(f"cannot open the store {self.describe()}: {cause}") from None

    def close(self) -> None:
        """Release the connection pool."""
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    def save_dataset(self, dataset: Dataset) -> str:
        """Store the dataset under its content hash (once) and return the hash."""
        with self._session() as session, session.begin():
            if session.get(DatasetRow, dataset.content_hash) is None:
                session.add(
                    DatasetRow(
                        content_hash=dataset.content_hash,
                        name=dataset.name,
                        version=dataset.version,
                        n_examples=len(dataset.examples),
                        examples=[e.model_dump(mode="json") for e in dataset.examples],
                        created_at=_now(),
                    )
                )
        return dataset.content_hash

    def load_dataset(self, content_hash: str) -> Dataset:
        """The dataset stored under ``content_hash``."""
        with self._session() as session:
            row = session.get(DatasetRow, content_hash)
            if row is None:
                raise StoreError(f"no dataset with hash {content_hash[:12]} in the store")
            examples = [Example.model_validate(e) for e in row.examples]
            return Dataset(name=row.name, version=row.version, examples=examples)

    def create_run(
        self, *, dataset: Dataset, system: dict[str, Any], config: dict[str, Any], n_pairs: int
    ) -> str:
        """Register a new run in status ``running`` and return its id."""
        self.save_dataset(dataset)
        run_id = new_run_id()
        with self._session() as session, session.begin():
            session.add(
                RunRow(
                    id=run_id,
                    dataset_hash=dataset.content_hash,
                    system=system,
                    config=config,
                    status="running",
                    n_pairs=n_pairs,
                    created_at=_now(),
                )
            )
        return run_id

    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        """Append results of a run in one transaction."""
        if not results:
            return
        now = _now()
        rows = [{"run_id": run_id, "completed_at": now, **r.model_dump()} for r in results]
        # A Core executemany on the table, bypassing the ORM: results are the hot path.
        with self.engine.begin() as connection:
            connection.execute(insert(_RESULTS), rows)

    def set_status(
        self, run_id: str, status: RunStatus, *, add_elapsed: float = 0.0, finished: bool = False
    ) -> None:
        """Move a run to ``status``, adding ``add_elapsed`` seconds to its running time."""
        values: dict[str, Any] = {
            "status": status,
            "elapsed_seconds": RunRow.elapsed_seconds + add_elapsed,
        }
        if finished:
            values["finished_at"] = _now()
        with self._session() as session, session.begin():
            session.execute(update(RunRow).where(RunRow.id == run_id).values(**values))

    def get_run(self, run_id: str) -> RunInfo:
        """The header of one run; a unique prefix of its id is enough."""
        with self._session() as session:
            row = session.get(RunRow, run_id)
            if row is None:
                matches = session.scalars(
                    select(RunRow).where(RunRow.id.startswith(run_id, autoescape=True)).limit(2)
                ).all()
                if len(matches) != 1:
                    what = "no run" if not matches else "more than one run"
                    raise StoreError(f"{what} matches id {run_id!r} in {self.describe()}")
                row = matches[0]
            return self._info(session, row)

    def list_runs(self, *, limit: int = 50) -> list[RunInfo]:
        """The most recent runs, newest first."""
        with self._session() as session:
            rows = session.scalars(
                select(RunRow).order_by(RunRow.created_at.desc()).limit(limit)
            ).all()
            return [self._info(session, row) for row in rows]

    def results(self, run_id: str) -> list[PairResult]:
        """Every stored result of a run, ordered by example and repetition."""
        with self._session() as session:
            rows = session.scalars(
                select(ResultRow)
                .where(ResultRow.run_id == run_id)
                .order_by(ResultRow.example_id, ResultRow.repetition)
            ).all()
            return [PairResult.model_validate(row, from_attributes=True) for row in rows]

    def completed_pairs(self, run_id: str) -> set[tuple[str, int]]:
        """The (example_id, repetition) pairs of a run that already have a result."""
        with self._session() as session:
            rows = session.execute(
                select(ResultRow.example_id, ResultRow.repetition).where(ResultRow.run_id == run_id)
            ).all()
            return {(example_id, repetition) for example_id, repetition in rows}

    def describe(self) -> str:
        """The store's URL with any password hidden."""
        return make_url(self.url).render_as_string(hide_password=True)

    def _info(self, session: Session, row: RunRow) -> RunInfo:
        n_done = session.scalar(
            select(func.count()).select_from(ResultRow).where(ResultRow.run_id == row.id)
        )
        dataset_name = session.scalar(
            select(DatasetRow.name).where(DatasetRow.content_hash == row.dataset_hash)
        )
        return RunInfo(
            id=row.id,
            dataset_hash=row.dataset_hash,
            dataset_name=dataset_name or "?",
            system=row.system,
            config=row.config,
            status=row.status,
            n_pairs=row.n_pairs,
            n_done=n_done or 0,
            created_at=row.created_at,
            finished_at=row.finished_at,
            elapsed_seconds=row.elapsed_seconds,
        )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
