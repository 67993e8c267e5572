"""Scorer plugins by entry point: the entry point's name is the scorer's name, and a
plugin never replaces a scorer registered before it (it is ignored, said once)."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Example, Output, Report
from arbiter.scoring import registry as registry_module
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store
from tests.helpers.plugins import install_distribution

PLUGIN_MODULE = "registry_test_plugin"  # written into tmp_path; no other test uses the name

PLUGIN_SOURCE = textwrap.dedent(
    '''
    from arbiter.contract import Score
    from arbiter.scoring.base import scorer


    @scorer(name="inner_word", description="The output holds a word.")
    def has_word(*, word: str = "paris"):
        """The output holds a word.

        Args:
            word: The word, in any case.
        """

        def score(example, output):
            found = word.casefold() in (output.answer_text or "").casefold()
            return Score(value=float(found), passed=found)

        return score


    @scorer(name="casefold")
    def shadow():
        """Would replace the built-in casefold."""
        return lambda example, output: Score(passed=False, explanation="the shadow")
    '''
)


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    """Each test sees its own first warning (they are said once per process)."""
    registry_module._warn_ignored.cache_clear()
    yield
    registry_module._warn_ignored.cache_clear()
    sys.modules.pop(PLUGIN_MODULE, None)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path holding the plugin's module."""
    root = tmp_path / "site"
    root.mkdir()
    (root / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    return root


def _ignored(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == registry_module.__name__ and record.levelno == logging.WARNING
    ]


async def test_a_plugin_is_named_by_its_entry_point_not_by_its_scorer_name(site: Path) -> None:
    install_distribution(site, "word-scorers", {"has_word": f"{PLUGIN_MODULE}:has_word"})
    registry = scorer_registry()
    spec = registry.spec_of("has_word:word=Lyon")
    assert (spec.name, spec.args) == ("has_word", {"word": "Lyon"})
    assert "inner_word" not in registry.names()
    built = registry.build(spec)  # as --resume and replay rebuild it: by the stored name
    score = await built(Example(id="a", input={}), Output(text="Lyon, France"))
    assert (score.name, score.passed) == ("has_word", True)


def test_a_run_naming_a_plugin_by_its_entry_point_runs_lists_and_resumes(
    cli: Any, site: Path, tmp_path: Path
) -> None:
    install_distribution(site, "word-scorers", {"has_word": f"{PLUGIN_MODULE}:has_word"})
    data = tmp_path / "answers.jsonl"
    rows = [{"id": "a", "input": {}, "output": "Paris"}, {"id": "b", "input": {}, "output": "Rome"}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    listed = cli("scorers", "--json")
    assert "has_word" in [entry["name"] for entry in json.loads(listed.out)]
    result = cli(
        "run", "--dataset", str(data), "--system", "precomputed", "--scorer", "has_word", "-q",
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    assert (report.sections["has_word"].passed, report.sections["has_word"].failed) == (1, 1)
    assert report.run_id is not None
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert [s.name for s in store.get_run(report.run_id).run_config.scorers] == ["has_word"]
    finally:
        store.close()
    resumed = cli("run", "--resume", report.run_id, "-q")
    assert resumed.code == 0, resumed.err


def test_a_plugin_named_like_a_builtin_is_ignored_with_one_warning(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    install_distribution(site, "shadow-scorers", {"casefold": f"{PLUGIN_MODULE}:shadow"})
    caplog.set_level(logging.WARNING)
    registries = [scorer_registry() for _ in range(3)]  # as one command may build them
    assert _ignored(caplog) == [
        "scorer plugin 'casefold' of 'shadow-scorers' is ignored: the built-in scorer of that "
        "name is used (rename the plugin's entry point to use it)"
    ]
    for registry in registries:
        assert registry.factory_of("casefold").factory.__module__ == "arbiter.scoring.text"
    assert PLUGIN_MODULE not in sys.modules  # an ignored plugin is not even imported


def test_a_second_plugin_of_a_name_is_ignored_naming_the_first(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    later = tmp_path / "later-site"
    install_distribution(later, "second-scorers", {"has_word": f"{PLUGIN_MODULE}:shadow"})
    monkeypatch.syspath_prepend(str(later))
    install_distribution(site, "first-scorers", {"has_word": f"{PLUGIN_MODULE}:has_word"})
    monkeypatch.syspath_prepend(str(site))  # first on sys.path: found first
    caplog.set_level(logging.WARNING)
    registry = scorer_registry()
    assert _ignored(caplog) == [
        "scorer plugin 'has_word' of 'second-scorers' is ignored: the scorer of "
        "'first-scorers' of that name is used (rename the plugin's entry point to use it)"
    ]
    assert registry.factory_of("has_word").factory.__name__ == "has_word"
