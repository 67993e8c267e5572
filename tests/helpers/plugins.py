"""Installing a plugin for a test: a real distribution on ``sys.path``.

The distribution is a ``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt``,
as ``pip install`` leaves it, so ``importlib.metadata.entry_points`` finds it the way it
finds any installed package. One distribution may publish in several entry-point groups
(a system kind, a provider, a scorer, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "install_distribution"]

ENTRY_POINT_GROUP = "arbiter.scorers"
"""The group of ``entry_points`` when no other is named."""


def install_distribution(
    root: Path,
    name: str,
    entry_points: Mapping[str, str] | None = None,
    *,
    group: str = ENTRY_POINT_GROUP,
    groups: Mapping[str, Mapping[str, str]] | None = None,
    modules: Mapping[str, str] | None = None,
) -> Path:
    """Write distribution ``name`` into ``root``, publishing its entry points.

    Args:
        root: A folder the caller puts on ``sys.path`` (several distributions may share it).
        name: The distribution's name, as ``pip`` lists it.
        entry_points: Entry-point name to ``module:attribute``, in ``group``.
        group: The group of ``entry_points`` (default: scorers).
        groups: More entry points, by group (``{"arbiter.systems": {"echo": "m:KIND"}}``).
        modules: Module name to source, written beside the distribution.

    Returns:
        ``root``.
    """
    published: dict[str, dict[str, str]] = {}
    if entry_points:
        published[group] = dict(entry_points)
    for other, points in (groups or {}).items():
        published.setdefault(other, {}).update(points)
    stem = re.sub(r"[-.]+", "_", name)
    info = root / f"{stem}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    sections = [
        f"[{section}]\n" + "".join(f"{point} = {target}\n" for point, target in points.items())
        for section, points in published.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections), encoding="utf-8")
    for module, source in (modules or {}).items():
        (root / f"{module}.py").write_text(source, encoding="utf-8")
    return root
