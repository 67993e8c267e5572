"""OTLP ingest on ``arbiter serve --workers 2`` over a real PostgreSQL server: a trace's
spans taken by one server process and its log records by the other pair into one run
with its tool calls, in either order, because the buffer of recent traces is in the
store, not in a process."""

from __future__ import annotations

import http.client
import json
from typing import Any

from tests.helpers import otlp_json as otlp
from tests.server import test_serve_workers as serve_workers
from tests.server.test_serve_workers import _get, _one_connection_per_worker, needs_postgres

# ``arbiter serve --workers 2`` over an emptied PostgreSQL store (the fixtures it needs).
pg_env, two_workers = serve_workers.pg_env, serve_workers.two_workers

A, B = (f"{n:032x}" for n in (0xA1, 0xB2))


def _export(connection: http.client.HTTPConnection, path: str, document: dict[str, Any]) -> None:
    body = json.dumps(document).encode()
    connection.request("POST", path, body, {"Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 200, answer.read()
    assert json.loads(answer.read()) == {}  # every span and log record taken


def _tools_of(connection: http.client.HTTPConnection, trace: str) -> list[list[str]]:
    """The tool calls of each stored run of ``trace``, as a server process reads them."""
    status, page = _get(connection, "/v1/trajectories?limit=100")
    assert status == 200
    found = []
    for row in page["items"]:
        status, run = _get(connection, f"/v1/trajectories/{row['id']}")
        assert status == 200
        if run["trace_id"] == trace:
            steps = run["trajectory"]["steps"]
            found.append([step["name"] for step in steps if step["kind"] == "tool_call"])
    return found


@needs_postgres
def test_spans_and_log_records_sent_to_different_server_processes_pair(
    two_workers: tuple[str, list[int], int],
) -> None:
    _, pids, port = two_workers
    first, second = _one_connection_per_worker(port, pids).values()
    # Trace A: its spans to the first process, then its log records to the second.
    _export(first, "/v1/traces", otlp.traces(*otlp.agent_spans(A)))
    assert _tools_of(second, A) == [[]]  # stored at once, without its tool calls yet
    _export(second, "/v1/logs", otlp.logs(*otlp.tool_call_logs(A)))
    # Trace B the other way round: log records to the first, spans to the second.
    _export(first, "/v1/logs", otlp.logs(*otlp.tool_call_logs(B)))
    assert _tools_of(second, B) == []
    _export(second, "/v1/traces", otlp.traces(*otlp.agent_spans(B)))
    for connection in (first, second):
        assert _tools_of(connection, A) == [["get_order"]]
        assert _tools_of(connection, B) == [["get_order"]]
        connection.close()
