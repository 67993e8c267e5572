"""Online scoring of unlabelled traffic: layered, cost-ordered, bounded, never raising.

::

    from arbiter.online import OnlineConfig, OnlineScorer, build_pipeline

    pipeline = build_pipeline(OnlineConfig.load("online.json"))
    scorer = OnlineScorer(pipeline, on_result=print)
    scorer.submit({"id": "evt-1", "label": "nominal", "confidence": 0.93, "raw_output": {...}})

A layer of one's own implements ``Layer`` and joins with ``build_pipeline(config,
layers=[...])`` or ``OnlinePipeline(layers=[...])``.
"""

from arbiter.contract import OnlineResult
from arbiter.online.build import build_pipeline, evaluate_item, evaluate_item_sync
from arbiter.online.config import OnlineConfig
from arbiter.online.layer import Layer, LayerContext, NotRun
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.scorer import OnlineScorer

__all__ = [
    "Layer",
    "LayerContext",
    "NotRun",
    "OnlineConfig",
    "OnlinePipeline",
    "OnlineResult",
    "OnlineScorer",
    "build_pipeline",
    "evaluate_item",
    "evaluate_item_sync",
]
