"""A third-party plugin adds a system kind and a provider through entry points alone.

One real distribution (``arbiter-test-plugin``: a ``*.dist-info`` with its
``entry_points.txt``, as ``pip install`` leaves it, on ``sys.path``) publishes a system
kind in ``arbiter.systems`` and a provider in ``arbiter.providers``; nothing of
Arbiter's is edited or registered by the test. Both are then used end to end as a user
would: ``arbiter run --system echo`` with a ``rubric`` scorer judged by the plugin's
provider, the same run from an eval file, and ``--resume`` rebuilding the plugin's
system from the stored run.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Report
from arbiter.systems.registry import SystemRegistry
from tests.helpers.plugins import install_distribution

PLUGIN_MODULE = "arbiter_test_plugin"  # written into tmp_path; no other test uses the name

PLUGIN_SOURCE = textwrap.dedent(
    '''
    """What a separate package would ship: a system kind and a provider, nothing else."""

    import json

    from arbiter.contract import Prediction
    from arbiter.providers.base import CompletionResponse
    from arbiter.systems.registry import SystemKind

    PROMPTS = []
    """Every prompt the provider was asked (the test reads it)."""


    class EchoField:
        """A system under test answering each input with its field named by the target."""

        def __init__(self, field):
            self.field = field

        async def __call__(self, input):
            return Prediction(label=str(input.get(self.field, "")))

        def describe(self):
            return {"kind": "echo", "target": self.field}


    KIND = SystemKind(
        name="echo",
        summary="answers each input with the field --target names",
        target="the input field to answer with",
        describe=lambda options: {"kind": "echo", "target": options.target},
        build=lambda description, headers: EchoField(description["target"]),
    )


    class CannedJudge:
        """A provider whose judge passes an output naming Paris."""

        name = "canned"

        async def complete(self, request):
            PROMPTS.append(request.prompt)
            output = request.prompt.rpartition("<output>")[2].partition("</output>")[0]
            verdict = "pass" if "Paris" in output else "fail"
            answer = {"reasoning": "canned", "evidence": [], "verdict": verdict, "score": 1.0}
            return CompletionResponse(text=json.dumps(answer), model=request.model)


    def canned_provider(settings, http):
        return CannedJudge()
    '''
)

ENTRY_POINTS: dict[str, dict[str, str]] = {
    "arbiter.systems": {"echo": f"{PLUGIN_MODULE}:KIND"},
    "arbiter.providers": {"canned": f"{PLUGIN_MODULE}:canned_provider"},
    # TRAJECTORY FORMAT: the trajectory-format registry adds its entry point here, e.g.
    # "arbiter.trajectory_formats": {"<name>": f"{PLUGIN_MODULE}:<FORMAT>"}, with its
    # source in PLUGIN_SOURCE and a test below that imports a trace through it.
}

RUBRIC = "rubric:provider=canned,model=canned-1,rubric=Names the capital of France"
ROWS = [
    {"id": "fr", "input": {"answer": "Paris"}, "expected": "Paris"},
    {"id": "it", "input": {"answer": "Lyon"}, "expected": "Paris"},
]


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The distribution installed on ``sys.path``; yields its module once imported."""
    site = tmp_path / "site"
    site.mkdir()
    install_distribution(
        site, "arbiter-test-plugin", groups=ENTRY_POINTS, modules={PLUGIN_MODULE: PLUGIN_SOURCE}
    )
    monkeypatch.syspath_prepend(str(site))
    yield lambda: sys.modules[PLUGIN_MODULE]
    sys.modules.pop(PLUGIN_MODULE, None)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "capitals.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def _sections(report: Report) -> dict[str, tuple[int, int]]:
    return {name: (s.passed, s.failed) for name, s in report.sections.items()}


def test_the_plugin_s_kind_and_provider_are_registered_by_entry_points_alone(
    plugin: Any,
) -> None:
    from arbiter.providers.registry import ProviderRegistry

    assert "echo" in SystemRegistry.default().names()
    assert "canned" in ProviderRegistry.default().names()
    assert "echo" not in SystemRegistry.default(plugins=False).names()


def test_arbiter_run_uses_the_plugin_s_system_and_its_provider_judges(
    cli: Any, plugin: Any, dataset: Path
) -> None:
    result = cli(
        "run", "--dataset", str(dataset), "--system", "echo", "--target", "answer",
        "--scorer", "casefold", "--scorer", RUBRIC, "--no-cache", "-q", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    assert report.system == "echo:answer"
    assert _sections(report) == {"casefold": (1, 1), "rubric": (1, 1)}
    prompts = plugin().PROMPTS
    assert len(prompts) == 2
    assert {"Paris", "Lyon"} == {p.rpartition("<output>")[2].split()[0] for p in prompts}
    assert report.run_id is not None
    resumed = cli("run", "--resume", report.run_id, "-q", "--json")  # rebuilt by kind "echo"
    assert resumed.code == 0, resumed.err
    assert _sections(Report.model_validate_json(resumed.out)) == _sections(report)


def test_an_eval_file_names_the_plugin_s_kind_and_provider(
    cli: Any, plugin: Any, dataset: Path, tmp_path: Path
) -> None:
    path = tmp_path / "eval.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [dataset]
            path = "{dataset.name}"

            [system]
            kind = "echo"
            target = "answer"

            [run]
            cache = false

            [[scorers]]
            name = "rubric"
            args = {{provider = "canned", model = "canned-1", rubric = "Names the capital"}}
            gate = true
            """
        ),
        encoding="utf-8",
    )
    dry = cli("run", str(path), "--dry-run")
    assert dry.code == 0, dry.err
    assert "through echo:answer" in dry.out
    result = cli("run", str(path), "-q", "--json")
    assert result.code == 0, result.err
    report = Report.model_validate_json(result.out)
    assert _sections(report) == {"rubric": (1, 1)}
    assert len(plugin().PROMPTS) == 2


def test_without_the_distribution_the_kind_is_unknown(cli: Any, dataset: Path) -> None:
    result = cli("run", "--dataset", str(dataset), "--system", "echo", "--target", "answer")
    assert result.code != 0
    assert "'echo' is not a system kind" in result.err
