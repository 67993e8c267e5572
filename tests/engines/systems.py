"""Systems under test of the engine tests, loaded by path in Ray's workers.

A question may carry ``check_in``: a port of the test's own listener. The first call in
each process then connects to it, sends the process's pid and waits for the test's word,
so a test can kill a worker by pid while it is running a batch, or hold a run open.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

_CHECKED_IN: list[int] = []


def answer(inputs: dict[str, Any]) -> str:
    """The question's answer, upper-cased when asked; a question marked ``fail`` raises."""
    if inputs.get("fail"):
        raise ValueError("broken on purpose")
    port = inputs.get("check_in")
    if port and not _CHECKED_IN:
        _CHECKED_IN.append(os.getpid())
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=120) as link:
                link.sendall(f"{os.getpid()}\n".encode())
                link.recv(16)  # the test answers, or kills this process first
        except OSError:
            pass  # the test has stopped listening: go on
    text = str(inputs["q"])
    return text.upper() if inputs.get("shout") else text


async def held(inputs: dict[str, Any]) -> str:
    """Each call connects to the test's counter (``inputs['port']``) and waits for its
    word: the test sees how many calls are in flight at once across the cluster."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(inputs["port"]))
    try:
        writer.write(b"in\n")
        await writer.drain()
        await reader.readline()
    finally:
        writer.close()
    return str(inputs["q"])


async def stamped(inputs: dict[str, Any]) -> str:
    """Each call connects to the test's listener (``inputs['port']``), which notes when it
    arrived, and answers once the listener has answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(inputs["port"]))
    try:
        writer.write(b"in\n")
        await writer.drain()
        await reader.readline()
    finally:
        writer.close()
    return str(inputs["q"])


def logged(inputs: dict[str, Any]) -> str:
    """Each call appends when it started (``time.monotonic``) to the file ``inputs['log']``."""
    import time

    with open(inputs["log"], "a", encoding="utf-8") as log:
        log.write(f"{time.monotonic()}\n")
    return str(inputs["q"])
