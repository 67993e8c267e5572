"""The bundled demo of ``arbiter demo``: a transaction risk screener and its labelled data.

The system under test (:mod:`arbiter.demo.classifier`) grades each payment on a
four-level vocabulary, ``low | medium | high | critical``. The dataset
(``data/transactions.jsonl``, made by ``scripts/make_demo_dataset.py``) carries a
fraud team's confirmed, *binary* outcome: ``high`` for a threat, ``low`` for a
legitimate payment. Compared strictly, the screener looks poor, because ``medium``
and ``critical`` never occur in the ground truth; mapped to binary with
:data:`DEMO_LABEL_MAP` it is judged on what the ground truth can justify.

The free-text demo pairs 200 short-answer questions (``data/qa.jsonl``, made by
``scripts/make_qa_dataset.py``) with two versions of a simulated LLM app
(:mod:`arbiter.demo.qa`, :data:`QA_TARGET` and :data:`QA_TARGET_V2`) that answer
them right, verbosely, in part or wrongly, so a run shows what each text scorer sees
and a diff of the two versions shows flips both ways.

The agents demo (``data/trajectories.jsonl``, made by
``scripts/make_demo_trajectories.py``) holds sample agent runs of several formats, which
``arbiter demo`` scores and stores so ``arbiter serve`` shows an agents roster.
"""

from __future__ import annotations

import tempfile
from importlib.resources import files
from pathlib import Path

__all__ = [
    "DEMO_LABEL_MAP",
    "DEMO_TARGET",
    "QA_TARGET",
    "QA_TARGET_V2",
    "dataset_path",
    "qa_dataset_path",
    "trajectories_path",
]

DEMO_TARGET = "arbiter.demo.classifier:classify"
"""Import target of the demo's system under test, as ``module:callable``."""

DEMO_LABEL_MAP: dict[str, str] = {
    "low": "low",
    "medium": "high",
    "high": "high",
    "critical": "high",
}
"""Graded risk level → binary ground-truth label: anything but ``low`` counts as ``high``."""

QA_TARGET = "arbiter.demo.qa:answer"
"""Import target of the free-text demo's system under test, version 1."""

QA_TARGET_V2 = "arbiter.demo.qa:answer_v2"
"""Import target of the free-text demo's system under test, version 2 (to diff against)."""

_DATASET = "transactions.jsonl"
_QA_DATASET = "qa.jsonl"
_TRAJECTORIES = "trajectories.jsonl"


def dataset_path() -> Path:
    """Path of the bundled demo dataset, wherever the package is installed.

    Returns:
        A readable file path. For an ordinary (file-system) install it is the file
        inside the package; should the package be imported from a zip archive, the
        file is copied to the temporary directory first.
    """
    return _bundled(_DATASET)


def qa_dataset_path() -> Path:
    """Path of the bundled free-text QA dataset (200 questions), as :func:`dataset_path`."""
    return _bundled(_QA_DATASET)


def trajectories_path() -> Path:
    """Path of the bundled sample agent runs (one submission a line), as :func:`dataset_path`."""
    return _bundled(_TRAJECTORIES)


def _bundled(name: str) -> Path:
    """A readable path of the data file ``name``: in the package, or copied out of a zip."""
    resource = files(__name__).joinpath("data", name)
    if isinstance(resource, Path):
        return resource
    copy = Path(tempfile.gettempdir()) / "arbiter-demo" / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(resource.read_bytes())
    return copy
