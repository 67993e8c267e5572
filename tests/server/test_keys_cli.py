"""``arbiter keys list --json``: the keys as JSON, never the keys themselves."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from tests.conftest import Result


def test_keys_list_json_has_every_key_with_an_iso_time(cli: Callable[..., Result]) -> None:
    made = cli("keys", "create", "--name", "ci bot", "--admin")
    assert made.code == 0
    key = made.out.strip()
    listed = cli("keys", "list", "--json")
    assert listed.code == 0, listed.err
    keys = json.loads(listed.out)
    assert [(k["name"], k["admin"]) for k in keys] == [("ci bot", True)]
    assert key.split("_")[1] == keys[0]["id"]
    assert datetime.fromisoformat(keys[0]["created_at"]).tzinfo is not None
    assert key not in listed.out


def test_keys_list_json_of_no_keys_is_an_empty_list(cli: Callable[..., Result]) -> None:
    listed = cli("keys", "list", "--json")
    assert listed.code == 0
    assert json.loads(listed.out) == []
