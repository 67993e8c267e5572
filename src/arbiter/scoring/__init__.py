"""Scoring: the ``Scorer`` model, its registry, and the built-in scorers.

- :mod:`~arbiter.scoring.base`: ``@scorer``, ``ScorerFactory``, ``BuiltScorer``;
- :mod:`~arbiter.scoring.registry`: ``ScorerRegistry`` and the ``NAME:ARG=VALUE`` syntax;
- :mod:`~arbiter.scoring.files`: arguments that name a file (``FileArgument``, ``TextFile``);
- :mod:`~arbiter.scoring.metrics`: label-level figures equal to scikit-learn's;
- one module per family of built-in scorers (``labels``, ...).
"""
