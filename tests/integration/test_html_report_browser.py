"""The HTML report in a real browser (Playwright with Debian's chromium): it loads from a
file, fetches nothing, runs nothing a system under test wrote, and shows every pair.

Reports come from real runs through the CLI: the QA demo, and a system whose answers are
hostile (tests/helpers/hostile_text.py). Set ``ARBITER_SHOTS_DIR`` to keep the
screenshots (``ARBITER_SHOTS_DIR=/tmp/shots pytest tests/integration/...``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from arbiter.cli.main import main
from arbiter.contract import Report
from tests.helpers import hostile_text

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

CHROMIUM = Path("/usr/bin/chromium")
QA = Path(__file__).parents[2] / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]

pytestmark = [
    pytest.mark.skipif(
        sync_playwright is None,
        reason="playwright is not installed: pip install -e '.[dev]'",
    ),
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no browser at /usr/bin/chromium: apt-get install chromium"
    ),
]


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser context per test: its pages are closed after it."""
    opened = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def browser(pages: Pages) -> Iterator[Browser]:
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


class Visit:
    """A page opened from a file, with every request, dialog and console error it caused."""

    def __init__(self, context: BrowserContext, path: Path) -> None:
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page: Page = context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(path.as_uri())
        self.url = path.as_uri()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def rows(self, *, visible_only: bool = False) -> int:
        selector = "table.pairs tbody tr"
        if not visible_only:
            return int(self.page.locator(selector).count())
        return int(
            self.page.evaluate(
                f"[...document.querySelectorAll('{selector}')]"
                ".filter(r => r.offsetParent !== null).length"
            )
        )

    def shoot(self, name: str, tmp_path: Path) -> Path:
        shot = tmp_path / name
        self.page.screenshot(path=str(shot), full_page=True)
        keep = os.environ.get("ARBITER_SHOTS_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, Path(keep) / name)
        return shot


@dataclass(frozen=True)
class Pages:
    """The pages under test, written by the CLI before any browser starts (Playwright's
    sync API holds an event loop, and the CLI runs one of its own)."""

    hostile: Path
    """The whole report of the hostile run."""
    qa: Path
    """The whole report of the QA demo."""
    failures: Path
    """``--failures --limit 5`` of the QA demo."""
    qa_listed: int
    """Examples of the QA demo ``--failures`` lists."""
    worst: list[str]
    """The five it lists first."""


def _cli(*args: str) -> str:
    """Run the CLI in this process; its stdout. Fails the test on a non-zero exit."""
    out = io.StringIO()
    code: int | str | None = 0
    with contextlib.redirect_stdout(out):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    assert not code, f"arbiter {' '.join(args)} exited {code}"
    return out.getvalue()


def _run(dataset: Path, target: str) -> str:
    out = _cli(
        "run",
        "--dataset",
        str(dataset),
        "--system",
        "python",
        "--target",
        target,
        "--scorer",
        "casefold",
        "--scorer",
        "f1_tokens",
        "--quiet",
        "--json",
    )
    run_id = Report.model_validate_json(out).run_id
    assert run_id
    return run_id


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    root = tmp_path_factory.mktemp("pages")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARBITER_DB_URL", f"sqlite:///{root / 'store.db'}")
        patch.setenv("ARBITER_HOME", str(root / "home"))
        patch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        hostile = _run(
            hostile_text.write_dataset(root / "hostile.jsonl"), "tests.helpers.hostile_text:answer"
        )
        qa = _run(QA, "arbiter.demo.qa:answer")
        _cli("report", hostile, "--format", "html", "-o", str(root / "hostile.html"))
        _cli("report", qa, "--format", "html", "-o", str(root / "qa.html"))
        _cli(
            "report",
            qa,
            "--failures",
            "--limit",
            "5",
            "--format",
            "html",
            "-o",
            str(root / "failures.html"),
        )
        listed = json.loads(_cli("report", qa, "--failures", "--limit", "5", "--format", "json"))
        yield Pages(
            hostile=root / "hostile.html",
            qa=root / "qa.html",
            failures=root / "failures.html",
            qa_listed=listed["listed_total"],
            worst=[e["example_id"] for e in listed["examples"]],
        )


def test_a_hostile_report_loads_fetches_nothing_and_runs_nothing(
    context: BrowserContext, pages: Pages, tmp_path: Path
) -> None:
    visit = Visit(context, pages.hostile)
    assert visit.page.evaluate(f"typeof {hostile_text.PWNED}") == "undefined"
    assert visit.dialogs == []
    assert visit.errors == []
    assert visit.requests == [visit.url]  # the page itself, and nothing else
    assert visit.page.evaluate("document.scripts.length") == 0
    assert visit.page.locator("img, iframe, object, embed, a, link, form, textarea").count() == 0
    assert visit.rows() == len(hostile_text.ANSWERS) + 1
    assert visit.shoot("report-hostile.png", tmp_path).stat().st_size > 10_000


@pytest.mark.parametrize("example_id", ["script", "textarea", "attribute", "link", "formula"])
def test_a_hostile_answer_reads_exactly_as_it_was_written(
    context: BrowserContext, pages: Pages, example_id: str
) -> None:
    visit = Visit(context, pages.hostile)
    row = visit.page.locator("table.pairs tbody tr", has_text=example_id).first
    shown = row.locator("td.output").inner_text()
    assert shown == hostile_text.ANSWERS[example_id]


def test_controls_in_an_answer_show_as_escapes_and_a_huge_one_is_folded(
    context: BrowserContext, pages: Pages
) -> None:
    visit = Visit(context, pages.hostile)
    ansi = visit.page.locator("table.pairs tbody tr", has_text="ansi").first
    assert "clear\\x1b[2J\\x1b]0;retitled\\x07" in ansi.locator("td.output").inner_text()
    huge = visit.page.locator("table.pairs tbody tr", has_text="huge").first
    assert huge.locator("details.more summary").inner_text() == "1,000,000 characters, clipped"
    assert len(huge.locator("td.output").inner_text()) < 2_100


def test_the_qa_report_shows_every_pair_and_the_toggle_hides_clean_ones(
    context: BrowserContext, pages: Pages, tmp_path: Path
) -> None:
    visit = Visit(context, pages.qa)
    assert visit.errors == []
    assert visit.requests == [visit.url]
    assert visit.rows() == 200
    assert visit.page.locator("table.pairs tbody tr.clean").count() == 200 - pages.qa_listed
    visit.page.locator("#only-issues").check()
    assert visit.rows(visible_only=True) == pages.qa_listed
    assert visit.page.locator(".ci").count() == 2 + 5  # a bar per scorer and per cohort
    visit.page.locator("#only-issues").uncheck()
    assert visit.shoot("report-qa.png", tmp_path).stat().st_size > 10_000


def test_the_failures_page_holds_only_the_listed_examples_worst_first(
    context: BrowserContext, pages: Pages, tmp_path: Path
) -> None:
    visit = Visit(context, pages.failures)
    assert visit.rows() == 5
    ids = visit.page.locator("table.pairs tbody tr td:first-child").all_inner_texts()
    assert ids == pages.worst
    assert visit.page.locator("table.pairs tbody tr.clean").count() == 0
    assert visit.shoot("report-failures.png", tmp_path).stat().st_size > 10_000
