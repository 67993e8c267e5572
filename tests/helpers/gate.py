"""Holding a subprocess's system under test inside one call, without sleeping to wait.

A system module written by a test calls ``hold_call()`` (from :data:`CLIENT_SOURCE`);
when the process was given a gate's port, that call connects to the test and blocks
until the test answers or closes. Once :meth:`Gate.accept` returns, the test knows the
subprocess is inside that call, and can act (start a rival, kill it) at that point.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

PORT_VARIABLE = "ARBITER_TEST_GATE_PORT"

CLIENT_SOURCE = f"""\
import os as _os
import socket as _socket


def hold_call():
    \"\"\"Block until the test lets go, if this process was given a gate.\"\"\"
    port = _os.environ.get("{PORT_VARIABLE}")
    if port:
        with _socket.create_connection(("127.0.0.1", int(port))) as conn:
            conn.sendall(b"calling")
            conn.recv(1)
"""


class Gate:
    """A local listening socket a system under test connects to from inside a call."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.5)  # how often accept() looks whether the process died

    @property
    def env(self) -> dict[str, str]:
        """The variable that gives a subprocess this gate."""
        return {PORT_VARIABLE: str(self._server.getsockname()[1])}

    def accept(
        self, process: subprocess.Popen[Any], log: Path | None = None, timeout: float = 60
    ) -> socket.socket:
        """The connection of ``process`` once it is held inside its call.

        Raises:
            AssertionError: ``process`` ended first, or did not get there in ``timeout``
                seconds (with its ``log`` file, if given, in the message).
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn, _ = self._server.accept()
                break
            except TimeoutError:
                said = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
                assert process.poll() is None, f"the process ended first: {said}"
                assert time.monotonic() < deadline, f"the process was never held: {said}"
        conn.settimeout(timeout)
        assert conn.recv(16) == b"calling"
        return conn

    def close(self) -> None:
        """Stop listening; a held call still connected is released when its socket closes."""
        self._server.close()

    def __enter__(self) -> Gate:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
