"""Vector stores: an exact embedded store persisted on disk, and Upstash Vector over REST.

Both satisfy :class:`arbiter.vectors.base.VectorStore` and report cosine similarity in
[-1, 1]. A query or upsert whose dimension differs from the namespace's raises
``InputError`` at that very call: a silent empty result would read as "nothing similar".
``UpstashVectorStore`` lives in :mod:`arbiter.vectors.upstash` and is re-exported here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arbiter.errors import InputError, StoreError, StoreUnavailable
from arbiter.params import check_number
from arbiter.vectors.base import Match, VectorItem
from arbiter.vectors.upstash import UpstashVectorStore

__all__ = ["EmbeddedVectorStore", "UpstashVectorStore"]

Matrix = npt.NDArray[np.float32]

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_DEFAULT_FOLDER = "_default"  # the default namespace ""; user names cannot start with "_"
_MAX_SEGMENTS = 512


class _Namespace:
    """One namespace in memory: unit rows (with spare capacity), ids, metadata, segments."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.matrix: Matrix = np.empty((0, dimension), dtype=np.float32)
        self.ids: list[str] = []
        self.metadata: list[dict[str, Any]] = []
        self.rows: dict[str, int] = {}
        self.segments: list[Path] = []
        self.base_rows = 0  # rows in the first segment (the last merge)
        self.tail_rows = 0  # rows written in the segments after it

    def apply(self, ids: Sequence[str], unit: Matrix, metadata: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows; within one batch the last occurrence of an id wins."""
        latest = {item_id: i for i, item_id in enumerate(ids)}
        fresh = sum(1 for item_id in latest if item_id not in self.rows)
        if len(self.ids) + fresh > self.matrix.shape[0]:
            capacity = max(len(self.ids) + fresh, 2 * self.matrix.shape[0], 64)
            grown = np.empty((capacity, self.dimension), dtype=np.float32)
            grown[: len(self.ids)] = self.matrix[: len(self.ids)]
            self.matrix = grown
        targets = np.empty(len(latest), dtype=np.intp)
        for n, (item_id, i) in enumerate(latest.items()):
            row = self.rows.get(item_id)
            if row is None:
                row = self.rows[item_id] = len(self.ids)
                self.ids.append(item_id)
                self.metadata.append(metadata[i])
            else:
                self.metadata[row] = metadata[i]
            targets[n] = row
        self.matrix[targets] = unit[np.fromiter(latest.values(), dtype=np.intp)]


class EmbeddedVectorStore:
    """Exact cosine top-k in process with numpy, persisted on disk when given a folder.

    A namespace lives in memory as one float32 matrix of unit rows, so a query is one
    matrix-vector product and an ``argpartition``: a few milliseconds for 100,000
    vectors of 384 dimensions. On disk a namespace is a folder of segments
    (``seg-00000001.npz``: the unit vectors, ids and metadata of one upsert), each
    written to a temporary file and renamed into place, so a crash never leaves half a
    segment; later segments replace rows of earlier ones with the same id. Segments are
    merged into one, atomically too, when the newer ones hold as many rows as the
    oldest or more than 512 pile up. A namespace is read from disk at its first use;
    one process should own a folder at a time. Work runs in a worker thread, so the
    event loop is never blocked.

    Args:
        path: Folder to persist namespaces in (created at the first upsert); None keeps
            everything in memory.

    Examples:
        >>> store = EmbeddedVectorStore()
        >>> asyncio.run(store.upsert("t", [VectorItem(id="a", vector=[1, 0])]))
        >>> [m.id for m in asyncio.run(store.query("t", [0.9, 0.1], top_k=1))]
        ['a']
    """

    name = "embedded"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._spaces: dict[str, _Namespace] = {}
        self._lock = threading.Lock()

    async def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        """Insert or replace items by id.

        Raises:
            InputError: A bad namespace name, vectors of another dimension than the
                namespace's (or mixed), a zero or non-finite vector, metadata that is
                not JSON.
            StoreUnavailable: The folder cannot be written.
        """
        await asyncio.to_thread(self._upsert, namespace, list(items))

    async def query(
        self, namespace: str, vector: Sequence[float], *, top_k: int = 5
    ) -> list[Match]:
        """The ``top_k`` items of highest cosine similarity, best first (ties: oldest first).

        Raises:
            InputError: A bad namespace name, a vector of another dimension than the
                namespace's, a zero or non-finite vector.
            StoreError: A segment on disk cannot be read.
        """
        check_number(top_k, "top_k", "query", minimum=1, integer=True)
        return await asyncio.to_thread(self._query, namespace, vector, top_k)

    def _upsert(self, namespace: str, items: list[VectorItem]) -> None:
        where = _where(namespace)
        if not items:
            return
        lengths = sorted({len(item.vector) for item in items})
        if len(lengths) > 1:
            raise InputError(f"{where}: one upsert mixes vectors of dimensions {lengths}")
        unit = _unit_rows(np.array([item.vector for item in items], dtype=np.float64), where)
        ids = [item.id for item in items]
        metadata = [dict(item.metadata) for item in items]
        with self._lock:
            space = self._load(namespace) or _Namespace(unit.shape[1])
            _check_dimension(space, unit.shape[1], namespace)
            if self.path is not None:
                self._write_segment(namespace, space, ids, unit, metadata)
                if len(space.segments) == 1:
                    space.base_rows += len(ids)
                else:
                    space.tail_rows += len(ids)
            space.apply(ids, unit, metadata)
            self._spaces[namespace] = space
            segments = len(space.segments)
            if segments > 1 and (space.tail_rows >= space.base_rows or segments > _MAX_SEGMENTS):
                self._merge(namespace, space)

    def _query(self, namespace: str, vector: Sequence[float], top_k: int) -> list[Match]:
        where = _where(namespace)
        try:
            query = np.array(vector, dtype=np.float64)  # a copy: it is scaled in place
        except (TypeError, ValueError):
            raise InputError(f"{where}: the query vector is not a list of numbers") from None
        if query.ndim != 1 or query.size == 0:
            raise InputError(f"{where}: the query vector must be a non-empty list of numbers")
        unit = _unit_rows(query[None, :], where)[0]
        with self._lock:
            space = self._load(namespace)
            if space is None or not space.ids:
                return []
            _check_dimension(space, unit.shape[0], namespace)
            size = len(space.ids)
            scores = space.matrix[:size] @ unit
            k = min(top_k, size)
            top = np.argpartition(scores, size - k)[size - k :] if k < size else np.arange(size)
            order = top[np.lexsort((top, -scores[top]))]
            return [
                Match(
                    id=space.ids[i],
                    score=float(np.clip(scores[i], -1.0, 1.0)),
                    metadata=space.metadata[i],
                )
                for i in order
            ]

    def _folder(self, namespace: str) -> Path:
        assert self.path is not None
        return self.path / (namespace or _DEFAULT_FOLDER)

    def _load(self, namespace: str) -> _Namespace | None:
        """The namespace, read from its segments on first use; None if it holds nothing."""
        if namespace in self._spaces:
            return self._spaces[namespace]
        if self.path is None or not self._folder(namespace).is_dir():
            return None
        folder = self._folder(namespace)
        for leftover in folder.glob("*.tmp"):  # a write that crashed before its rename
            leftover.unlink(missing_ok=True)
        segments = sorted(folder.glob("seg-*.npz"))
        space: _Namespace | None = None
        for n, segment in enumerate(segments):
            vectors, ids, metadata = _read_segment(segment)
            space = space or _Namespace(vectors.shape[1])
            if vectors.shape[1] != space.dimension:
                raise StoreError(
                    f"{segment}: {vectors.shape[1]}-dim vectors among "
                    f"{space.dimension}-dim ones; the folder is corrupt"
                )
            space.apply(ids, vectors, metadata)
            if n == 0:
                space.base_rows = len(ids)
            else:
                space.tail_rows += len(ids)
        if space is not None:
            space.segments = segments
            self._spaces[namespace] = space
        return space

    def _write_segment(
        self,
        namespace: str,
        space: _Namespace,
        ids: Sequence[str],
        unit: Matrix,
        metadata: Sequence[dict[str, Any]],
    ) -> None:
        try:
            records = json.dumps([[i, m] for i, m in zip(ids, metadata, strict=True)])
        except (TypeError, ValueError) as exc:
            raise InputError(f"{_where(namespace)}: metadata must be JSON: {exc}") from None
        folder = self._folder(namespace)
        number = int(space.segments[-1].stem[4:]) + 1 if space.segments else 1
        target = folder / f"seg-{number:08d}.npz"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    blob = np.frombuffer(records.encode("utf-8"), dtype=np.uint8)
                    np.savez(file, vectors=unit, records=blob)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, target)
            finally:
                Path(temporary).unlink(missing_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"{_where(namespace)}: cannot write {target}: {exc}") from None
        space.segments.append(target)

    def _merge(self, namespace: str, space: _Namespace) -> None:
        """Rewrite the namespace as one segment, then delete the older ones."""
        older = list(space.segments)
        size = len(space.ids)
        self._write_segment(namespace, space, space.ids, space.matrix[:size], space.metadata)
        for segment in older:  # a crash here only leaves segments the merged one overrides
            segment.unlink(missing_ok=True)
        space.segments = space.segments[-1:]
        space.base_rows, space.tail_rows = size, 0


def _where(namespace: str) -> str:
    if namespace and not _NAMESPACE.fullmatch(namespace):
        raise InputError(
            f"namespace {namespace!r}: use up to 128 letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    return f"namespace {namespace!r}"


def _check_dimension(space: _Namespace, dimension: int, namespace: str) -> None:
    if dimension != space.dimension:
        raise InputError(
            f"namespace {namespace!r} holds {space.dimension}-dim vectors; got {dimension}"
        )


def _unit_rows(vectors: npt.NDArray[np.float64], where: str) -> Matrix:
    if not np.isfinite(vectors).all():
        raise InputError(f"{where}: a vector holds NaN or infinity")
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    if (norms == 0).any():
        raise InputError(f"{where}: a zero vector has no direction; its cosine is undefined")
    vectors /= norms[:, None]
    unit: Matrix = vectors.astype(np.float32)
    return unit


def _read_segment(segment: Path) -> tuple[Matrix, list[str], list[dict[str, Any]]]:
    try:
        with np.load(segment, allow_pickle=False) as archive:
            vectors: Matrix = archive["vectors"].astype(np.float32, copy=False)
            records = json.loads(archive["records"].tobytes().decode("utf-8"))
    except OSError as exc:
        raise StoreUnavailable(f"cannot read vector segment {segment}: {exc}") from None
    except (ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise StoreError(f"vector segment {segment} is corrupt: {exc}") from None
    if vectors.ndim != 2 or len(records) != vectors.shape[0]:
        raise StoreError(f"vector segment {segment} is corrupt: rows and records differ")
    return vectors, [str(r[0]) for r in records], [dict(r[1]) for r in records]
