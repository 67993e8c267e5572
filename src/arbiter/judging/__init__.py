"""The judging layer: the one place Arbiter calls a model to judge something.

A :class:`ModelRef` names the model; an :class:`Ask` says what to ask and how to read
the answer; :meth:`JudgingContext.ask` makes the call through the shared providers,
cache, budget and meter and returns a :class:`Judged`: the parsed answer, a status
(``ok`` · ``timeout`` · ``invalid`` · ``refused`` · ``error``) and the call's record
(:class:`~arbiter.contract.ModelCalls`: calls, cache hits, tokens, latency, cost).
:class:`QuotedAnswer` is the base of every answer that must quote its evidence and may
say ``unknown``. The rubric scorer, the jury's critics, the judge panels, the gate's
scope judge and the online judge chain keep only how they aggregate answers.
"""

from arbiter.judging.answer import QUOTED_VERDICTS, Quote, QuotedAnswer, QuotedVerdict, one_line
from arbiter.judging.ask import JUDGING_STATUSES, Ask, Judged, JudgingStatus, describe_calls
from arbiter.judging.context import CallBudget, CallMeter, JudgingContext
from arbiter.judging.model import ModelRef, Price
from arbiter.providers.base import Provider, close_provider
from arbiter.providers.parse import json_document

__all__ = [
    "JUDGING_STATUSES",
    "QUOTED_VERDICTS",
    "Ask",
    "CallBudget",
    "CallMeter",
    "Judged",
    "JudgingContext",
    "JudgingStatus",
    "ModelRef",
    "Price",
    "Provider",
    "Quote",
    "QuotedAnswer",
    "QuotedVerdict",
    "close_provider",
    "describe_calls",
    "json_document",
    "one_line",
]
