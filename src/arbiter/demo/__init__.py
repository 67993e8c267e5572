"""The bundled demo of ``arbiter demo``: a transaction risk screener and its labelled data.

The system under test (:mod:`arbiter.demo.classifier`) grades each payment on a
four-level vocabulary, ``low | medium | high | critical``. The dataset
(``data/transactions.jsonl``, made by ``scripts/make_demo_dataset.py``) carries a
fraud team's confirmed, *binary* outcome: ``high`` for a threat, ``low`` for a
legitimate payment. Compared strictly, the screener looks poor, because ``medium``
and ``critical`` never occur in the ground truth; mapped to binary with
:data:`DEMO_LABEL_MAP` it is judged on what the ground truth can justify.
"""

from __future__ import annotations

import tempfile
from importlib.resources import files
from pathlib import Path

__all__ = ["DEMO_LABEL_MAP", "DEMO_TARGET", "dataset_path"]

DEMO_TARGET = "arbiter.demo.classifier:classify"
"""Import target of the demo's system under test, as ``module:callable``."""

DEMO_LABEL_MAP: dict[str, str] = {
    "low": "low",
    "medium": "high",
    "high": "high",
    "critical": "high",
}
"""Graded risk level → binary ground-truth label: anything but ``low`` counts as ``high``."""

_DATASET = "transactions.jsonl"


def dataset_path() -> Path:
    """Path of the bundled demo dataset, wherever the package is installed.

    Returns:
        A readable file path. For an ordinary (file-system) install it is the file
        inside the package; should the package be imported from a zip archive, the
        file is copied to the temporary directory first.
    """
    resource = files(__name__).joinpath("data", _DATASET)
    if isinstance(resource, Path):
        return resource
    copy = Path(tempfile.gettempdir()) / "arbiter-demo" / _DATASET
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(resource.read_bytes())
    return copy
