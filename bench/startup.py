"""Start-up time of the ``arbiter`` command and of ``import arbiter``.

Run: ``python bench/startup.py [--repeat N]``.

Each command is started ``N`` times (default 15) as a fresh process from this one, after
one warm-up start that fills the OS file cache, and the median wall time is printed with
its ratio to the first row: ``python -c "import typer"``, the floor any Typer CLI pays.
A bare Typer app with the same commands as ``arbiter`` (names and options, no bodies) is
timed too, so ``arbiter --help`` can be read against what Typer alone costs for it.

Targets: ``arbiter --help`` <= 2x the bare Typer app; ``import arbiter`` <= 50 ms
(wall time of ``python -c "import arbiter"`` minus ``python -c "pass"``). The last row
is what a user waits for end to end: ``arbiter run`` of 1,000 examples through a system
that answers at once, store included. A benchmark, never a test: it prints, it does not
assert.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HELP_TARGET_RATIO = 2.0
IMPORT_TARGET_MS = 50.0


def _bare_typer_app(folder: Path) -> Path:
    """A Typer app with arbiter's command tree and no work: the cost of Typer itself."""
    script = folder / "bare_typer_app.py"
    script.write_text(
        textwrap.dedent(
            """
            import typer

            app = typer.Typer(no_args_is_help=True, add_completion=False,
                              rich_markup_mode="rich")
            jury = typer.Typer(no_args_is_help=True)
            online = typer.Typer(no_args_is_help=True)
            agent = typer.Typer(no_args_is_help=True)
            keys = typer.Typer(no_args_is_help=True)
            signing = typer.Typer(no_args_is_help=True)
            app.add_typer(jury, name="jury")
            app.add_typer(online, name="online")
            app.add_typer(agent, name="agent")
            app.add_typer(keys, name="keys")
            keys.add_typer(signing, name="signing")

            def command(group, name):
                def body(dataset: str = typer.Option(None, help="A dataset."),
                         k: int = typer.Option(1, help="Repetitions."),
                         as_json: bool = typer.Option(False, "--json", help="JSON.")):
                    "A command."
                group.command(name)(body)

            for name in ("run", "runs", "demo", "report", "diff", "gate", "judge",
                         "scorers", "calibrate", "annotate", "annotations", "gate-bench",
                         "gate-check", "gate-review", "serve", "verify", "audit-pack"):
                command(app, name)
            for name in ("create", "list", "revoke"):
                command(keys, name)
            command(signing, "init")
            for name in ("eval", "baseline", "replay"):
                command(jury, name)
            for name in ("score", "run", "mine", "diff"):
                command(agent, name)
            command(online, "score")
            app()
            """
        ),
        encoding="utf-8",
    )
    return script


def _time(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    """Median wall seconds of ``repeat`` fresh starts (after one warm-up)."""
    samples = []
    for i in range(repeat + 1):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise SystemExit(f"{' '.join(argv)} failed: {message[-1] if message else ''}")
        if i:
            samples.append(elapsed)
    return statistics.median(samples)


def _instant_run(folder: Path) -> list[str]:
    """The arguments of an ``arbiter run`` of 1,000 examples through an instant system."""
    (folder / "instant.py").write_text("def predict(input):\n    return 'low'\n")
    lines = [
        f'{{"id": "e{i}", "input": {{"i": {i}}}, "expected_label": "low"}}\n' for i in range(1000)
    ]
    (folder / "instant.jsonl").write_text("".join(lines))
    return [
        "run",
        "--dataset",
        str(folder / "instant.jsonl"),
        "--target",
        str(folder / "instant.py") + ":predict",
        "--quiet",
        "--json",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="starts per command")
    args = parser.parse_args(argv)
    python = sys.executable
    arbiter = shutil.which("arbiter", path=str(Path(python).parent)) or "arbiter"
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    with tempfile.TemporaryDirectory() as scratch:
        bare = _bare_typer_app(Path(scratch))
        env["ARBITER_DB_URL"] = f"sqlite:///{Path(scratch) / 'store.db'}"
        env["ARBITER_HOME"] = str(Path(scratch) / "home")
        instant = _instant_run(Path(scratch))
        rows = [
            ("python -c 'import typer'", [python, "-c", "import typer"]),
            ("bare Typer app --help", [python, str(bare), "--help"]),
            ("arbiter --help", [arbiter, "--help"]),
            ("arbiter --version", [arbiter, "--version"]),
            ("python -c 'import arbiter'", [python, "-c", "import arbiter"]),
            (
                "python -c 'from arbiter import run_eval'",
                [python, "-c", "from arbiter import run_eval"],
            ),
            ("python -c 'pass'", [python, "-c", "pass"]),
            ("arbiter run: 1,000 examples, instant system", [arbiter, *instant]),
        ]
        print(
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, median of {args.repeat} starts after one warm-up\n"
        )
        results: dict[str, float] = {}
        floor = None
        for name, command in rows:
            try:
                seconds = _time(command, args.repeat, env)
            except SystemExit as exc:
                print(f"{name:<44} skipped: {exc}")
                continue
            results[name] = seconds
            floor = floor or seconds
            print(f"{name:<44} {seconds * 1000:8.1f} ms   {seconds / floor:5.2f}x")
    help_ratio = results.get("arbiter --help", 0) / results.get("bare Typer app --help", 1)
    bare = results.get("python -c 'pass'", 0)
    import_ms = (results.get("python -c 'import arbiter'", 0) - bare) * 1000
    print()
    ok = "ok" if help_ratio <= HELP_TARGET_RATIO else "MISSED"
    print(
        f"arbiter --help / bare Typer app --help = {help_ratio:.2f}x "
        f"(target <= {HELP_TARGET_RATIO:g}x): {ok}"
    )
    ok = "ok" if import_ms <= IMPORT_TARGET_MS else "MISSED"
    print(
        f"import arbiter, beyond a bare interpreter = {import_ms:.1f} ms "
        f"(target <= {IMPORT_TARGET_MS:g} ms): {ok}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
