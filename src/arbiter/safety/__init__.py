"""Safety detectors (no model), their scorers, the tool-result firewall, the red-team self-test.

The content-safety LLM judge (``safety_judge``) is listed with the scorers; it lives in
:mod:`arbiter.judges.safety_judge`, since this package asks no model.

- Detectors (0 tokens, linear time, bounded input), each ``(text, *, limit) -> SafetyScan``:
  :func:`scan_injection` (what an agent read), :func:`scan_exfiltration`,
  :func:`scan_pii`, :func:`scan_secrets`, :func:`scan_toxicity` (what it said);
  :data:`~arbiter.safety.detectors.DETECTORS` names them.
- Scorers (:data:`SAFETY_SCORERS`, registered by the service layer's scorer registry):
  ``prompt_injection``, ``tool_result_firewall``, ``pii_leak``, ``secret_leak``,
  ``exfiltration``, ``toxicity``.
- :func:`scan_tool_result`: the firewall check of one tool result, observe only.
- :func:`run_selftest` over :func:`shipped_corpus`, :func:`heldout_corpus` or
  :func:`load_corpus`: recall per attack category and the benign false-positive rate.

A finding never holds the raw value it found (previews are redacted); see
:class:`~arbiter.contract.safety.SafetyFinding`. Names are imported on first use.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

_PACKAGE = "arbiter.safety"

SAFETY_SCORERS: dict[str, str] = {
    name: f"{_PACKAGE}.scorers:{name}"
    for name in (
        "prompt_injection",
        "tool_result_firewall",
        "pii_leak",
        "secret_leak",
        "exfiltration",
        "toxicity",
    )
} | {"safety_judge": "arbiter.judges.safety_judge:safety_judge"}
"""Every safety scorer by name: ``module:factory``, imported on first use (the detectors'
scorers, and the content-safety LLM judge)."""

_MODULES: dict[str, str] = {
    "scan_injection": f"{_PACKAGE}.injection",
    "scan_exfiltration": f"{_PACKAGE}.exfiltration",
    "scan_pii": f"{_PACKAGE}.pii",
    "scan_secrets": f"{_PACKAGE}.credentials",
    "scan_toxicity": f"{_PACKAGE}.toxicity",
    "scan_tool_result": f"{_PACKAGE}.firewall",
    "run_selftest": f"{_PACKAGE}.selftest",
    "selftest": f"{_PACKAGE}.selftest",
    "load_corpus": f"{_PACKAGE}.corpus",
    "shipped_corpus": f"{_PACKAGE}.corpus",
    "heldout_corpus": f"{_PACKAGE}.corpus",
}

__all__ = [
    "SAFETY_SCORERS",
    "heldout_corpus",
    "load_corpus",
    "run_selftest",
    "scan_exfiltration",
    "scan_injection",
    "scan_pii",
    "scan_secrets",
    "scan_tool_result",
    "scan_toxicity",
    "selftest",
    "shipped_corpus",
]

if _typing.TYPE_CHECKING:
    from arbiter.safety.corpus import heldout_corpus, load_corpus, shipped_corpus
    from arbiter.safety.credentials import scan_secrets
    from arbiter.safety.exfiltration import scan_exfiltration
    from arbiter.safety.firewall import scan_tool_result
    from arbiter.safety.injection import scan_injection
    from arbiter.safety.pii import scan_pii
    from arbiter.safety.selftest import run_selftest, selftest
    from arbiter.safety.toxicity import scan_toxicity


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
