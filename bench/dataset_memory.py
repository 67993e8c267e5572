"""What a big dataset costs the driver: building it, hashing it, storing it (issue 21).

Run: ``python bench/dataset_memory.py [--n 1000000] [--rounds 2]``.

Each figure is of a fresh process (its peak RSS, ``VmHWM``, its own): it builds ``n``
examples as ``bench/engine_scale.py``'s big run does, then does one step, the old way
(a copy of 0.5's code, kept here) or the new (the package's). Old and new alternate,
round after round, so both meet the same load on a shared machine. A benchmark, never a
test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STEPS = ("hash", "save")


def _hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _old_hash(dataset: Any) -> str:
    """0.5's ``Dataset.content_hash``: the whole list dumped to one string."""
    payload = [e.canonical_dump() for e in dataset.examples]
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _old_save(store: Any, dataset: Any, content_hash: str) -> None:
    """0.5's ``Store.save_dataset``: every example's dict in one JSON column value."""
    from arbiter.store.models import DatasetRow

    with store.session() as session, session.begin():
        session.add(
            DatasetRow(
                content_hash=content_hash,
                name=dataset.name,
                version=dataset.version,
                n_examples=len(dataset.examples),
                examples=[e.model_dump(mode="json") for e in dataset.examples],
                created_at=datetime.now(UTC),
            )
        )


def child(step: str, way: str, n: int) -> None:
    from arbiter.contract import Dataset, Example
    from arbiter.store import Store

    started = time.perf_counter()
    dataset = Dataset(
        name="big",
        examples=[Example(id=f"b-{i}", input={"q": "x"}, expected="x") for i in range(n)],
    )
    built_s, built_mb = time.perf_counter() - started, _hwm_mb()
    store = None
    if step == "save":  # the hash first, the new way for both: only the write differs
        content_hash = dataset.content_hash
        folder = Path(tempfile.mkdtemp(prefix="dataset-memory-"))
        store = Store(f"sqlite:///{folder / 'store.db'}")
        built_mb = _hwm_mb()
    started = time.perf_counter()
    if step == "hash":
        digest = _old_hash(dataset) if way == "old" else dataset.content_hash
    else:
        assert store is not None
        if way == "old":
            _old_save(store, dataset, content_hash)
        else:
            store.save_dataset(dataset)
        digest = content_hash
        store.close()
    seconds = time.perf_counter() - started
    print(json.dumps({"step": step, "way": way, "n": n, "built_s": built_s,
                      "built_mb": built_mb, "peak_mb": _hwm_mb(), "seconds": seconds,
                      "digest": digest}))  # fmt: skip


def _run(step: str, way: str, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, way, str(n)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures: dict[str, Any] = json.loads(out.splitlines()[-1])
    figures["load"] = Path("/proc/loadavg").read_text().split()[0]
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="examples")
    parser.add_argument("--rounds", type=int, default=2, help="old/new pairs per step")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        step, way, n = options.child
        child(step, way, int(n))
        return 0
    print(f"dataset_memory: {options.n:,} examples, {os.cpu_count()} CPUs")
    for step in STEPS:
        digests = set()
        for round_ in range(options.rounds):
            for way in ("old", "new"):
                f = _run(step, way, options.n)
                digests.add(f["digest"])
                print(f"  {step:5} {way}  round {round_ + 1}: built {f['built_mb']:7.1f} MB "
                      f"({f['built_s']:.1f} s), peak {f['peak_mb']:7.1f} MB "
                      f"(+{f['peak_mb'] - f['built_mb']:6.1f} MB), {step} {f['seconds']:.2f} s, "
                      f"load {f['load']}")  # fmt: skip
        print(f"  {step}: {'the same digest' if len(digests) == 1 else 'DIGESTS DIFFER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
