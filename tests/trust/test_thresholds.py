"""Default band thresholds as a deployment setting: presets, checks, the case's own
assertions over them, and ingest scoring against the lines in force."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.config import Settings
from arbiter.errors import InputError
from arbiter.server.app import create_app
from arbiter.service.trust_thresholds import (
    deployment_lines,
    set_thresholds,
    shipped_lines,
    thresholds_view,
)
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from arbiter.store.trust_settings_repository import save_deployment_setting
from arbiter.trust.thresholds import (
    Line,
    check_thresholds,
    flatten,
    preset_lines,
    thresholds_document,
    under_case,
)

Cli = Callable[..., Any]

SHIPPED = shipped_lines()


def _stricter(key: str, tight: float | None, loose: float | None) -> bool:
    assert tight is not None
    assert loose is not None
    return tight >= loose if key.startswith("min_") else tight <= loose


@pytest.mark.parametrize("key", sorted(SHIPPED))
def test_strict_is_never_looser_and_lenient_never_stricter_than_the_shipped_lines(
    key: str,
) -> None:
    strict = preset_lines("strict", balanced=SHIPPED)[key]
    lenient = preset_lines("lenient", balanced=SHIPPED)[key]
    shipped = SHIPPED[key]
    for part in ("danger", "healthy"):
        assert _stricter(key, getattr(strict, part), getattr(shipped, part))
        assert _stricter(key, getattr(shipped, part), getattr(lenient, part))
    assert preset_lines("balanced", balanced=SHIPPED)[key] == shipped


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"max_cots_usd": 1.0}, "thresholds.max_cots_usd: no such metric"),
        ({"max_cost_usd": "high"}, "thresholds.max_cost_usd: expected {healthy, danger}"),
        ({"max_cost_usd": {}}, "thresholds.max_cost_usd: expected {healthy, danger}"),
        ({"max_cost_usd": {"danger": True}}, "thresholds.max_cost_usd.danger: expected a finite"),
        ({"max_cost_usd": {"danger": float("inf")}}, "max_cost_usd.danger: expected a finite"),
        (
            {"max_cost_usd": {"healthy": 0.5, "danger": 0.1}},
            "thresholds.max_cost_usd.healthy: 0.5 is above the danger line 0.1",
        ),
        (
            {"min_efficiency": {"healthy": 0.2, "danger": 0.5}},
            "thresholds.min_efficiency.healthy: 0.2 is below the danger line 0.5",
        ),
    ],
)
def test_a_bad_line_is_refused_naming_the_metric(document: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_thresholds(document, known=SHIPPED)


LINES = st.dictionaries(
    st.sampled_from(sorted(SHIPPED)),
    st.one_of(
        st.just(Line(off=True)),
        st.builds(Line, danger=st.floats(0, 100), healthy=st.none()),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(lines=LINES)
def test_a_thresholds_table_reads_back_to_the_same_lines(lines: dict[str, Line]) -> None:
    assert check_thresholds(thresholds_document(lines), known=SHIPPED) == lines


@settings(max_examples=200, deadline=None)
@given(
    case=st.dictionaries(
        st.sampled_from(["max_cost_usd", "max_cost_usd__healthy", "max_steps", "note"]),
        st.one_of(st.floats(0, 5), st.text(max_size=3)),
    )
)
def test_a_case_keeps_its_own_pair_and_takes_the_rest_from_the_deployment(
    case: dict[str, Any],
) -> None:
    defaults = flatten(preset_lines("strict", balanced=SHIPPED))
    merged = under_case(case, defaults)
    for key, value in case.items():
        assert merged[key] == value
    for metric in ("max_cost_usd", "max_steps"):
        own = metric in case or metric + "__healthy" in case
        if own:
            for key in (metric, metric + "__healthy"):
                assert merged.get(key) == case.get(key)
        else:
            assert merged[metric] == defaults[metric]
            assert merged[metric + "__healthy"] == defaults[metric + "__healthy"]


def test_setting_a_preset_and_own_lines_is_kept_with_who_and_when(store: Store) -> None:
    assert thresholds_view(store).source == "shipped"
    view = set_thresholds(
        store, preset="strict", thresholds={"max_steps": "off", "max_cost_usd": 2.0}, by="ops"
    )
    assert (view.source, view.preset, view.set_by) == ("custom", "strict", "ops")
    by_key = {m.key: m for m in view.metrics}
    assert by_key["max_steps"].off
    assert (by_key["max_cost_usd"].danger, by_key["max_cost_usd"].healthy) == (2.0, None)
    assert by_key["max_tokens"].danger == 50000  # strict's
    assert by_key["max_tokens"].shipped_danger == 100000
    with pytest.raises(InputError, match="no such metric"):
        set_thresholds(store, thresholds={"max_money": 1}, by="ops")
    assert thresholds_view(store).preset == "strict"  # nothing was stored by the refusal


def test_an_unreadable_stored_value_leaves_the_shipped_lines(store: Store) -> None:
    save_deployment_setting(store, "thresholds", {"preset": "severe"}, by="hand")
    assert deployment_lines(store) == SHIPPED
    assert thresholds_view(store).source == "shipped"


# -- ingest scores against the lines in force -----------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    _, user = create_api_key(store, "team")
    _, admin = create_api_key(store, "ops", admin=True)
    settings = Settings(_env_file=None, home=tmp_path / "home")  # type: ignore[call-arg]
    with TestClient(create_app(settings, store=store)) as client:
        yield {"client": client, "user": user, "admin": admin}
    store.close()


def _cost_score(client: TestClient, key: str, cost: float, **assertions: Any) -> dict[str, Any]:
    body = {
        "trajectory": {
            "agent": {"name": "bot"},
            "status": "completed",
            "steps": [{"kind": "llm_call", "model": "m", "cost_usd": cost}],
            "final_answer": "ok",
        },
        "assertions": assertions,
    }
    answer = client.post("/v1/trajectories", json=body, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 201, answer.text
    [score] = [s for s in answer.json()["items"][0]["scores"] if s["name"] == "cost"]
    return dict(score)


def test_ingested_runs_are_banded_by_the_deployments_lines_under_the_cases_own(
    served: dict[str, Any],
) -> None:
    client, user, admin = served["client"], served["user"], served["admin"]
    assert _cost_score(client, user, 0.15)["band"] == "review"  # shipped: 0.05 / 0.25
    refused = client.put(
        "/v1/trust/thresholds",
        json={"preset": "strict"},
        headers={"Authorization": f"Bearer {user}"},
    )
    assert refused.status_code == 403
    admin_headers = {"Authorization": f"Bearer {admin}"}
    put = client.put("/v1/trust/thresholds", json={"preset": "strict"}, headers=admin_headers)
    assert put.status_code == 200, put.text
    assert _cost_score(client, user, 0.15)["band"] == "danger"  # strict: 0.02 / 0.10
    # The case's own line wins over the deployment's pair, as a whole.
    own = _cost_score(client, user, 0.15, max_cost_usd=1.0)
    assert (own["band"], own["passed"]) == ("healthy", True)
    off = client.put(
        "/v1/trust/thresholds",
        json={"preset": "lenient", "thresholds": {"max_cost_usd": "off"}},
        headers=admin_headers,
    )
    assert off.status_code == 200, off.text
    informational = _cost_score(client, user, 9.0)
    assert (informational["band"], informational["passed"]) == (None, None)
    bad = client.put(
        "/v1/trust/thresholds",
        json={"thresholds": {"max_cost_usd": {"healthy": 1, "danger": 0.5}}},
        headers=admin_headers,
    )
    assert bad.status_code == 400
    assert "body.thresholds.max_cost_usd.healthy" in bad.json()["error"]["message"]
    shown = client.get("/v1/trust/thresholds", headers={"Authorization": f"Bearer {user}"})
    assert shown.json()["preset"] == "lenient"


def test_thresholds_show_and_set_at_the_terminal(cli: Cli, tmp_path: Path) -> None:
    shown = cli("trust", "thresholds", "show")
    assert shown.code == 0
    assert "default band thresholds: the shipped ones (preset balanced)" in shown.out
    assert "max_cost_usd" in shown.out
    (tmp_path / "mine.json").write_text(json.dumps({"max_steps": {"healthy": 3, "danger": 5}}))
    done = cli("trust", "thresholds", "set", "mine.json", "--preset", "lenient", "--by", "ops")
    assert done.code == 0, done.err
    assert "default band thresholds: preset lenient with lines of its own, set by ops" in done.out
    assert json.loads(cli("trust", "thresholds", "show", "--json").out)["preset"] == "lenient"
    (tmp_path / "bad.json").write_text(json.dumps({"max_step": 3}))
    bad = cli("trust", "thresholds", "set", "bad.json")
    assert bad.code == 3
    assert "bad.json.max_step: no such metric" in bad.err
    assert cli("trust", "thresholds", "set", "--preset", "harsh").code == 3
