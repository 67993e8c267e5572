"""Every page readable and accessible in chromium: axe-core finds no serious or critical
violation, light and dark, at desktop and phone widths; chart text never shrinks below
10 px; nothing but a scrolling panel is wider than a phone's screen; links in text are
underlined.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from tests.server.pages.axe import violations
from tests.server.pages.conftest import Agents, Seeded

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}

_RUN_PAGES = {
    "runs": "/",
    "run": "/runs/{demo_run}",
    "text run": "/runs/{qa_run}",
    "compare": "/compare?a={demo_run}&b={demo_v2_run}",
    "verdict": "/verdicts/{verdict}",
}
_AGENT_PAGES = {
    "agents": "/agents",
    "agent": "/agents/weather-bot",
    "trajectory": "/trajectories/{weather}",
    "compare trajectories": "/compare/trajectories?a={weather}&b={forbidden}",
    "annotations": "/annotations",
    "calibration": "/calibration",
    "fleet": "/fleet",
    "fleet compare": "/fleet/compare?a=weather-bot&b=billing-flow",
    "thresholds": "/thresholds",
    "inbox": "/inbox",
}


def _urls(live_url: str, seeded: Seeded, agents: Agents) -> dict[str, str]:
    runs = {
        name: live_url
        + path.format(
            demo_run=seeded.demo_run,
            qa_run=seeded.qa_run,
            demo_v2_run=seeded.demo_v2_run,
            verdict=seeded.verdicts["multi_02"],
        )
        for name, path in _RUN_PAGES.items()
    }
    weather, forbidden = quote(agents.ids["weather-1"]), quote(agents.ids["desk-1"])
    return runs | {
        name: agents.url + path.format(weather=weather, forbidden=forbidden)
        for name, path in _AGENT_PAGES.items()
    }


@pytest.fixture(
    params=[(w, s) for w in WIDTHS for s in ("light", "dark")], ids=lambda p: "-".join(p)
)
def view(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    """A page at a width, in a colour scheme, with the CSP bypassed for axe."""
    width, scheme = request.param
    w, h = WIDTHS[width]
    context = browser.new_context(
        viewport={"width": w, "height": h}, color_scheme=scheme, bypass_csp=True
    )
    yield context.new_page()
    context.close()


def _open(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, url
    for opener in page.locator("details").all()[:20]:  # folded text counts too
        opener.evaluate("d => d.open = true")


def test_no_page_has_a_serious_accessibility_violation(
    view: Page, live_url: str, seeded: Seeded, agents: Agents
) -> None:
    found = {}
    for name, url in _urls(live_url, seeded, agents).items():
        _open(view, url)
        broken = violations(view)
        if broken:
            found[name] = "\n  ".join(str(v) for v in broken)
    assert not found, "\n".join(f"{name}:\n  {why}" for name, why in found.items())


_SMALLEST_TEXT = """() => {
  const sizes = [];
  for (const svg of document.querySelectorAll("main svg")) {
    const box = svg.getBoundingClientRect();
    const drawn = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width;
    if (!drawn || !box.width) continue;
    const scale = box.width / drawn;
    for (const text of svg.querySelectorAll("text")) {
      const px = parseFloat(getComputedStyle(text).fontSize) * scale;
      sizes.push([px, svg.getAttribute("class") + ": " + text.textContent.slice(0, 30)]);
    }
  }
  sizes.sort((a, b) => a[0] - b[0]);
  return sizes.slice(0, 3);
}"""


def test_chart_text_stays_readable_at_every_width(
    view: Page, live_url: str, seeded: Seeded, agents: Agents
) -> None:
    small = {}
    for name, url in _urls(live_url, seeded, agents).items():
        _open(view, url)
        smallest = view.evaluate(_SMALLEST_TEXT)
        if smallest and smallest[0][0] < 10:
            small[name] = smallest
    assert not small, small


@pytest.fixture(scope="module")
def thirty_labels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The page of a run over 30 labels, whose confusion map is at its widest (13 labels)."""
    from arbiter.config import Settings
    from arbiter.server.app import create_app
    from arbiter.store import Store
    from tests.helpers.local_server import serve_on_free_port
    from tests.server.pages.big_seed import seed_label_run

    root = tmp_path_factory.mktemp("thirty-labels")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run = seed_label_run(store, 300, labels=30, right=0.6, name="30 labels")
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield f"{url}/runs/{run}"
    store.close()


def test_a_thirty_label_confusion_map_keeps_readable_text(view: Page, thirty_labels: str) -> None:
    _open(view, thirty_labels)
    assert view.locator("section[aria-labelledby=h-confusion] svg.chart").count() == 1
    smallest = view.evaluate(_SMALLEST_TEXT)
    assert smallest[0][0] >= 10, smallest
    broken = violations(view)
    assert not broken, "\n".join(str(v) for v in broken)


_PAST_THE_EDGE = """() => {
  const edge = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll("main *, header *")) {
    const box = el.getBoundingClientRect();
    if (box.right <= edge + 1 || box.width === 0) continue;
    let clipped = false;
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (["auto", "scroll", "hidden"].includes(style.overflowX)) {
        if (up.getBoundingClientRect().right <= edge + 1) { clipped = true; break; }
      }
    }
    const name = el.tagName.toLowerCase() + "." + el.getAttribute("class");
    if (!clipped) out.push(name + " right=" + Math.round(box.right));
  }
  return out.slice(0, 5);
}"""


def test_nothing_but_a_scrolling_panel_is_wider_than_a_phone(
    browser: Browser, live_url: str, seeded: Seeded, agents: Agents
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    wide = {}
    for name, url in _urls(live_url, seeded, agents).items():
        _open(page, url)
        past = page.evaluate(_PAST_THE_EDGE)
        if past:
            wide[name] = past
    context.close()
    assert not wide, wide


_PLAIN_LINKS = """() => {
  const text = "main p a, main li a, main .meta a, main .crumbs a, main .note a, main .empty a";
  const controls = ".button, .card, .tabs a, .pager a, nav a";  // links shaped as controls
  const links = [...document.querySelectorAll(text)]
    .filter(a => a.getClientRects().length && !a.matches(controls));
  const plain = links.filter(a => !getComputedStyle(a).textDecorationLine.includes("underline"));
  return [links.length, plain.slice(0, 5).map(a => a.outerHTML.slice(0, 120))];
}"""


def test_links_in_running_text_are_underlined(
    page: Page, live_url: str, seeded: Seeded, agents: Agents
) -> None:
    seen, plain = 0, {}
    for name, url in _urls(live_url, seeded, agents).items():
        _open(page, url)
        count, bare = page.evaluate(_PLAIN_LINKS)
        seen += count
        if bare:
            plain[name] = bare
    assert seen > 10  # the pages do have links in their text
    assert not plain, plain
