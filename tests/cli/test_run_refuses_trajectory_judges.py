"""``arbiter run`` refuses the model judges that read only an agent's run, as it refuses
the deterministic trajectory scorers: its systems produce labels and texts, so such a
judge would abstain on every output and the run would pass having judged nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.service.eval_file import load_eval_file
from arbiter.service.run_plans import prepare_run
from arbiter.service.scoring import scorer_registry

TRAJECTORY_JUDGES = ["groundedness", "answer_groundedness", "tool_arg_optimality", "plan_quality"]
TEXT_JUDGES = ["answer_correctness", "instruction_following", "content_safety"]


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    data = tmp_path / "texts.jsonl"
    data.write_text('{"id": "a", "input": {"question": "q?"}, "expected": "x", "output": "x"}\n')
    return data


@pytest.mark.parametrize("name", TRAJECTORY_JUDGES)
@pytest.mark.parametrize("extra", [(), ("--dry-run",)])
def test_run_refuses_a_judge_of_agent_trajectories_naming_the_agent_commands(
    cli: Any, tmp_path: Path, texts: Path, name: str, extra: tuple[str, ...]
) -> None:
    args = ("--dataset", str(texts), "--system", "precomputed", "--scorer", "exact")
    result = cli("run", *args, "--scorer", name, *extra)
    assert result.code == 3
    assert f"scorer {name!r} asks a model about an agent's trajectory" in result.err
    assert f"arbiter agent score FILE --scorer {name}" in result.err
    assert "arbiter agent run CASES" in result.err
    assert result.err.count("\n") == 1
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize("name", TEXT_JUDGES)
def test_run_keeps_the_judges_that_read_an_answer_text(cli: Any, texts: Path, name: str) -> None:
    args = ("--dataset", str(texts), "--system", "precomputed", "--scorer", name, "--dry-run")
    done = cli("run", *args)
    assert done.code == 0, done.err


def test_an_eval_file_with_a_trajectory_judge_is_refused_at_the_file(
    cli: Any, tmp_path: Path, texts: Path
) -> None:
    spec = tmp_path / "judged.eval.toml"
    spec.write_text(
        '[dataset]\npath = "texts.jsonl"\n[system]\nkind = "precomputed"\n'
        '[[scorers]]\nname = "exact"\n[[scorers]]\nname = "plan_quality"\n'
    )
    result = cli("run", str(spec))
    assert result.code == 3
    assert f"{spec}: scorer 'plan_quality' asks a model about an agent's trajectory" in result.err


def test_the_service_refuses_it_for_every_caller_of_a_plan(tmp_path: Path, texts: Path) -> None:
    spec = tmp_path / "judged.eval.toml"
    spec.write_text(
        '[dataset]\npath = "texts.jsonl"\n[system]\nkind = "precomputed"\n'
        '[[scorers]]\nname = "exact"\n[[scorers]]\nname = "tool_arg_optimality"\n'
    )
    registry = scorer_registry(plugins=False)
    plan = load_eval_file(spec, registry=registry, timeout=5.0, concurrency=1, retries=0)
    with pytest.raises(InputError, match="'tool_arg_optimality' asks a model about an agent"):
        prepare_run(plan, registry=registry)


def test_every_model_scorer_says_whether_it_needs_a_trajectory() -> None:
    registry = scorer_registry(plugins=False)
    models = {n for n in registry.names() if registry.factory_of(n).kind == "model"}
    needing = {n for n in models if registry.factory_of(n).needs_trajectory}
    assert needing == set(TRAJECTORY_JUDGES)
    assert set(TEXT_JUDGES) <= models - needing
