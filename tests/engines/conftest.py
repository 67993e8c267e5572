"""A real local two-node Ray cluster for the engine tests, started and stopped here.

``ray start --head`` on 127.0.0.2 and a second raylet on 127.0.0.3 joining it, one CPU
each, in a temporary directory; both nodes' process groups are killed at the end. Ray
resolves 127.0.0.1 to the machine's outward address, so the nodes use other loopback
addresses: no traffic leaves the machine. Where Ray cannot be imported the tests that
need it are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Ray is not imported here: it reads its authentication settings when first imported,
# and the cluster's token is set only when the cluster starts.
RAY_MISSING = (
    None
    if importlib.util.find_spec("ray") is not None
    else "ray is not installed (pip install 'arbiter[ray]'; .ci/run installs it)"
)
if RAY_MISSING is not None and os.environ.get("ARBITER_REQUIRE_RAY") == "1":
    raise RuntimeError(f"ARBITER_REQUIRE_RAY=1 but {RAY_MISSING}")
needs_ray = pytest.mark.skipif(RAY_MISSING is not None, reason=RAY_MISSING or "")


@dataclass
class Cluster:
    """A running local cluster."""

    address: str
    temp_dir: Path
    groups: list[int]


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _ray_start(args: list[str], env: dict[str, str], log: Path) -> int:
    """Run ``ray start`` in a session of its own; return its process group (the daemons
    it leaves behind keep it)."""
    ray = str(Path(sys.executable).with_name("ray"))
    with log.open("wb") as out:
        started = subprocess.Popen(
            [ray, "start", *args, "--disable-usage-stats", "--num-cpus", "1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env},
        )
        code = started.wait(timeout=120)
    if code != 0:
        raise RuntimeError(f"ray start failed ({code}): {log.read_text()[-2000:]}")
    return started.pid


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    """Two Ray nodes on this machine, one CPU each (skipped where Ray cannot import)."""
    if RAY_MISSING is not None:
        pytest.skip(RAY_MISSING)
    temp_dir = Path(tempfile.mkdtemp(prefix="arbiter-ray-", dir="/tmp"))
    port = _free_port("127.0.0.2")
    groups: list[int] = []
    # The cluster's own token, which the nodes and this process (the driver) share.
    env = {
        "RAY_TMPDIR": str(temp_dir),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        head = [
            "--head",
            "--node-ip-address",
            "127.0.0.2",
            "--port",
            str(port),
            "--include-dashboard=false",
            "--temp-dir",
            str(temp_dir),
            "--object-store-memory",
            str(100 * 1024 * 1024),
        ]
        groups.append(_ray_start(head, env, temp_dir / "head.log"))
        node = [
            "--address",
            f"127.0.0.2:{port}",
            "--node-ip-address",
            "127.0.0.3",
            "--object-store-memory",
            str(100 * 1024 * 1024),
        ]
        groups.append(_ray_start(node, env, temp_dir / "node.log"))
        yield Cluster(address=f"127.0.0.2:{port}", temp_dir=temp_dir, groups=groups)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for group in reversed(groups):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
