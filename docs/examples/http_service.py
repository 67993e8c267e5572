"""A stand-in for a Synapse-style `/ingest` service, to try `arbiter run --system http`.

    .venv/bin/python docs/examples/http_service.py            # http://127.0.0.1:8765/ingest
    FLAKY_EVERY=3 .venv/bin/python docs/examples/http_service.py   # every 3rd call: 503

POST /ingest {"source_id": ..., "payload": {"metric": ..., "value": ..., "limit": ...}}
answers {"axiom_id": ..., "source_id": ..., "status": "nominal|degraded|critical",
"anomaly_score": 0..1}, or 422 when the payload has no value.
"""

import itertools
import os

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

FLAKY_EVERY = int(os.environ.get("FLAKY_EVERY", "0"))
calls = itertools.count(1)


async def ingest(request: Request) -> JSONResponse:
    call = next(calls)
    if FLAKY_EVERY and call % FLAKY_EVERY == 0:
        return JSONResponse({"detail": "busy"}, status_code=503, headers={"Retry-After": "1"})
    event = await request.json()
    payload = event.get("payload", {})
    if payload.get("value") is None:
        return JSONResponse({"detail": "judge_rejected: payload.value is missing"}, 422)
    ratio = payload["value"] / payload["limit"]
    status = "critical" if ratio >= 1.0 else "degraded" if ratio >= 0.85 else "nominal"
    return JSONResponse(
        {
            "axiom_id": f"ax-{call}",
            "source_id": event.get("source_id"),
            "status": status,
            "anomaly_score": round(min(ratio, 1.0), 2),
        }
    )


app = Starlette(routes=[Route("/ingest", ingest, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8765")))
