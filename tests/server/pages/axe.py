"""axe-core in the page tests: accessibility rules run inside chromium.

The engine is vendored: ``vendor/axe-core/axe.min.js`` is axe-core's own minified build,
as its package ships it, under the Mozilla Public License 2.0 (``vendor/axe-core/LICENSE``),
so CI needs no download. It is added to a page with Playwright's ``add_script_tag``; the
pages' Content-Security-Policy allows no inline script, so a context that runs axe is
opened with ``bypass_csp`` (the other page tests keep the policy on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["AXE", "Violation", "violations"]

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
"""The vendored axe-core build (4.14.1)."""

_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + n.failureSummary),
  }));
}"""


@dataclass(frozen=True)
class Violation:
    """One rule a page breaks."""

    id: str
    impact: str | None
    help: str
    nodes: list[str]
    """Up to five elements that break it, each with why."""

    def __str__(self) -> str:
        return f"{self.id} ({self.impact}): {self.help}\n    " + "\n    ".join(self.nodes)


def violations(
    page: Page, *, impacts: tuple[str, ...] = ("serious", "critical")
) -> list[Violation]:
    """The rules the page as it stands breaks, of the given impacts."""
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(_RUN)
    return [Violation(**v) for v in found if v["impact"] in impacts]
