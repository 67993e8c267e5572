"""Installing a scorer plugin for a test: a real distribution on ``sys.path``.

The distribution is a ``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt``,
as ``pip install`` leaves it, so ``importlib.metadata.entry_points`` finds it the way it
finds any installed package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "install_distribution"]

ENTRY_POINT_GROUP = "arbiter.scorers"


def install_distribution(
    root: Path,
    name: str,
    entry_points: Mapping[str, str],
    *,
    modules: Mapping[str, str] | None = None,
) -> Path:
    """Write distribution ``name`` into ``root``, publishing ``entry_points`` as scorers.

    Args:
        root: A folder the caller puts on ``sys.path`` (several distributions may share it).
        name: The distribution's name, as ``pip`` lists it.
        entry_points: Entry-point name to ``module:attribute``.
        modules: Module name to source, written beside the distribution.

    Returns:
        ``root``.
    """
    stem = re.sub(r"[-.]+", "_", name)
    info = root / f"{stem}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = "".join(f"{point} = {target}\n" for point, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}", encoding="utf-8")
    for module, source in (modules or {}).items():
        (root / f"{module}.py").write_text(source, encoding="utf-8")
    return root
