"""Several processes opening one new store at once all get it: none loses the race to
create its tables ("table results already exists")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

OPEN = textwrap.dedent(
    """
    import sys, time
    from arbiter.store import Store
    start = float(sys.argv[2])
    while time.time() < start:
        pass
    Store(sys.argv[1]).close()
    """
)


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    import time

    for round_ in range(3):
        url = f"sqlite:///{tmp_path / f'store-{round_}.db'}"
        start = time.time() + 2.0  # every process imports first, then all open together
        children = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN, url, str(start)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        errors = [child.communicate(timeout=120)[1] for child in children]
        codes = [child.returncode for child in children]
        assert codes == [0, 0, 0, 0], "\n".join(errors)
