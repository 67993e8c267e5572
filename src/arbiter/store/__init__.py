"""The store: datasets by content hash, offline runs and results, jury and online records.

It persists the shapes of :mod:`arbiter.contract` and imports nothing else of Arbiter's
(but the exception tree), so every engine can be handed a store without depending on it.
"""

from arbiter.store import annotations_models as _annotations_models  # noqa: F401  (its table)
from arbiter.store import api_key_models as _api_key_models  # noqa: F401  (its table)
from arbiter.store import gate_models as _gate_models  # noqa: F401  (its tables)
from arbiter.store import otlp_buffer_models as _otlp_buffer_models  # noqa: F401  (its tables)
from arbiter.store import ownership_models as _ownership_models  # noqa: F401  (its table)
from arbiter.store import redteam_models as _redteam_models  # noqa: F401  (its table)
from arbiter.store import report_models as _report_models  # noqa: F401  (its tables)
from arbiter.store import signature_models as _signature_models  # noqa: F401  (its table)
from arbiter.store import trajectory_models as _trajectory_models  # noqa: F401  (its tables)
from arbiter.store import trust_models as _trust_models  # noqa: F401  (its tables)
from arbiter.store.repository import RunLease, Store, new_run_id

__all__ = ["RunLease", "Store", "new_run_id"]
