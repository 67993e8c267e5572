"""Schemathesis against /v1/openapi.json, in-process: no 5xx, every answer fits the document.

Each operation of the document gets examples generated from its schema, valid ones and
invalid ones; every answer must have a documented status and content type and match the
documented schema. The example count keeps the whole run well under a minute.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode, checks
from schemathesis.generation.case import Case
from schemathesis.schemas import BaseSchema

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store

checks.load_all_checks()
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
EXAMPLES = 10
"""Examples per operation and generation mode."""


def _load_schema() -> BaseSchema:
    """The REST API's document, loaded once through an app over an empty store (a file:
    the document is served like the API, after the key check asks the store)."""
    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite:///{Path(folder) / 'empty.db'}")
        try:
            app = create_app(Settings(home=Path("/nonexistent")), store=store)
            return schemathesis.openapi.from_asgi("/v1/openapi.json", app)
        finally:
            store.close()


SCHEMA = _load_schema()
OPERATIONS = [
    (method.upper(), path)
    for path, methods in SCHEMA.raw_schema["paths"].items()
    if path.startswith("/v1/")
    for method in methods
]


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_api_answers_as_documented(app: FastAPI, method: str, path: str) -> None:
    SCHEMA.app = app  # each test calls its own app, over its own copy of the seed
    operation = SCHEMA[path][method]
    strategy = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @given(case=strategy)
    @settings(
        max_examples=2 * EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_as_documented(case: Case) -> None:
        # call_and_validate raises on any check that fails; the statuses are kept to
        # show that examples ran and none was a server error.
        response = case.call_and_validate(checks=CHECKS)
        statuses.append(response.status_code)

    statuses: list[int] = []
    answers_as_documented()
    assert statuses, f"no example was generated for {method} {path}"
    assert all(code < 500 for code in statuses), statuses
