"""docs/trust.md's walk-through: a server, a webhook receiver, three agents, one degrading.

Starts ``arbiter serve``'s app with uvicorn on a loopback port and a webhook receiver
beside it, ingests runs for three agents over REST, and prints what happened. The gate's
scope judge is a stand-in that rules every answer drifted (no model is called).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import threading
from typing import Any

import httpx
import uvicorn

os.environ["ARBITER_TRUST_POLICY"] = "docs/trust/freeze.toml"
os.environ["ARBITER_TRUST_WEBHOOK_SECRET"] = "walkthrough-secret"

from arbiter.config import Settings
from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.server.app import create_app

received: list[tuple[dict[str, str], bytes]] = []
arrived = threading.Event()


async def receiver(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    received.append(({k.decode(): v.decode() for k, v in scope["headers"]}, body))
    arrived.set()
    start = {"type": "http.response.start", "status": 200, "headers": []}
    await send(start)
    await send({"type": "http.response.body", "body": b"{}"})


def serve(app: Any) -> tuple[str, uvicorn.Server]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # requests queue here until uvicorn takes them
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


class DriftJudge:
    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="the answer is about HR data")


hook_url, hook = serve(receiver)
os.environ["ARBITER_TRUST_WEBHOOK_URLS"] = hook_url + "/hook"
app = create_app(Settings())
app.state.gate_judge = DriftJudge()
base, server = serve(app)
client = httpx.Client(base_url=base, timeout=30)


def run(agent: str, cost: float) -> None:
    steps = [{"kind": "llm_call", "model": "m", "cost_usd": cost}]
    trajectory = {"agent": {"name": agent}, "status": "completed", "steps": steps}
    body = {"trajectory": {**trajectory, "final_answer": "Done."}}
    client.post("/v1/trajectories", json=body).raise_for_status()


for i in range(60):
    run("steady", 0.01)
    run("careful", 0.01 if i % 10 else 0.5)  # one run in ten over the danger line
    run("sliding", 0.01 if i < 20 else 0.5)  # good for 20 runs, then every run fails

for agent in ("steady", "careful", "sliding"):
    t = client.get(f"/v1/agents/{agent}/trust").json()
    print(f"{agent}: {t['state']}, {t['runs']} runs, autonomous {str(t['autonomous']).lower()}")

arrived.wait(timeout=30)
headers, raw = received[0]
stamp = headers["x-arbiter-timestamp"]
expected = hmac.new(b"walkthrough-secret", stamp.encode() + b"." + raw, hashlib.sha256)
print(
    f"webhook calls: {len(received)}, signature valid: "
    f"{headers['x-arbiter-signature'] == 'sha256=' + expected.hexdigest()}"
)

inbox = client.get("/v1/assurance/inbox").json()
print(f"inbox: {[e['kind'] for e in inbox['items']]}, unacknowledged {inbox['unacked']}")

question = {
    "agent": "sliding",
    "question": "What did sales cost us?",
    "answer": "Per the hr.salaries table, 4.2M.",
    "scope": {"databases": ["sales"], "description": "sales orders"},
    "mode": "enforce",
}
gate = client.post("/v1/gate", json=question).json()
print(f"gate for sliding: mode {gate['mode']}, action {gate['action']}")
decision = gate["decision"]["id"]
review = client.post(
    f"/v1/assurance/reviews/{decision}/approve",
    json={"note": "checked by hand", "release_original": True},
).json()
print(f"review: {review['status']}, original released: {review['answer']!r}")

history = client.get("/v1/agents/sliding/trust/history").json()
print("history: " + ", ".join(item["kind"] for item in history))
server.should_exit = hook.should_exit = True
