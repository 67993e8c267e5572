"""A trajectory's conversation thread: each message once, tools from their calls, the
final answer when nothing said it yet, capped."""

from __future__ import annotations

from arbiter.contract import ChatMessage, Handoff, LlmCall, ToolCall, Trajectory
from arbiter.server.conversation import thread

SYSTEM = ChatMessage(role="system", content="Be brief.")
USER = ChatMessage(role="user", content="Weather in Paris?")


def _run(*steps: object, answer: str | None = None) -> Trajectory:
    return Trajectory.model_validate({"steps": list(steps), "final_answer": answer})


def test_history_sent_again_on_every_call_is_shown_once() -> None:
    first = LlmCall(input_messages=[SYSTEM, USER], output_messages=[])
    tool = ToolCall(name="get_weather", arguments={"city": "Paris"}, result={"temp_c": 18})
    again = LlmCall(
        input_messages=[SYSTEM, USER, ChatMessage(role="tool", content='{"temp_c": 18}')],
        output_messages=[ChatMessage(role="assistant", content="18°C.")],
    )
    shown = thread(_run(first, tool, again, answer="18°C."))
    assert [(m.role, m.content) for m in shown.messages] == [
        ("system", "Be brief."),
        ("user", "Weather in Paris?"),
        ("tool", '{\n  "temp_c": 18\n}'),
        ("assistant", "18°C."),
    ]
    assert shown.messages[2].name == "get_weather"
    assert shown.messages[2].arguments == '{\n  "city": "Paris"\n}'
    assert shown.has_prompt


def test_a_failed_tool_call_carries_its_error_and_a_sub_agent_its_answer() -> None:
    failed = ToolCall(name="delete", arguments={}, error="PermissionError")
    sub = Handoff(trajectory=Trajectory(agent={"name": "checker"}, final_answer="Checked."))
    shown = thread(_run(failed, sub, answer="Done."))
    assert [(m.role, m.content, m.error) for m in shown.messages] == [
        ("tool", "PermissionError", True),
        ("agent", "Checked.", False),
        ("assistant", "Done.", False),
    ]
    assert not shown.has_prompt


def test_a_long_thread_is_capped_and_says_how_much_it_left_out() -> None:
    calls = [ToolCall(name=f"t{i}", result=i) for i in range(30)]
    shown = thread(_run(*calls), limit=10)
    assert len(shown.messages) == 10
    assert shown.hidden == 20
