"""The package's public surface is explicit, sorted and importable."""

from __future__ import annotations

import importlib
import subprocess
import sys

import arbiter


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert arbiter.__all__ == sorted(arbiter.__all__)
    missing = [name for name in arbiter.__all__ if not hasattr(arbiter, name)]
    assert missing == []


def test_public_names_are_exactly_the_exported_ones() -> None:
    public = {
        name
        for name, value in vars(arbiter).items()
        if not name.startswith("_") and not isinstance(value, type(importlib))
    }
    assert public == set(arbiter.__all__)


def test_import_does_no_work_and_reads_no_environment() -> None:
    code = (
        "import os, sys\n"
        "os.environ['ARBITER_DB_URL'] = 'not-a-url://'\n"
        "import arbiter\n"
        "assert 'sqlalchemy.dialects.sqlite' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
