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


def stored_gate(store: Store, run: StoredRun) -> StoredGate:
    """Gate ``run`` with the gate it was stored with, and compare it with its baseline.

    Raises:
        InputError: The baseline is not comparable with the run.
        StoreError: The baseline run is not stored.
    """
    gate = run.info.run_config.gate
    if gate is None:
        return StoredGate(result=None, diff=None)
    result = gate_run(store, run.info.id, GateFloors.of(gate), baseline=gate.baseline, signer=None)
    diff = compare_runs(store, gate.baseline, run.info.id).diff if gate.baseline else None
    return StoredGate(result=result, diff=diff)
