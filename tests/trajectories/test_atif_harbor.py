"""ATIF trajectories written by Harbor's own models import and score.

The files under ``data/atif/`` were built with ``harbor.models.trajectories`` of Harbor
0.25.0 (Apache-2.0) and passed its ``TrajectoryValidator`` (``make_atif_trajectories.py``
beside them): schema versions 1.2, 1.5, 1.7 and 1.8, tool calls with observations,
metrics and final metrics, copied context, a dispatch made in code, an embedded
sub-agent and an audio part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Handoff, LlmCall, ToolCall
from arbiter.trajectories.atif import load_atif
from arbiter.trajectories.loader import detect_format
from tests.conftest import Result

HARBOR = Path(__file__).parent / "data" / "atif"
FILES = sorted(HARBOR.glob("harbor_*.json"))


def test_the_harbor_files_are_there() -> None:
    assert [f.name for f in FILES] == [
        "harbor_v1_2_single.json",
        "harbor_v1_5_copied_context.json",
        "harbor_v1_7_subagent.json",
        "harbor_v1_8_audio.json",
        "harbor_v1_8_subagent.json",
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_harbor_file_imports_and_scores_with_agent_score(cli: Any, path: Path) -> None:
    assert detect_format(path) == "atif"
    result: Result = cli("agent", "score", str(path), "--format", "atif", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["n_trajectories"], report["n_tasks"]) == (1, 1)
    assert report["scorers"]["tool_success_rate"]["pass"] == 1
    assert report["scorers"]["completed"]["pass"] == 1


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_harbor_file_reads_without_repairs(path: Path) -> None:
    ((trajectory, warnings),) = load_atif(path)
    assert warnings == []  # every field Harbor writes is one ATIF defines
    assert trajectory.status == "completed"
    assert any(isinstance(s, ToolCall) and s.result for s in trajectory.steps)


def test_the_tokens_and_cost_of_each_step_add_up_to_the_final_metrics() -> None:
    ((trajectory, _),) = load_atif(HARBOR / "harbor_v1_2_single.json")
    totals = trajectory.totals()
    assert (totals.input_tokens, totals.output_tokens) == (270, 27)
    assert totals.cost_usd == pytest.approx(0.0007)
    call = next(s for s in trajectory.steps if isinstance(s, ToolCall))
    assert (call.name, call.arguments, call.result) == (
        "bash",
        {"command": "wc -l notes.txt"},
        "42 notes.txt",
    )
    assert trajectory.final_answer == "notes.txt has 42 lines."


def test_copied_context_is_kept_without_a_warning() -> None:
    ((trajectory, warnings),) = load_atif(HARBOR / "harbor_v1_5_copied_context.json")
    assert warnings == []
    kept = trajectory.metadata["atif"]
    assert kept["steps"][0] == {"step_id": 1, "is_copied_context": True}  # type: ignore[index,call-overload]


@pytest.mark.parametrize("name", ["harbor_v1_7_subagent.json", "harbor_v1_8_subagent.json"])
def test_a_dispatch_made_in_code_is_no_model_call_and_the_sub_agent_is_a_handoff(
    name: str,
) -> None:
    ((trajectory, _),) = load_atif(HARBOR / name)
    assert [s.kind for s in trajectory.steps] == ["tool_call", "handoff", "llm_call"]
    delegate, handoff, answer = trajectory.steps
    assert isinstance(delegate, ToolCall)
    assert delegate.name == "delegate"
    assert isinstance(handoff, Handoff)
    assert handoff.trajectory is not None
    assert handoff.trajectory.agent.name == "researcher"
    assert [s.kind for s in handoff.trajectory.steps] == ["llm_call", "tool_call", "llm_call"]
    assert isinstance(answer, LlmCall)
    # The orchestrator's one model call, then the researcher's two: 60 + 80 + 95.
    assert trajectory.totals().input_tokens == 235
    assert trajectory.metadata["atif"]["steps"][0]["dispatch_message"] == (  # type: ignore[index,call-overload]
        "Delegating to the researcher."
    )


def test_an_audio_part_is_kept_and_the_text_part_is_the_message() -> None:
    ((trajectory, warnings),) = load_atif(HARBOR / "harbor_v1_8_audio.json")
    assert warnings == []
    first = trajectory.steps[0]
    assert isinstance(first, LlmCall)
    assert [m.content for m in first.input_messages] == ["Transcribe the clip and answer it."]
    kept = trajectory.metadata["atif"]["steps"][0]  # type: ignore[index,call-overload]
    assert kept["message_parts"][0]["type"] == "audio"
    assert kept["message_parts"][0]["source"]["path"] == "clips/question.wav"
