"""What a model scorer records when its judging call brought no answer.

A scorer that asks one model (the rubric, the content-safety judge) turns a call that
timed out, failed or answered outside the schema into an errored score: never a pass or
a fail, and always with the call's record, since an answer that could not be read was
still billed and a timed-out call may have been.
"""

from __future__ import annotations

from typing import Any

from arbiter.contract import Score
from arbiter.judging import Judged, one_line

__all__ = ["MAX_ERROR", "errored_score"]

MAX_ERROR = 500
"""Characters of an errored score's line (it may carry model or server text)."""


def errored_score(judged: Judged[Any], judge: str, timeout: float) -> Score | None:
    """The errored score of a call without an answer; None when the call answered.

    Args:
        judged: What the judging layer returned.
        judge: ``provider model``, as the error line names the judge.
        timeout: The judge's timeout in seconds, for the timeout's line.

    Examples:
        >>> from arbiter.contract import ModelCalls
        >>> cut = Judged("invalid", None, ModelCalls(calls=1, output_tokens=64),
        ...              error="InvalidResponse: llama_cpp m: cut off at max_output_tokens")
        >>> errored_score(cut, "llama_cpp m", 60).error
        'InvalidResponse: llama_cpp m: cut off at max_output_tokens'
    """
    calls = judged.calls
    if judged.status == "timeout":
        error = f"ProviderTimeout: {judge}: no judgement within {timeout:g}s"
        return Score(error=error, model=calls)
    if judged.status == "invalid":
        # The call succeeded and cost tokens: an errored score that keeps them. A
        # provider that names itself and the model first is not named twice.
        detail = (judged.error or "").removeprefix("InvalidResponse: ")
        named = detail if detail.startswith(f"{judge}:") else f"{judge}: {detail}"
        return Score(error=one_line(f"InvalidResponse: {named}", MAX_ERROR), model=calls)
    if judged.answer is None:
        return Score(error=one_line(judged.error or f"{judge}: no answer", MAX_ERROR), model=calls)
    return None
