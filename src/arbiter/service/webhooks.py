"""Outgoing webhooks of trust events: signed, retried a bounded number of times, and
never in the way of ingest.

Each event is POSTed as JSON to every configured URL. The receiver can check it came
from this deployment: ``X-Arbiter-Timestamp`` carries the Unix time of sending, and
``X-Arbiter-Signature`` is ``sha256=<hex>``, the HMAC-SHA256 under the shared secret of
``<timestamp>.<raw body>``. Every delivery, delivered or not, is recorded; a failed one
is also a ``webhook_failure`` event of its own (which is not sent on, so a dead webhook
cannot feed itself).

Deliveries run as background tasks (:func:`dispatch`); :func:`drain` waits for those
under way (a test, a shutdown).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import httpx

from arbiter.contract.trust import TrustEvent, WebhookDelivery
from arbiter.errors import ArbiterError, InvalidResponse, InvalidSystemResponse
from arbiter.http.client import HttpClient
from arbiter.http.retry import RetryPolicy
from arbiter.store import Store
from arbiter.store.trust_repository import append_event, record_delivery

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "deliver", "dispatch", "drain", "sign_body"]

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Arbiter-Signature"
TIMESTAMP_HEADER = "X-Arbiter-Timestamp"

# asyncio keeps only weak references to tasks: these hold the deliveries under way.
_PENDING: set[asyncio.Task[None]] = set()


def sign_body(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _payload(event: TrustEvent) -> dict[str, object]:
    return {"type": "arbiter.trust_event", "event": event.model_dump(mode="json")}


async def deliver(
    store: Store,
    event: TrustEvent,
    urls: Sequence[str],
    *,
    secret: str | None,
    retries: int = 2,
    timeout: float = 5.0,  # noqa: ASYNC109 - bounds each delivery, retries included
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[WebhookDelivery]:
    """POST ``event`` to each URL and record how each delivery went.

    Never raises: a failure is recorded (and becomes a ``webhook_failure`` event).
    """
    document = _payload(event)
    # The exact bytes the client sends (it encodes JSON the same way).
    body = json.dumps(document, ensure_ascii=False, allow_nan=False).encode("utf-8")
    done: list[WebhookDelivery] = []
    async with HttpClient(
        side="system", transport=transport, retry=RetryPolicy(retries=retries, base_s=0.2)
    ) as client:
        for url in urls:
            stamp = str(int(time.time()))
            headers = {TIMESTAMP_HEADER: stamp}
            if secret:
                headers[SIGNATURE_HEADER] = sign_body(secret, stamp, body)
            before = client.calls
            error = ""
            try:
                await client.request(
                    "POST",
                    url,
                    json=document,
                    where=f"webhook {url}",
                    headers=headers,
                    timeout=timeout,
                    secrets=(secret,),
                )
            except (InvalidResponse, InvalidSystemResponse):
                pass  # a 2xx answer whose body is not JSON: delivered all the same
            except ArbiterError as exc:
                error = str(exc)
            except Exception as exc:  # a webhook must never fail its caller
                error = f"{type(exc).__name__}: {exc}"
            delivery = WebhookDelivery(
                event_id=event.id,
                url=url,
                delivered=not error,
                attempts=max(1, client.calls - before),
                error=error[:2000],
                created_at=datetime.now(UTC),
            )
            done.append(delivery)
            await asyncio.to_thread(_record, store, event, delivery)
    return done


def _record(store: Store, event: TrustEvent, delivery: WebhookDelivery) -> None:
    try:
        record_delivery(store, delivery)
        if not delivery.delivered:
            append_event(
                store,
                kind="webhook_failure",
                severity="warning",
                agent=event.agent,
                owner=event.owner,
                message=f"webhook {delivery.url[:200]} did not take event {event.id}",
                record_kind="trust_event",
                record_id=str(event.id),
                details={
                    "url": delivery.url[:2000],
                    "error": delivery.error,
                    "attempts": delivery.attempts,
                },
            )
    except ArbiterError as exc:
        log.warning("could not record a webhook delivery: %s", exc)


def dispatch(
    store: Store,
    event: TrustEvent,
    urls: Sequence[str],
    *,
    secret: str | None,
    retries: int = 2,
    timeout: float = 5.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> asyncio.Task[None] | None:
    """Deliver ``event`` in the background (None when no URL is configured)."""
    if not urls:
        return None

    async def run() -> None:
        try:
            await deliver(
                store,
                event,
                urls,
                secret=secret,
                retries=retries,
                timeout=timeout,
                transport=transport,
            )
        except Exception:  # never let a background delivery die loudly
            log.exception("webhook delivery failed")

    task = asyncio.get_running_loop().create_task(run())
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)
    return task


async def drain() -> None:
    """Wait for the deliveries under way."""
    while _PENDING:
        await asyncio.gather(*list(_PENDING), return_exceptions=True)
