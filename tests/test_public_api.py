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


ENGINES_AND_HEAVY_LIBRARIES = (
    "arbiter.harness",
    "arbiter.jury",
    "arbiter.online",
    "arbiter.store",
    "arbiter.service",
    "arbiter.systems",
    "arbiter.providers",
    "pydantic",
    "sqlalchemy",
    "numpy",
    "httpx",
    "aiohttp",
    "mcp",
    "opentelemetry",
)


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if any(m == h or m.startswith(h + ".") for h in ENGINES_AND_HEAVY_LIBRARIES)
    )


def test_import_arbiter_loads_no_engine_and_no_heavy_library() -> None:
    assert _heavy(_loaded_after("import arbiter")) == []


def test_the_pytest_plugin_loads_no_engine_and_no_heavy_library() -> None:
    # It loads in every pytest run once Arbiter is installed (the pytest11 entry point).
    assert _heavy(_loaded_after("import arbiter.pytest_plugin")) == []


def test_assert_output_is_the_testing_module_s() -> None:
    from arbiter.testing import assert_output

    assert arbiter.assert_output is assert_output


def test_a_public_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded_after("import arbiter\narbiter.run_eval")
    assert "arbiter.harness.runner" in loaded
    assert "arbiter.store" not in loaded  # the runner receives its store; it never imports one


def test_the_command_line_help_and_version_load_no_engine() -> None:
    for flag in ("--help", "--version"):
        code = (
            "import contextlib, io\n"
            "from arbiter.cli.main import main\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main([{flag!r}])\n"
        )
        assert _heavy(_loaded_after(code)) == [], flag


def test_version_prints_the_package_version(cli: object) -> None:
    result = cli("--version")  # type: ignore[operator]
    assert result.code == 0
    assert result.out.strip() == f"arbiter {arbiter.__version__}"


def test_the_package_version_is_the_distribution_s() -> None:
    from importlib.metadata import version

    assert version("arbiter") == arbiter.__version__
