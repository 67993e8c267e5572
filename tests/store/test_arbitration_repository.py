"""Storing the server's arbitrations: one transaction, ids that do not collide under load."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from sqlalchemy import func, select

from arbiter.contract import Case
from arbiter.jury.jury import Jury
from arbiter.store import Store
from arbiter.store.arbitration_repository import save_arbitration
from arbiter.store.jury_models import CritiqueRow
from arbiter.store.ownership_repository import is_visible


def _judged(case_id: str) -> tuple[Case, Jury]:
    case = Case(
        id=case_id,
        task="Summarize the refund policy.",
        context="Refunds are accepted within 30 days of purchase with a receipt.",
        output="Refunds are accepted within 60 days of purchase with a receipt.",
    )
    return case, Jury()


def test_arbitration_run_ids_carry_sixteen_random_hex_digits(tmp_path: Path) -> None:
    # Six digits (the terminal's run ids) collided at 265 arbitrations/s in the load bench.
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    case, jury = _judged("c-1")
    verdict = asyncio.run(jury.judge_async(case))
    stored = save_arbitration(store, [], case, verdict, owner=None)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{16}", stored.run_id), stored.run_id


def test_an_arbitration_stores_its_critiques_and_owner_with_the_verdict(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    case, jury = _judged("c-2")
    verdict = asyncio.run(jury.judge_async(case))
    stored = save_arbitration(store, [{"name": "factual"}], case, verdict, owner="key-a")
    with store.session() as session:
        critiques = session.scalar(
            select(func.count()).select_from(CritiqueRow).where(CritiqueRow.run_id == stored.run_id)
        )
    assert critiques == len(verdict.critiques) > 0
    assert is_visible(store, "verdict", str(stored.id), "key-a")
    assert not is_visible(store, "verdict", str(stored.id), "key-b")
    assert is_visible(store, "jury_run", stored.run_id, "key-a")
