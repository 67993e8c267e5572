"""``arbiter report RUN --format github|gitlab``: the job summary, annotations, code quality.

Runs are made at the command line from eval files over recorded answers (the
``precomputed`` system), some of them hostile: example ids, answers and cohorts holding
links, bare URLs, HTML, pipes and newlines. The summary is rendered by GitHub's own
Markdown (cmark-gfm) to check that only Arbiter's own links come out of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from arbiter.harness.github_report import command_data, command_property

SERVER = "http://arbiter.internal:8080"
HOSTILE_ID = "x](https://evil.example) <script>alert(1)</script> | www.evil.example"
HOSTILE_COHORT = "wire\n::error::forged %0A"


def rows(wrong: set[str]) -> list[dict[str, Any]]:
    """Ten capitals, answered right except the ids in ``wrong``, plus one hostile row."""
    cities = ["Paris", "Rome", "Oslo", "Lima", "Bern", "Kyiv", "Riga", "Doha", "Baku", "Male"]
    found = [
        {
            "id": f"q{i}",
            "input": {"q": f"capital {i}"},
            "expected": city,
            "output": "Atlantis https://evil.example" if f"q{i}" in wrong else city,
            "cohort": HOSTILE_COHORT if i % 2 else "plain",
        }
        for i, city in enumerate(cities)
    ]
    found.append(
        {
            "id": HOSTILE_ID,
            "input": {"q": "hostile"},
            "expected": "Paris",
            "output": "see <img src=x onerror=alert(1)> and mail ceo@evil.example"
            if wrong
            else "Paris",
        }
    )
    return found


def eval_file(folder: Path, name: str, wrong: set[str], gate: str) -> Path:
    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(wrong)), encoding="utf-8")
    path = folder / f"{name}.eval.toml"
    path.write_text(
        f'name = "{name}"\n\n[dataset]\npath = "{data.name}"\n\n[system]\nkind = "precomputed"\n\n'
        f'[[scorers]]\nname = "normalized"\n\n[gate]\n{gate}\n',
        encoding="utf-8",
    )
    return path


RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")


def run(cli: Callable[..., Any], path: Path) -> str:
    done = cli("run", "-q", str(path))
    found = RUN_ID.search(done.out)
    assert found is not None, done.out + done.err
    return found[0]


@pytest.fixture
def runs(cli: Callable[..., Any], tmp_path: Path) -> dict[str, str]:
    """A baseline that passes, and a run with four wrong answers gated against it."""
    good = run(cli, eval_file(tmp_path, "good", set(), "min_accuracy = 0.8"))
    worse_file = eval_file(
        tmp_path, "worse", {"q0", "q1", "q2", "q3"}, f'min_accuracy = 0.8\nbaseline = "{good}"'
    )
    cli("run", "-q", str(worse_file))  # exits 1: its gate fails
    worse = next(r for r in RUN_ID.findall(cli("runs").out + cli("runs").err) if r != good)
    return {"good": good, "worse": worse}


def html(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def test_the_summary_is_appended_to_the_step_summary_and_annotations_go_to_stdout(
    cli: Callable[..., Any], runs: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    shown = cli("report", runs["worse"], "--format", "github")
    assert shown.code == 0  # the report reports; arbiter gate fails the job
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("# earlier step\n## ❌ Arbiter — worse\n")
    assert "**Gate: failed**" in written
    assert "| pass rate | 54.5% | 28.0% – 78.7% | 11 |" in written
    assert "wrote the job summary to $GITHUB_STEP_SUMMARY" in shown.err
    commands = shown.out.splitlines()
    errors = [line for line in commands if line.startswith("::error title=Arbiter gate%3A worse::")]
    warnings = [line for line in commands if line.startswith("::warning title=Arbiter gate")]
    assert len(errors) + len(warnings) == len(commands)
    assert errors[0].endswith(
        "::accuracy 0.545 is below the floor 0.800 (95%25 CI 0.280–0.787, n=11)"
    )
    assert any("accuracy regressed by 0.455 against the baseline" in line for line in errors)


def test_a_hostile_cohort_cannot_forge_or_split_an_annotation(
    cli: Callable[..., Any], runs: dict[str, str], tmp_path: Path
) -> None:
    floors = "min_accuracy = 0.0\ncohorts = {" + json.dumps(HOSTILE_COHORT) + " = 0.9}"
    gated = run(cli, eval_file(tmp_path, "cohorts", {"q1"}, floors))
    shown = cli("report", gated, "--format", "github", "--output", str(tmp_path / "s.md"))
    lines = shown.out.splitlines()
    [cohort_line] = [line for line in lines if "cohort" in line]
    assert cohort_line.startswith("::error title=")
    assert "cohort 'wire\\n::error::forged %250A' accuracy" in cohort_line  # one line
    assert sum(line.startswith("::") for line in lines) == len(lines)


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("100% sure", "100%25 sure", "100%25 sure"),
        ("one\r\ntwo", "one%0D%0Atwo", "one%0D%0Atwo"),
        ("a: b, c", "a: b, c", "a%3A b%2C c"),
        ("bell\x07 esc\x1b[2J", "bell\\x07 esc\\x1b[2J", "bell\\x07 esc\\x1b[2J"),
    ],
)
def test_workflow_command_escaping(text: str, data: str, prop: str) -> None:
    assert command_data(text) == data
    assert command_property(text) == prop


def test_rendered_by_github_only_arbiter_s_links_and_no_markup_come_out(
    cli: Callable[..., Any], runs: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ARBITER_SERVER_URL", SERVER)
    out = tmp_path / "summary.md"
    cli("report", runs["worse"], "--format", "github", "-o", str(out))
    page = html(out.read_text(encoding="utf-8"))
    links = re.findall(r'<a href="([^"]*)"', page)
    worse, good = runs["worse"], runs["good"]
    assert links == [
        f"{SERVER}/runs/{worse}",
        f"{SERVER}/runs/{worse}?show=failing",
        f"{SERVER}/compare?a={good}&amp;b={worse}",
    ]
    tags = set(re.findall(r"<(/?[a-z0-9]+)", page))
    assert tags <= {
        "h2",
        "/h2",
        "p",
        "/p",
        "a",
        "/a",
        "strong",
        "/strong",
        "ul",
        "/ul",
        "li",
        "/li",
        "table",
        "/table",
        "thead",
        "/thead",
        "tbody",
        "/tbody",
        "tr",
        "/tr",
        "th",
        "/th",
        "td",
        "/td",
        "code",
        "/code",
        "details",
        "/details",
        "summary",
        "/summary",
        "h3",
        "/h3",
        "em",
        "/em",
    }
    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as written


def test_the_regressions_name_the_paired_change_and_the_broken_examples(
    cli: Callable[..., Any], runs: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "summary.md"
    cli("report", runs["worse"], "--format", "github", "-o", str(out))
    text = out.read_text(encoding="utf-8")
    assert f"### Against baseline `{runs['good']}`" in text
    change = r"\| accuracy \| 100\.0% \| 54\.5% \| -45\.5 pts \| -\d+\.\d to -\d+\.\d \|"
    assert re.search(change + r" \*\*worse\*\* \|", text)
    assert "5 examples broke and 0 were fixed of 11 paired" in text
    assert "<details><summary>Examples that broke</summary>" in text
    assert "| q0 | Paris | Atlantis https&#8288;://evil.example |" in text


def test_a_run_without_a_gate_says_how_to_gate_it(cli: Callable[..., Any], tmp_path: Path) -> None:
    data = tmp_path / "plain.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(set())), encoding="utf-8")
    done = cli(
        "run", "-q", "--dataset", str(data), "--system", "precomputed", "--scorer", "normalized"
    )
    run_id = RUN_ID.search(done.out)[0]  # type: ignore[index]
    shown = cli("report", run_id, "--format", "github")
    assert "## Arbiter — plain" in shown.out
    assert f"**Gate:** none (the run has no gate; gate it with `arbiter gate {run_id}" in shown.out
    assert "Every scorer passed every repetition of every example." in shown.out
    assert "::" not in shown.out


def test_the_gitlab_report_is_code_quality_json_with_stable_fingerprints(
    cli: Callable[..., Any], runs: dict[str, str], tmp_path: Path
) -> None:
    worse = json.loads(cli("report", runs["worse"], "--format", "gitlab").out)
    again = run(cli, tmp_path / "worse.eval.toml")
    repeated = json.loads(cli("report", again, "--format", "gitlab").out)
    for issue in worse:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["location"] == {"path": "worse", "lines": {"begin": 1}}
        assert "\n" not in issue["description"]
    gate = [i for i in worse if i["check_name"] == "arbiter-gate"]
    examples = [i for i in worse if i["check_name"] == "arbiter-example"]
    assert {i["severity"] for i in gate} == {"major"}
    assert len(examples) == 5
    assert len({i["fingerprint"] for i in examples}) == 5
    assert [i["fingerprint"] for i in repeated] == [i["fingerprint"] for i in worse]
    assert any("q0 failed normalized on 1/1 repetitions" in i["description"] for i in examples)


def test_failures_is_refused_with_a_ci_format(
    cli: Callable[..., Any], runs: dict[str, str]
) -> None:
    refused = cli("report", runs["worse"], "--format", "github", "--failures")
    assert refused.code == 3
    assert "--failures lists examples" in refused.err


def test_baseline_gates_a_run_without_a_gate_against_that_run(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    ids = []
    for name, wrong in (("before", set()), ("after", {"q0", "q1", "q2", "q3", "q4"})):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows(wrong)), encoding="utf-8")
        done = cli("run", "-q", "--dataset", str(data), "--system", "precomputed")
        ids.append(RUN_ID.search(done.out)[0])  # type: ignore[index]
    before, after = ids
    shown = cli("report", after, "--format", "github", "--baseline", before)
    assert "**Gate: failed**" in shown.out
    assert f"### Against baseline `{before}`" in shown.out
    assert "::error title=Arbiter gate%3A after::accuracy regressed by" in shown.out
    refused = cli("report", after, "--format", "markdown", "--baseline", before)
    assert refused.code == 3
    assert "--baseline is for --format github or gitlab" in refused.err
