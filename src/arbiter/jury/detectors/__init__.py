"""Deterministic string detectors: what the mock critics run.

Each family is a small pure function ``(task, context, output, settings) -> callouts``;
``run_detectors`` runs them all with one lens's ``DetectorSettings``. Every quote is a
verbatim slice of the output. Only the standard library is used.
"""

from arbiter.jury.detectors.entities import unsupported_names
from arbiter.jury.detectors.figures import contradicted_figures, inconsistent_figures
from arbiter.jury.detectors.lists import list_length_breaches
from arbiter.jury.detectors.markers import unsupported_markers
from arbiter.jury.detectors.polarity import polarity_flips
from arbiter.jury.detectors.settings import (
    DEFAULT_SETTINGS,
    LENS_SETTINGS,
    DetectorSettings,
    settings_for,
)
from arbiter.jury.detectors.suite import DETECTORS, Detector, run_detectors
from arbiter.jury.detectors.swaps import swapped_calendar_names, swapped_figures

__all__ = [
    "DEFAULT_SETTINGS",
    "DETECTORS",
    "LENS_SETTINGS",
    "Detector",
    "DetectorSettings",
    "contradicted_figures",
    "inconsistent_figures",
    "list_length_breaches",
    "polarity_flips",
    "run_detectors",
    "settings_for",
    "swapped_calendar_names",
    "swapped_figures",
    "unsupported_markers",
    "unsupported_names",
]
