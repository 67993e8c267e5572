"""A small MCP server (official `mcp` SDK, streamable HTTP) to try `arbiter run --system mcp`.

    .venv/bin/python docs/examples/mcp_server.py               # stateful, SSE answers
    .venv/bin/python docs/examples/mcp_server.py --stateless   # no session, JSON answers

Serves http://127.0.0.1:8766/mcp with one tool, `classify-reading`, which grades a sensor
reading and says which `driver` (model provider) answered.
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel


class Verdict(BaseModel):
    status: str
    anomaly_score: float
    driver: str


server = MCPServer("sensor-health")


@server.tool(name="classify-reading")
def classify_reading(
    source_id: str, metric: str, value: float | None, limit: float, driver: str = "rules"
) -> Verdict:
    if value is None:
        raise ToolError(f"{source_id}: no value to classify")
    ratio = value / limit
    status = "critical" if ratio >= 1.0 else "degraded" if ratio >= 0.85 else "nominal"
    return Verdict(status=status, anomaly_score=round(min(ratio, 1.0), 2), driver=driver)


if __name__ == "__main__":
    stateless = "--stateless" in sys.argv
    app = server.streamable_http_app(stateless_http=stateless, json_response=stateless)
    uvicorn.run(app, host="127.0.0.1", port=8766, log_level="warning")
