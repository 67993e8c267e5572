"""The one outbound HTTP layer: pooled clients, one exception map, one retry policy.

- :mod:`~arbiter.http.client`: ``HttpClient``, the pooled JSON client of providers,
  embedders and vector stores (httpx), bounded in time and answer size;
- :mod:`~arbiter.http.bodies`: bounded reading of aiohttp answers (the ``http`` system
  under test keeps aiohttp: a third of httpx's CPU per request);
- :mod:`~arbiter.http.errors`: the table from client-library failures and HTTP statuses
  to Arbiter's exception tree;
- :mod:`~arbiter.http.retry`: ``RetryPolicy`` and ``RetryBudget``, shared by systems
  under test and providers;
- :mod:`~arbiter.http.redact`: secrets (keys, URL passwords, ``?api_key=``) out of
  every message.

Importing this package imports no client library; each submodule imports what it uses.
"""
