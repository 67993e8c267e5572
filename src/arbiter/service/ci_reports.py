"""What a CI summary of a stored run shows besides its report: its gate, its baseline.

``arbiter report RUN --format github|gitlab`` reads these: a run stored with a gate (an
eval file's ``[gate]``) is gated again with the floors it was stored with, without
signing anything (the report only shows the decision; ``arbiter gate`` makes and signs
it), and compared with the gate's baseline when it names one.
"""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.harness.diff import RunDiff
from arbiter.harness.gate import GateResult
from arbiter.service.compare import compare_runs
from arbiter.service.runs import GateFloors, StoredRun, gate_run
from arbiter.store import Store

__all__ = ["StoredGate", "stored_gate"]


@dataclass(frozen=True)
class StoredGate:
    """The gate a stored run carries, decided now, and its comparison with the baseline."""

    result: GateResult | None
    """The decision; None when the run was stored without a gate."""
    diff: RunDiff | None
    """The run compared with the gate's baseline (A the baseline); None without one."""


def stored_gate(store: Store, run: StoredRun, *, baseline: str | None = None) -> StoredGate:
    """Gate ``run`` with the gate it was stored with, and compare it with its baseline.

    Args:
        store: The store.
        run: The run.
        baseline: A run to compare with instead of the gate's baseline; a run stored
            without a gate is then gated as ``arbiter gate RUN --baseline BASELINE``
            gates it (the run checks and the regressions).

    Raises:
        InputError: The baseline is not comparable with the run.
        StoreError: The baseline run is not stored.
    """
    gate = run.info.run_config.gate
    base = baseline or (gate.baseline if gate is not None else None)
    if gate is None and base is None:
        return StoredGate(result=None, diff=None)
    floors = GateFloors.of(gate) if gate is not None else GateFloors()
    result = gate_run(store, run.info.id, floors, baseline=base, signer=None)
    diff = compare_runs(store, base, run.info.id).diff if base else None
    return StoredGate(result=result, diff=diff)
