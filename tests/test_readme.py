"""The README's service-wiring example runs as written and prints what it claims."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_online_wiring_example_runs_and_prints_what_it_shows(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (example,) = [b for b in blocks if "OnlineScorer" in b]
    code_lines = [line for line in example.splitlines() if line.strip()]
    assert len(code_lines) <= 15 + 2  # the wiring, plus the two lines of shown output
    shown = [line.removeprefix("# ") for line in example.splitlines() if line.startswith("# evt")]
    script = tmp_path / "service.py"
    script.write_text(example, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == shown
