"""Hostile content on the run pages, in chromium: nothing runs, everything reads as text.

A store of its own is seeded with payloads (``<script>``, ``" onmouseover=``,
``javascript:`` URLs, an ``<img onerror>``, an SVG break-out, terminal escapes) in every
field a user or a system under test controls: run names, tags, dataset names, example
ids, cohorts, expected labels, answered labels, raw outputs, scorer explanations, the
system's description, and a jury case's id, task, context, output, quotes, claims,
critic names and reasons. Each page is opened in chromium; a payload that ran would set
``window.__pwned``, open a dialog or raise a page error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arbiter.config import Settings
from arbiter.contract import (
    Callout,
    Case,
    CriticOutcome,
    Dataset,
    Example,
    Finding,
    Output,
    PairResult,
    RunConfig,
    Score,
    Verdict,
)
from arbiter.store import Store
from tests.helpers import hostile_text
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.conftest import PageEvents, run_sync
from tests.server.pages.hostile_pages import FLAG, PAYLOADS, SHOWN, dataset

if TYPE_CHECKING:
    from playwright.sync_api import Page

ALL = "".join(PAYLOADS.values())


@dataclass(frozen=True)
class Hostile:
    url: str
    label_run: str
    text_run: str
    system_run: str
    verdicts: list[int]


def _system_run(store: Store) -> str:
    """A run whose system description, name and tags are payloads (made in the store)."""
    data = Dataset(
        name=PAYLOADS["attribute"],
        version="1",
        examples=[Example(id=PAYLOADS["svg"], input={}, expected_label=PAYLOADS["link"])],
    )
    run_id = store.create_run(
        dataset=data,
        system={"kind": PAYLOADS["attribute"], "url": PAYLOADS["link"] + PAYLOADS["script"]},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=1,
        name=PAYLOADS["image"],
        tags={PAYLOADS["attribute"]: PAYLOADS["link"]},
    )
    segment = store.start_segment(run_id)
    score = Score(
        name="label",
        value=0.0,
        passed=False,
        answer=PAYLOADS["ansi"],
        expected=PAYLOADS["link"],
        explanation=ALL,
    )
    store.add_results(
        run_id,
        [
            PairResult(
                example_id=PAYLOADS["svg"],
                repetition=0,
                output=Output(label=PAYLOADS["ansi"], raw={"x": ALL}),
                scores=[score],
                passed=False,
                latency_ms=1.0,
            )
        ],
    )
    store.end_segment(run_id, segment, "completed", elapsed_seconds=0.1)
    return run_id


def _verdict(store: Store) -> None:
    from arbiter.store.jury_repository import create_jury_run, finish_jury_run, save_judgment

    case = Case(
        id=PAYLOADS["attribute"],
        task=ALL,
        context=ALL,
        output=f"Intro {PAYLOADS['script']} middle {PAYLOADS['image']} end {PAYLOADS['ansi']}",
    )
    verdict = Verdict(
        decision="REJECT",
        confidence=0.8,
        flip_margin=1,
        agreement=0.5,
        escalate=True,
        reasons=[ALL],
        scores={"accuracy": 2.0, "consistency": 4.0, "completeness": 5.0},
        findings=[
            Finding(
                dimension="accuracy",
                kind="contradicted",
                quote=PAYLOADS["script"],
                rival=PAYLOADS["link"],
                claim=ALL,
                critics=[PAYLOADS["attribute"]],
                corroborated=False,
            ),
            Finding(
                dimension="accuracy",
                kind="unsupported",
                quote=PAYLOADS["image"],
                rival=None,
                claim=PAYLOADS["svg"],
                critics=[PAYLOADS["script"]],
                corroborated=False,
            ),
        ],
        opinions=[
            Callout(dimension="consistency", kind="opinion", claim=ALL, quote=PAYLOADS["svg"])
        ],
        critiques=[
            CriticOutcome(
                critic=PAYLOADS["script"],
                lens=PAYLOADS["attribute"],
                model=PAYLOADS["link"],
                status="dead",
                error=ALL,
            )
        ],
    )
    run_id = create_jury_run(store, kind="judge", roster=[], n_cases=1, config={})
    save_judgment(store, run_id, case, verdict)
    finish_jury_run(store, run_id)


async def _seed(store: Store) -> tuple[str, str]:
    from arbiter.datasets import load_dataset
    from arbiter.jury.critics import DEFAULT_ROSTER
    from arbiter.service.jury import judge_cases
    from arbiter.service.runs import start_run
    from arbiter.service.scoring import build_scorers, scorer_specs
    from arbiter.systems.python import PythonSystem

    labels = await start_run(
        PythonSystem("tests.server.pages.hostile_pages:classify"),
        dataset(),
        config=RunConfig(),
        store=store,
        name=PAYLOADS["script"],
        tags={PAYLOADS["link"]: PAYLOADS["attribute"]},
    )
    specs = scorer_specs(["casefold"])
    texts = await start_run(
        PythonSystem("tests.helpers.hostile_text:answer"),
        load_dataset(
            hostile_text.write_dataset(Path(store.url.removeprefix("sqlite:///") + ".jsonl"))
        ),
        config=RunConfig(scorers=specs),
        store=store,
        scorers=build_scorers(specs),
        name=PAYLOADS["ansi"],
    )
    case = Case(
        id=PAYLOADS["script"],
        task=PAYLOADS["attribute"],
        context="The fee is 10 dollars. " + PAYLOADS["image"],
        output="The fee is 20 dollars. " + PAYLOADS["script"],
    )
    await judge_cases(
        store, "judge", list(DEFAULT_ROSTER), [case], config={}, audit_root=None, concurrency=1
    )
    assert labels.run_id
    assert texts.run_id
    return labels.run_id, texts.run_id


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    from arbiter.server.app import create_app
    from arbiter.store.browse_repository import page_verdicts

    root = tmp_path_factory.mktemp("hostile-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    label_run, text_run = run_sync(_seed(store))
    system_run = _system_run(store)
    _verdict(store)
    verdicts, _ = page_verdicts(store, viewer=None, offset=0, limit=10)
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield Hostile(url, label_run, text_run, system_run, [v.id for v in verdicts])
    store.close()


def _pages(h: Hostile) -> list[str]:
    runs = [h.label_run, h.text_run, h.system_run]
    return [
        "/",
        *(f"/runs/{r}" for r in runs),
        *(f"/runs/{r}?show=failing" for r in runs),
        f"/compare?a={h.label_run}&b={h.system_run}",
        f"/compare?a={h.text_run}&b={h.label_run}",
        *(f"/verdicts/{v}" for v in h.verdicts),
    ]


def _visit(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, url
    for opener in page.locator("button.opener").all()[:20]:
        opener.click()  # every detail row shown
    page.mouse.move(5, 5)
    for element in page.locator("td, mark, q, h1, .tag, .meta span").all()[:200]:
        element.hover(timeout=2_000, force=True)  # an injected onmouseover would fire now


def test_no_payload_runs_on_any_run_page(
    page: Page, page_events: PageEvents, hostile: Hostile
) -> None:
    for path in _pages(hostile):
        _visit(page, hostile.url + path)
        assert page.evaluate(f"typeof window.{FLAG}") == "undefined", path
        assert page.evaluate(f"typeof window.{hostile_text.PWNED.removeprefix('window.')}") == (
            "undefined"
        ), path
        handlers = page.evaluate(
            "[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on'))).length"
        )
        assert handlers == 0, path
        assert page.locator("a[href^='javascript:' i], [src^='javascript:' i]").count() == 0
        assert page.locator("img, iframe, object, embed").count() == 0, path
        scripts = page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))")
        assert [s.split("?")[0] for s in scripts] == ["/static/arbiter.js"], path
    assert page_events.dialogs == []
    assert page_events.errors == []


def test_payloads_read_exactly_as_written_and_controls_as_escapes(
    page: Page, hostile: Hostile
) -> None:
    _visit(page, f"{hostile.url}/runs/{hostile.label_run}")
    body = page.locator("main").inner_text()
    for name in ("script", "attribute", "link", "image", "svg", "ansi"):
        assert SHOWN[name] in body, name
    assert "\x1b" not in body
    assert page.locator("h1").inner_text().startswith(PAYLOADS["script"])
    ids = page.locator("table.examples tr.example td:first-child").all_inner_texts()
    assert sorted(ids) == sorted(f"{n}:{SHOWN[n]}" for n in PAYLOADS)


def test_a_hostile_system_name_and_tag_read_as_text_on_the_runs_table(
    page: Page, hostile: Hostile
) -> None:
    _visit(page, hostile.url)
    link = page.locator(f"a[href='/runs/{hostile.system_run}']")
    row = page.locator("table.runs tbody tr", has=link)
    assert PAYLOADS["image"] in row.inner_text()
    tag = row.locator(".tag").inner_text()  # a tag's key and value are clipped at 60 each
    assert tag == f"{PAYLOADS['attribute'][:59]}…={PAYLOADS['link']}"
    system = row.locator("td.system")
    assert system.inner_text() == f"{PAYLOADS['attribute']}:{PAYLOADS['link']}{PAYLOADS['script']}"


def test_a_quote_with_markup_is_marked_as_text_in_the_verdict(page: Page, hostile: Hostile) -> None:
    for verdict in hostile.verdicts:
        _visit(page, f"{hostile.url}/verdicts/{verdict}")
        if page.locator("h1").inner_text().startswith(PAYLOADS["attribute"]):
            break
    marks = page.locator(".output-text mark").all_inner_texts()
    assert [m.rstrip("0123456789") for m in marks] == [PAYLOADS["script"], PAYLOADS["image"]]
    assert SHOWN["ansi"] in page.locator(".output-text").inner_text()
    assert PAYLOADS["script"] in page.locator("table tbody").inner_text()  # the critic's name


def test_a_huge_hostile_answer_is_clipped_on_the_page(page: Page, hostile: Hostile) -> None:
    _visit(page, f"{hostile.url}/runs/{hostile.text_run}?show=failing")
    row = page.locator("table.examples tr.example", has_text="huge")
    assert len(row.inner_text()) < 1_000
    detail = page.locator("tr.detail").nth(
        page.locator("table.examples tr.example").all_inner_texts().index(row.inner_text())
    )
    assert len(detail.inner_text()) < 40_000
