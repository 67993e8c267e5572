"""Writes the Inspect AI logs beside it: a small task run with mockllm (not a test).

Run with inspect_ai installed (0.3.285 wrote the shipped logs; no network is needed):
``python make_inspect_logs.py json`` and ``python make_inspect_logs.py eval``.
"""

import sys
from collections.abc import Iterator

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, tool


@tool
def add() -> Tool:
    async def execute(x: int, y: int) -> int:
        """Add two numbers.

        Args:
            x: First number.
            y: Second number.
        """
        return x + y

    return execute


@task
def addition() -> Task:
    return Task(
        dataset=[
            Sample(id="two-plus-two", input="What is 2 + 2? Use the add tool.", target="4"),
            Sample(id="three-plus-five", input="What is 3 + 5? Use the add tool.", target="8"),
        ],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )


def outputs() -> Iterator[ModelOutput]:
    """Per sample and epoch a tool call, then an answer; the last answer is wrong.

    Usage is given so that mockllm need not count tokens (which downloads an encoding).
    """
    plan = [(2, 2, "The answer is 4."), (3, 5, "The answer is 8."),
            (2, 2, "The answer is 4."), (3, 5, "I think it is 9.")]  # fmt: skip
    for x, y, answer in plan:
        call = ModelOutput.for_tool_call("mockllm/model", "add", {"x": x, "y": y})
        call.usage = ModelUsage(input_tokens=40, output_tokens=12, total_tokens=52)
        yield call
        done = ModelOutput.from_content("mockllm/model", answer)
        done.usage = ModelUsage(input_tokens=60, output_tokens=8, total_tokens=68)
        yield done


if __name__ == "__main__":
    log_format = sys.argv[1]
    model = get_model("mockllm/model", custom_outputs=list(outputs()))
    eval(
        addition(),
        model=model,
        epochs=2,
        max_samples=1,
        log_dir=f"logs_{log_format}",
        log_format=log_format,
        display="none",
    )
