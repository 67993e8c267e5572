"""Every detector, run with one lens's sensitivities."""

from __future__ import annotations

from collections.abc import Callable

from arbiter.contract import Callout
from arbiter.jury.detectors.entities import unsupported_names
from arbiter.jury.detectors.figures import contradicted_figures, inconsistent_figures
from arbiter.jury.detectors.lists import list_length_breaches
from arbiter.jury.detectors.markers import unsupported_markers
from arbiter.jury.detectors.polarity import polarity_flips
from arbiter.jury.detectors.settings import DetectorSettings, settings_for
from arbiter.jury.detectors.swaps import swapped_calendar_names, swapped_figures

__all__ = ["DETECTORS", "Detector", "run_detectors"]

Detector = Callable[[str, str, str, DetectorSettings], list[Callout]]
"""A detector: ``(task, context, output, settings) -> callouts``."""

DETECTORS: dict[str, Detector] = {
    "figures": contradicted_figures,
    "inconsistency": inconsistent_figures,
    "polarity": polarity_flips,
    "list_length": list_length_breaches,
    "unsupported": unsupported_markers,
    "figure_swaps": swapped_figures,
    "calendar_swaps": swapped_calendar_names,
    "unsupported_names": unsupported_names,
}
"""The detector families, in the order their callouts are listed."""


def run_detectors(
    task: str,
    context: str,
    output: str,
    *,
    lens: str,
    settings: DetectorSettings | None = None,
) -> list[Callout]:
    """Run every detector with the sensitivities of ``lens``.

    Args:
        task: What the output was asked to do.
        context: The source the output must stay faithful to.
        output: The output under judgement.
        lens: ``factual``, ``logical``, ``adversary``; any other name gets
            ``DEFAULT_SETTINGS``.
        settings: Sensitivities overriding the lens's preset.

    Returns:
        The callouts of all detectors, one per (dimension, kind, quote), each quote a
        verbatim slice of ``output``.

    Examples:
        >>> [c.kind for c in run_detectors("Summarise.", "Refunds within 30 days.",
        ...     "Refunds within 45 days.", lens="factual")]
        ['contradicted']
    """
    chosen = settings if settings is not None else settings_for(lens)
    seen: set[tuple[str, str, str]] = set()
    callouts: list[Callout] = []
    for detector in DETECTORS.values():
        for callout in detector(task, context, output, chosen):
            key = (callout.dimension, callout.kind, callout.quote)
            if key not in seen:
                seen.add(key)
                callouts.append(callout)
    return callouts
