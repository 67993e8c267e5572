"""What each decomposed judge reads of an item: the tagged sections of its prompt, or
why it abstains (a string), built from :mod:`arbiter.judges.inputs`."""

from __future__ import annotations

from arbiter.contract import Example, Output
from arbiter.judges import inputs

__all__ = [
    "answer_and",
    "read_answer_correctness",
    "read_answer_groundedness",
    "read_content_safety",
    "read_groundedness",
    "read_instruction_following",
    "read_plan_quality",
    "read_scope_faithfulness",
    "read_tool_arg_optimality",
]

Sections = list[tuple[str, str]]
"""The tagged parts of a judge's prompt: ``(tag, text)``."""


def answer_and(
    example: Example, output: Output, tag: str, parts: list[str], missing: str
) -> Sections | str:
    answer = inputs.answer(output)
    if answer is None:
        return "the output has no answer"
    if not parts:
        return missing
    question = inputs.question(example, output)
    sections = [("question", question)] if question else []
    return [*sections, (tag, "\n---\n".join(parts)), ("answer", answer)]


def read_groundedness(example: Example, output: Output) -> Sections | str:
    return answer_and(example, output, "chunks", inputs.chunks(output), "no retrieved chunks")


def read_answer_groundedness(example: Example, output: Output) -> Sections | str:
    results = inputs.tool_results(output)
    return answer_and(example, output, "tool_results", results, "no tool results")


def read_scope_faithfulness(example: Example, output: Output) -> Sections | str:
    answer, scope = inputs.answer(output), inputs.trusted_scope(example)
    if answer is None:
        return "the output has no answer"
    if scope is None:
        return "the case declares no trusted scope (scope_description or scope)"
    question = inputs.question(example, output)
    return [*([("question", question)] if question else []), ("scope", scope), ("answer", answer)]


def read_instruction_following(example: Example, output: Output) -> Sections | str:
    answer, question = inputs.answer(output), inputs.question(example, output)
    if answer is None:
        return "the output has no answer"
    if question is None:
        return "no question or instruction to follow"
    return [("question", question), ("answer", answer)]


def read_answer_correctness(example: Example, output: Output) -> Sections | str:
    answer, reference = inputs.answer(output), inputs.reference(example)
    if answer is None:
        return "the output has no answer"
    if reference is None:
        return "no reference answer"
    question = inputs.question(example, output)
    sections = [("question", question)] if question else []
    return [*sections, ("reference", reference), ("answer", answer)]


def read_content_safety(example: Example, output: Output) -> Sections | str:
    answer = inputs.answer(output)
    return "the output has no answer" if answer is None else [("answer", answer)]


def read_tool_arg_optimality(example: Example, output: Output) -> Sections | str:
    calls = inputs.tool_calls(output)
    if not calls:
        return "no tool calls"
    question = inputs.question(example, output)
    return [*([("question", question)] if question else []), ("tool_calls", "\n".join(calls))]


def read_plan_quality(example: Example, output: Output) -> Sections | str:
    plan, question = inputs.plan(output), inputs.question(example, output)
    if plan is None:
        return "no plan and no steps in the run"
    if question is None:
        return "no question the plan answers"
    return [("question", question), ("plan", plan)]
