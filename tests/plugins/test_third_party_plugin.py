"""A third-party plugin adds a system kind, a provider and a trajectory format through
entry points alone.

One real distribution (``arbiter-test-plugin``: a ``*.dist-info`` with its
``entry_points.txt``, as ``pip install`` leaves it, on ``sys.path``) publishes a system
kind in ``arbiter.systems``, a provider in ``arbiter.providers`` and a trajectory format
in ``arbiter.trajectory_formats``; nothing of
Arbiter's is edited or registered by the test. Both are then used end to end as a user
would: ``arbiter run --system echo`` with a ``rubric`` scorer judged by the plugin's
provider, the same run from an eval file, and ``--resume`` rebuilding the plugin's
system from the stored run; ``arbiter agent score`` reading the plugin's agent log
(told from the file, and by ``--format``), and ``POST /v1/trajectories`` storing a record
of it.
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


    def _trajectory(record, source, line):
        from arbiter.contract import Trajectory

        log = record["agent_log"]
        steps = [
            {"kind": "tool_call", "name": a["tool"], "arguments": a.get("args", {})}
            for a in log["actions"]
        ]
        return Trajectory.model_validate(
            {
                "id": log["id"],
                "agent": {"name": "log-agent"},
                "steps": steps,
                "final_answer": log.get("answer"),
                "status": "completed" if log.get("answer") else "incomplete",
                "source": {"format": "agent_log", "file": source, "line": line},
            }
        )


    def _read_file(file, options):
        from arbiter.trajectories.formats import numbered_runs

        lines = file.read_text(encoding="utf-8").splitlines()
        found = [
            _trajectory(json.loads(text), str(file), number)
            for number, text in enumerate(lines, 1)
            if text.strip()
        ]
        return numbered_runs(found, file, "agent_log")


    def _read_record(record, options):
        from arbiter.trajectories.formats import record_runs

        return record_runs([_trajectory(record, options.source, 1)], "agent_log")


    def make_format():
        from arbiter.trajectories.formats import MATCH, TrajectoryFormat

        return TrajectoryFormat(
            name="agent_log",
            summary="the test plugin's agent log, one run a line",
            read_file=_read_file,
            read_record=_read_record,
            resemblance=lambda r: MATCH if isinstance(r, dict) and "agent_log" in r else 0.0,
        )
    '''
)

ENTRY_POINTS: dict[str, dict[str, str]] = {
    "arbiter.systems": {"echo": f"{PLUGIN_MODULE}:KIND"},
    "arbiter.providers": {"canned": f"{PLUGIN_MODULE}:canned_provider"},
    "arbiter.trajectory_formats": {"agent_log": f"{PLUGIN_MODULE}:make_format"},
}
AGENT_LOG = [
    {
        "agent_log": {
            "id": "order-7",
            "actions": [{"tool": "get_order", "args": {"id": 7}}],
            "answer": "Order 7 shipped.",
        }
    },
    {"agent_log": {"id": "order-8", "actions": [{"tool": "get_order", "args": {"id": 8}}]}},
]

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


def _system_help(out: str) -> str:
    """The ``--system`` row of ``arbiter run --help``."""
    return next(line for line in out.splitlines() if "--system" in line)


def test_run_help_lists_the_plugin_s_kind_beside_the_built_ins(cli: Any, plugin: Any) -> None:
    result = cli("run", "--help")
    assert result.code == 0, result.err
    row = _system_help(result.out)
    assert "echo" in row
    assert all(kind in row for kind in ("python", "http", "mcp", "precomputed"))


def test_run_help_without_the_distribution_lists_only_the_built_ins(cli: Any) -> None:
    result = cli("run", "--help")
    assert result.code == 0, result.err
    row = _system_help(result.out)
    assert "precomputed" in row
    assert "echo" not in row


@pytest.fixture
def agent_log(tmp_path: Path) -> Path:
    path = tmp_path / "runs.log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in AGENT_LOG), encoding="utf-8")
    return path


@pytest.mark.parametrize("named", [False, True], ids=["told", "named"])
def test_agent_score_reads_the_plugin_s_trajectory_format(
    cli: Any, plugin: Any, agent_log: Path, named: bool
) -> None:
    given = ["--format", "agent_log"] if named else []
    result = cli(
        "agent", "score", str(agent_log), *given, "--scorer", "completed",
        "--scorer", "tool_calls", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["n_trajectories"] == 2
    verdicts = {run["case_id"]: run["passed"] for run in report["runs"]}
    assert verdicts == {"order-7": True, "order-8": False}


def test_agent_formats_lists_the_plugin_s_format(cli: Any, plugin: Any) -> None:
    result = cli("agent", "formats", "--json")
    assert result.code == 0, result.err
    listed = {f["name"]: f["summary"] for f in json.loads(result.out)}
    assert listed["agent_log"] == "the test plugin's agent log, one run a line"
    assert "otlp" in listed


def test_the_server_stores_a_record_of_the_plugin_s_format(plugin: Any, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from arbiter.config import Settings
    from arbiter.server.app import create_app
    from arbiter.store import Store

    store = Store(f"sqlite:///{tmp_path / 'server.db'}")
    settings = Settings(db_url=store.url, home=tmp_path / "home")
    with TestClient(create_app(settings, store=store)) as client:
        schema = client.get("/v1/openapi.json").json()
        submission = schema["components"]["schemas"]["TrajectorySubmission"]
        options = submission["properties"]["format"]["anyOf"]
        assert any("agent_log" in option.get("enum", []) for option in options)
        answer = client.post("/v1/trajectories", json={"record": AGENT_LOG[0]})
        assert answer.status_code == 201, answer.text
        (stored,) = answer.json()["items"]
        assert (stored["source_format"], stored["agent"]) == ("agent_log", "log-agent")
        assert [step["name"] for step in stored["trajectory"]["steps"]] == ["get_order"]
        listed = client.get("/v1/trajectories", params={"agent": "log-agent"}).json()
        assert [row["id"] for row in listed["items"]] == [stored["id"]]
    store.close()


def test_without_the_distribution_the_format_is_unknown(cli: Any, agent_log: Path) -> None:
    result = cli("agent", "score", str(agent_log), "--format", "agent_log")
    assert result.code == 3
    assert "unknown format" in result.err
