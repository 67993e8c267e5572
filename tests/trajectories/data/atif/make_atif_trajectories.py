"""Writes the ATIF trajectories beside it with Harbor's own models (not a test).

Each file is built from ``harbor.models.trajectories`` (Harbor 0.25.0, Apache-2.0),
validated by those models and by Harbor's ``TrajectoryValidator``, and written as
``Trajectory.to_json_dict()`` gives it (indented JSON). Run it where ``harbor``
imports::

    python make_atif_trajectories.py

Harbor 0.25.0 asks for Python 3.12; its trajectory models need only pydantic, so on
Python 3.11 they and the validator also run from the unpacked wheel
(``PYTHONPATH=<unpacked wheel>``, with pydantic installed): that is how the shipped files
were written. (``harbor.utils.trajectory_utils``, whose ``format_trajectory_json`` only
puts long number arrays on one line, needs 3.12, so it is not used.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harbor.models.trajectories import (
    Agent,
    AudioSource,
    ContentPart,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    SubagentTrajectoryRef,
    ToolCall,
    Trajectory,
)
from harbor.utils.trajectory_validator import TrajectoryValidator

HERE = Path(__file__).parent
T0 = "2026-12-07T10:00:0{}Z"


def single_v1_2() -> Trajectory:
    """ATIF-v1.2: one agent lists a folder, counts lines with a tool, answers."""
    return Trajectory(
        schema_version="ATIF-v1.2",
        session_id="harbor-v1-2-count-lines",
        agent=Agent(name="terminal-agent", version="0.1.0", model_name="mock/model-a"),
        steps=[
            Step(step_id=1, timestamp=T0.format(0), source="system",
                 message="You are a careful shell agent."),
            Step(step_id=2, timestamp=T0.format(1), source="user",
                 message="How many lines does notes.txt have?"),
            Step(
                step_id=3, timestamp=T0.format(2), source="agent", model_name="mock/model-a",
                message="I will count them with wc.",
                reasoning_content="wc -l prints the count and the file name.",
                tool_calls=[ToolCall(tool_call_id="call-1", function_name="bash",
                                     arguments={"command": "wc -l notes.txt"})],
                observation=Observation(results=[
                    ObservationResult(source_call_id="call-1", content="42 notes.txt"),
                ]),
                metrics=Metrics(prompt_tokens=120, completion_tokens=18, cost_usd=0.0004),
            ),
            Step(
                step_id=4, timestamp=T0.format(3), source="agent", model_name="mock/model-a",
                message="notes.txt has 42 lines.",
                metrics=Metrics(prompt_tokens=150, completion_tokens=9, cost_usd=0.0003),
            ),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=270, total_completion_tokens=27,
                                   total_cost_usd=0.0007, total_steps=4),
    )  # fmt: skip


def copied_context_v1_5() -> Trajectory:
    """ATIF-v1.5: a continued run whose first step is copied context; a tool fails."""
    return Trajectory(
        schema_version="ATIF-v1.5",
        session_id="harbor-v1-5-continued",
        agent=Agent(name="terminal-agent", version="0.1.0", model_name="mock/model-a",
                    tool_definitions=[{"name": "bash", "parameters": {"command": "string"}}]),
        notes="Continued after a summary; step 1 is the summary, copied.",
        steps=[
            Step(step_id=1, source="user", is_copied_context=True,
                 message="Summary so far: the build failed on a missing header."),
            Step(
                step_id=2, source="agent", model_name="mock/model-a",
                message="Let me look for the header.",
                tool_calls=[ToolCall(tool_call_id="call-a", function_name="bash",
                                     arguments={"command": "ls include/"})],
                observation=Observation(results=[
                    ObservationResult(source_call_id="call-a",
                                      content="ls: cannot access 'include/': No such file"),
                ]),
                metrics=Metrics(prompt_tokens=300, completion_tokens=20, cached_tokens=200),
            ),
            Step(step_id=3, source="agent", model_name="mock/model-a",
                 message="The include folder is missing; the header must be generated first.",
                 metrics=Metrics(prompt_tokens=340, completion_tokens=15)),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=640, total_completion_tokens=35,
                                   total_cached_tokens=200, total_steps=3),
    )  # fmt: skip


def _researcher(version: str) -> Trajectory:
    """The embedded sub-agent: it searches once and reports."""
    return Trajectory(
        schema_version=version,  # type: ignore[arg-type]
        trajectory_id="sub-researcher-1",
        agent=Agent(name="researcher", version="0.2.0", model_name="mock/model-b"),
        steps=[
            Step(step_id=1, source="user", message="Find the release date of v2."),
            Step(
                step_id=2, source="agent", model_name="mock/model-b", llm_call_count=1,
                message="Searching the changelog.",
                tool_calls=[ToolCall(tool_call_id="search-1", function_name="search",
                                     arguments={"query": "v2 release date"},
                                     extra={"timeout_s": 10})],
                observation=Observation(results=[
                    ObservationResult(source_call_id="search-1",
                                      content="CHANGELOG: v2 released 2026-03-14.",
                                      extra={"score": 0.91, "doc_id": "CHANGELOG.md"}),
                ]),
                metrics=Metrics(prompt_tokens=80, completion_tokens=10),
            ),
            Step(step_id=3, source="agent", model_name="mock/model-b", llm_call_count=1,
                 message="v2 was released on 2026-03-14.",
                 metrics=Metrics(prompt_tokens=95, completion_tokens=8)),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=175, total_completion_tokens=18,
                                   total_steps=3),
    )  # fmt: skip


def orchestrator(version: str) -> Trajectory:
    """ATIF-v1.7 and later: an orchestrator delegates to an embedded sub-agent."""
    return Trajectory(
        schema_version=version,  # type: ignore[arg-type]
        session_id=f"harbor-{version.lower().replace('.', '-')}-orchestrated",
        trajectory_id="root",
        agent=Agent(name="orchestrator", version="1.0.0", model_name="mock/model-a"),
        steps=[
            Step(step_id=1, source="user", message="When was v2 released?"),
            Step(
                step_id=2, source="agent", llm_call_count=0,
                message="Delegating to the researcher.",
                tool_calls=[ToolCall(tool_call_id="delegate-1", function_name="delegate",
                                     arguments={"agent": "researcher",
                                                "task": "Find the release date of v2."})],
                observation=Observation(results=[
                    ObservationResult(
                        source_call_id="delegate-1",
                        content="v2 was released on 2026-03-14.",
                        subagent_trajectory_ref=[
                            SubagentTrajectoryRef(trajectory_id="sub-researcher-1"),
                        ],
                    ),
                ]),
            ),
            Step(step_id=3, source="agent", model_name="mock/model-a", llm_call_count=1,
                 message="v2 was released on 2026-03-14.",
                 metrics=Metrics(prompt_tokens=60, completion_tokens=12, cost_usd=0.0002),
                 extra={"confidence": "high"}),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=60, total_completion_tokens=12,
                                   total_cost_usd=0.0002, total_steps=3),
        subagent_trajectories=[_researcher(version)],
        extra={"harness": "make_atif_trajectories.py"},
    )  # fmt: skip


def spoken_question_v1_8() -> Trajectory:
    """ATIF-v1.8: the user's question comes as text and an audio clip."""
    return Trajectory(
        schema_version="ATIF-v1.8",
        session_id="harbor-v1-8-spoken",
        agent=Agent(name="voice-agent", version="0.1.0", model_name="mock/model-c"),
        steps=[
            Step(step_id=1, source="user", message=[
                ContentPart(type="text", text="Transcribe the clip and answer it."),
                ContentPart(type="audio", source=AudioSource(
                    media_type="audio/wav", path="clips/question.wav", duration_sec=2.5)),
            ]),
            Step(
                step_id=2, source="agent", model_name="mock/model-c",
                message="The clip asks for the capital of France.",
                tool_calls=[ToolCall(tool_call_id="lookup-1", function_name="lookup",
                                     arguments={"country": "France"})],
                observation=Observation(results=[
                    ObservationResult(source_call_id="lookup-1", content="Paris"),
                ]),
                metrics=Metrics(prompt_tokens=210, completion_tokens=14),
            ),
            Step(step_id=3, source="agent", model_name="mock/model-c",
                 message="The capital of France is Paris.",
                 metrics=Metrics(prompt_tokens=230, completion_tokens=9)),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=440, total_completion_tokens=23,
                                   total_steps=3),
    )  # fmt: skip


FILES = {
    "harbor_v1_2_single.json": single_v1_2,
    "harbor_v1_5_copied_context.json": copied_context_v1_5,
    "harbor_v1_7_subagent.json": lambda: orchestrator("ATIF-v1.7"),
    "harbor_v1_8_subagent.json": lambda: orchestrator("ATIF-v1.8"),
    "harbor_v1_8_audio.json": spoken_question_v1_8,
}


def main() -> int:
    for name, build in FILES.items():
        data = build().to_json_dict()
        validator = TrajectoryValidator()
        if not validator.validate(data):
            print(f"{name}: {validator.errors}", file=sys.stderr)
            return 1
        path = HERE / name
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        # The media a file names (the 1.8 audio clip) are not shipped: their paths are
        # not checked against the disk.
        if not TrajectoryValidator().validate(path, validate_images=False):
            print(f"{name}: the written file does not validate", file=sys.stderr)
            return 1
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
