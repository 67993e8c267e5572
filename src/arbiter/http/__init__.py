"""The one outbound HTTP layer: one client, one answer reader, one exception map, one retry policy.

- :mod:`~arbiter.http.client`: ``HttpClient``, the pooled JSON client of every outbound
  call (the ``http`` system under test, the HTTP agent executor, providers, embedders,
  vector stores), bounded in time and answer size;
- :mod:`~arbiter.http.bodies`: reading an answer: its body within a size bound, its text,
  its JSON (by the project's one JSON reader);
- :mod:`~arbiter.http.wire` and :mod:`~arbiter.http.wire_aiohttp`: what carries the
  client's requests: httpx, or aiohttp for the ``http`` system (its throughput at high
  concurrency, measured by ``bench/http_client.py``);
- :mod:`~arbiter.http.sdk`: the httpx2 client handed to an SDK that speaks HTTP itself
  (the ``mcp`` SDK), with the same failure table, size bound and Retry-After reading;
- :mod:`~arbiter.http.errors`: the table from client-library failures and HTTP statuses
  to Arbiter's exception tree;
- :mod:`~arbiter.http.retry`: ``RetryPolicy`` and ``RetryBudget``, shared by systems
  under test and providers;
- :mod:`~arbiter.http.redact`: secrets (keys, URL passwords, ``?api_key=``) out of
  every message.

Importing this package imports no client library; each submodule imports what it uses.
"""
