"""Pages in a real browser: a live uvicorn server over a seeded store, and chromium.

The store (tmp SQLite) is seeded through the service layer, the way the CLI fills it:
the demo screener's run (``arbiter demo``), a second version of the screener over the
same data (to compare), the QA demo with two text scorers, and a jury verdict on a clean
and a broken bundled case. Seeding runs before the browser starts: Playwright's sync
API holds an event loop, and the runs start their own (:func:`run_sync` runs a
coroutine on a thread of its own, for seeding that must come later).

Fixtures: ``seeded`` (the ids), ``pages_store``, ``live_url`` (``http://127.0.0.1:N``),
``browser`` (chromium, once per module), ``page`` (a fresh 1280x900 page per test) and
``page_events`` (the dialogs it opened and its uncaught script errors). Set
``ARBITER_SHOTS_DIR`` to keep screenshots taken with :func:`shoot`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from arbiter.config import Settings
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]

T = TypeVar("T")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the page tests where there is no browser to drive."""
    reason = None
    if sync_playwright is None:
        reason = "playwright is not installed: pip install -e '.[dev]'"
    elif not CHROMIUM.exists():
        reason = "no browser at /usr/bin/chromium: apt-get install chromium"
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.skip(reason=reason))


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end on a thread with its own event loop; its result."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="seed")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Seeded:
    """What the seeded store holds, by id."""

    demo_run: str
    """``arbiter demo``: the screener (v1) over the 240 transactions, label map applied."""
    demo_v2_run: str
    """The screener's v2 over the same transactions (flips both ways against v1)."""
    qa_run: str
    """The QA demo with ``casefold`` and ``f1_tokens``."""
    jury_run: str
    """The jury run judging two bundled cases."""
    verdicts: dict[str, int]
    """Verdict ids by case id (``clean_01``, ``multi_02``)."""


def _verdict_ids(store: Store, jury_run: str) -> dict[str, int]:
    from sqlalchemy import select

    from arbiter.store.jury_models import VerdictRow

    with store.session() as session:
        rows = session.execute(
            select(VerdictRow.case_id, VerdictRow.id).where(VerdictRow.run_id == jury_run)
        ).all()
    return {case_id: verdict_id for case_id, verdict_id in rows}


async def _seed(store: Store) -> Seeded:
    from arbiter.contract import RunConfig
    from arbiter.datasets import load_dataset
    from arbiter.demo import DEMO_LABEL_MAP, DEMO_TARGET, QA_TARGET, dataset_path, qa_dataset_path
    from arbiter.jury.cases import bundled_cases_path, load_cases
    from arbiter.jury.critics import DEFAULT_ROSTER
    from arbiter.service.jury import judge_cases
    from arbiter.service.runs import start_run
    from arbiter.service.scoring import build_scorers, scorer_specs
    from arbiter.systems.python import PythonSystem

    transactions = load_dataset(dataset_path())
    config = RunConfig(label_map=DEMO_LABEL_MAP)
    v1 = await start_run(
        PythonSystem(DEMO_TARGET),
        transactions,
        config=config,
        store=store,
        name="screener v1",
        tags={"team": "risk", "version": "v1"},
    )
    v2 = await start_run(
        PythonSystem("tests.server.pages.screener_v2:classify"),
        transactions,
        config=config,
        store=store,
        name="screener v2",
        tags={"team": "risk", "version": "v2"},
    )
    specs = scorer_specs(["casefold", "f1_tokens"])
    qa = await start_run(
        PythonSystem(QA_TARGET),
        load_dataset(qa_dataset_path()),
        config=RunConfig(scorers=specs),
        store=store,
        scorers=build_scorers(specs),
        name="qa assistant",
        tags={"team": "support"},
    )
    bundled = {case.id: case for case in load_cases(bundled_cases_path())}
    judged = await judge_cases(
        store,
        "judge",
        list(DEFAULT_ROSTER),
        [bundled["clean_01"], bundled["multi_02"]],
        config={"source": "pages tests"},
        audit_root=None,
        concurrency=2,
    )
    assert v1.run_id
    assert v2.run_id
    assert qa.run_id
    return Seeded(
        demo_run=v1.run_id,
        demo_v2_run=v2.run_id,
        qa_run=qa.run_id,
        jury_run=judged.run_id,
        verdicts=_verdict_ids(store, judged.run_id),
    )


@dataclass(frozen=True)
class Agents:
    """The agent pages' own server, over a store of real agent runs."""

    url: str
    """The server's base URL."""
    ids: dict[str, str]
    """Record ids by case id."""


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agents]:
    """A server over a store filled by :func:`tests.server.pages.agents_seed.seed_agents`
    (case-file runs and stored trajectories), once per module."""
    from arbiter.server.app import create_app
    from arbiter.service.agent_records import agent_records
    from tests.server.pages.agents_seed import seed_agents

    root = tmp_path_factory.mktemp("agent-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run_sync(seed_agents(store, root))
    ids = {r.case_id or "": r.id for r in agent_records(store)}
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield Agents(url, ids)
    store.close()


@pytest.fixture(scope="session")
def pages_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's folder: the store and ARBITER_HOME live here."""
    return tmp_path_factory.mktemp("pages")


@pytest.fixture(scope="session")
def pages_store(pages_root: Path) -> Iterator[Store]:
    """The store the live server serves (tmp SQLite)."""
    store = Store(f"sqlite:///{pages_root / 'store.db'}")
    yield store
    store.close()


@pytest.fixture(scope="session")
def seeded(pages_store: Store) -> Seeded:
    """The seeded runs and verdicts (made once per session, before any browser)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        return run_sync(_seed(pages_store))


@pytest.fixture(scope="session")
def live_url(pages_root: Path, pages_store: Store, seeded: Seeded) -> Iterator[str]:
    """The base URL of a uvicorn server running the app over the seeded store."""
    from arbiter.server.app import create_app

    settings = Settings(_env_file=None, home=pages_root / "home")  # type: ignore[call-arg]
    app = create_app(settings, store=pages_store)
    with serve_on_free_port(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser(live_url: str) -> Iterator[Browser]:
    """Chromium, launched once per test module (after the server is up and seeded).

    Not once per session: Playwright's sync API keeps an event loop running in the main
    thread while it is open, and every ``asyncio.run`` of a later test module would fail.
    """
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@dataclass
class PageEvents:
    """What a page did that a test may need to rule out."""

    dialogs: list[str] = field(default_factory=list)
    """The message of every dialog (alert, confirm, prompt) it opened; each dismissed."""
    errors: list[str] = field(default_factory=list)
    """Every uncaught script error."""


@pytest.fixture
def _watched_page(browser: Browser) -> Iterator[tuple[Page, PageEvents]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    events = PageEvents()

    def on_dialog(dialog: Any) -> None:
        events.dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", on_dialog)
    opened.on("pageerror", lambda error: events.errors.append(str(error)))
    yield opened, events
    context.close()


@pytest.fixture
def page(_watched_page: tuple[Page, PageEvents]) -> Page:
    """A fresh 1280x900 page in its own context (closed after the test)."""
    return _watched_page[0]


@pytest.fixture
def page_events(_watched_page: tuple[Page, PageEvents]) -> PageEvents:
    """The dialogs and script errors of ``page``."""
    return _watched_page[1]


def shoot(page: Page, name: str, tmp_path: Path, *, full_page: bool = True) -> Path:
    """Screenshot ``page`` to ``tmp_path/name``; copied to ``$ARBITER_SHOTS_DIR`` if set."""
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=full_page)
    keep = os.environ.get("ARBITER_SHOTS_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / name)
    return shot
