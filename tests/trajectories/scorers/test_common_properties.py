"""Every trajectory scorer of the catalog goes through the same properties, on generated runs.

Each scorer is built with its default arguments through the service layer's registry
(``arbiter.service.scoring.scorer_registry``), as a run builds it, and scores generated
trajectories and flow runs (random steps with hand-offs, times, errors, JSON arguments
and results, answers) against random cases whose assertions use the keys the scorers
read, with values of the right type:

1. it never errors (``score.error is None``): whatever the run, a scorer says something;
2. it abstains on an output with neither a trajectory nor a flow run;
3. its band agrees with its verdict: danger fails, healthy and review pass, an
   abstention has no band, and a banded verdict always has one;
4. it is deterministic: the same pair scored twice, or by the scorer rebuilt from its
   spec, gives the same score (1, 3 and 4 share their generated pairs);
5. the order pairs are scored in does not change any pair's score.

A scorer of the catalog whose module does not exist yet is skipped, by name, with the
reason: the catalog is the list of what must pass here.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.contract import (
    ChatMessage,
    Chunk,
    Example,
    FlowNode,
    FlowRun,
    Handoff,
    LlmCall,
    Output,
    Retrieval,
    Score,
    ToolCall,
    Trajectory,
)
from arbiter.scoring.base import BuiltScorer
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

T0 = datetime(2026, 3, 1, tzinfo=UTC)
TOOLS = ("search", "execute_sql", "lookup", "fetch", "log")
STATUSES = ("completed", "error", "cancelled", "incomplete", "unknown")
CLASSES = (None, "llm_only", "rag_focused", "tool_enabled", "genie", "conversation_with_tools")

# --- Texts: words, numbers, markers and punctuation the scorers read ---------------

WORDS = st.sampled_from(
    [
        "revenue",
        "orders",
        "Paris",
        "refunds",
        "the",
        "is",
        "4.2",
        "1,234.50",
        "12%",
        "1.2 million",
        "[1]",
        "[^2]",
        "sales.orders",
        "https://help.example.com/kb/1",
        "Sure!",
        ".",
        "\n",
        "- ",
        "1.",
        "−5",
        "COVID-19",
        "é",
        "\u0000",
    ]
)
TEXT = st.one_of(
    st.lists(WORDS, max_size=8).map(" ".join),
    st.text(max_size=40),
)
SQL = st.sampled_from(
    [
        "SELECT * FROM sales.orders",
        "SELECT * FROM maintenance.work_orders o JOIN hr.people p ON 1=1",
        "select 1",
        "SELECT EXTRACT(YEAR FROM o.at) FROM dbc.tables",
        "FROM '",
        "",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "total", "rows"]), inner, max_size=3),
    ),
    max_leaves=5,
)
ARGUMENTS = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "database": st.sampled_from(["sales", "HR", "dbc", ""]),
            "sql": SQL,
            "table": st.sampled_from(["orders", "crm.customers"]),
            "url": st.sampled_from(["https://api.example.com/x", "not a url", "http://[::1"]),
            "q": TEXT,
        },
    ),
)


@st.composite
def times(draw: st.DrawFn) -> dict[str, Any]:
    """Start / end (either may be missing, the end never before the start) or a duration."""
    start = draw(st.none() | st.integers(0, 600).map(lambda s: T0 + timedelta(seconds=s)))
    end = None
    if start is not None and draw(st.booleans()):
        end = start + timedelta(milliseconds=draw(st.integers(0, 60_000)))
    duration = draw(st.none() | st.floats(0, 1e6)) if start is None else None
    return {"started_at": start, "ended_at": end, "duration_ms": duration}


ERRORS = st.none() | st.sampled_from(["timeout", "HTTP 500", ""])

LLM_CALLS = st.builds(
    LlmCall,
    model=st.none() | st.just("m"),
    input_messages=st.lists(
        st.builds(ChatMessage, role=st.sampled_from(["user", "system"]), content=st.none() | TEXT),
        max_size=2,
    ),
    input_tokens=st.none() | st.integers(0, 10**6),
    output_tokens=st.none() | st.integers(0, 10**6),
    cost_usd=st.none() | st.floats(0, 5),
    error=ERRORS,
).flatmap(lambda call: times().map(lambda t: call.model_copy(update=t)))
TOOL_CALLS = st.builds(
    ToolCall,
    name=st.sampled_from(TOOLS),
    call_id=st.none() | st.sampled_from(["c1", "c2"]),
    arguments=ARGUMENTS,
    result=JSON,
    error=ERRORS,
).flatmap(lambda call: times().map(lambda t: call.model_copy(update=t)))
RETRIEVALS = st.builds(
    Retrieval,
    query=st.none() | TEXT,
    chunks=st.lists(
        st.builds(
            Chunk,
            source=st.none() | st.sampled_from(["docs/refunds.md", "Refund Policy", "kb-1"]),
            text=st.none() | TEXT,
            similarity=st.none() | st.floats(-1, 1),
        ),
        max_size=4,
    ),
)


def trajectories(depth: int = 0) -> st.SearchStrategy[Trajectory]:
    """Runs of random steps; a hand-off nests a sub-run (one level: a coordinator's tree)."""
    steps = [LLM_CALLS, TOOL_CALLS, RETRIEVALS]
    if depth < 1:
        steps.append(st.builds(Handoff, trajectory=st.deferred(lambda: trajectories(depth + 1))))
    return st.builds(
        Trajectory,
        agent=st.builds(
            dict, agent_class=st.sampled_from(CLASSES), name=st.none() | st.just("expert")
        ),
        steps=st.lists(st.one_of(steps), max_size=5 if depth == 0 else 3),
        final_answer=st.none() | TEXT,
        status=st.sampled_from(STATUSES),
        error=ERRORS,
        metadata=st.sampled_from([{}, {"answer_kind": "withheld"}, {"answer_kind": "model"}]),
    )


FLOWS = st.builds(
    FlowRun,
    nodes=st.lists(
        st.builds(
            FlowNode,
            id=st.sampled_from(["n1", "n2", "approve"]),
            name=st.none() | st.sampled_from(["Fetch", "Summarise"]),
            type=st.none() | st.sampled_from(["tool", "agent"]),
            status=st.sampled_from(STATUSES),
            cost_usd=st.none() | st.floats(0, 2),
            error=ERRORS,
        ),
        max_size=6,
    ),
    status=st.sampled_from(STATUSES),
    error=ERRORS,
    output=st.none() | TEXT,
)
OUTPUTS = st.one_of(
    st.builds(Output, trajectory=trajectories()),
    st.builds(Output, flow=FLOWS),
    st.builds(Output, trajectory=trajectories(), flow=FLOWS),
)

# --- Assertions: the keys the scorers read, with values of the type each expects ---

MAX_KEYS = (
    "max_cost_usd",
    "max_latency_ms",
    "max_tokens",
    "max_tool_calls",
    "max_identical_tool_calls",
    "max_self_corrections",
    "max_steps",
    "max_tasks",
    "max_out_of_scope",
    "max_answer_length",
)
MIN_KEYS = (
    "min_efficiency",
    "min_parallel_efficiency",
    "min_tool_success_rate",
    "min_retrieval_similarity",
    "min_grounded_overlap",
    "min_numeric_fidelity",
    "min_expert_success",
)


@st.composite
def cut_points(draw: st.DrawFn, key: str) -> dict[str, float]:
    """A case's danger line, and maybe a healthy line on its good side."""
    danger = draw(st.floats(0, 100, allow_nan=False))
    points = {key: danger}
    if draw(st.booleans()):
        gap = draw(st.floats(0, 50, allow_nan=False))
        points[key + "__healthy"] = danger + gap if key.startswith("min_") else max(danger - gap, 0)
    return points


NAMES = st.lists(
    st.sampled_from([*TOOLS, "n1", "approve", "Fetch", "sales", "example.com"]), max_size=3
)
STRINGS = st.lists(st.sampled_from(["revenue", "Paris", "12%", "[1]", "é"]), max_size=3)
EXPECTED_CALLS = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(TOOLS)}, optional={"arguments": ARGUMENTS}),
    max_size=3,
)
PLAIN_ASSERTIONS = st.fixed_dictionaries(
    {},
    optional={
        "require_tools_subset": NAMES,
        "must_not_call": NAMES,
        "internal_tools": NAMES,
        "expected_tool_calls": EXPECTED_CALLS,
        "match_mode": st.sampled_from(["strict", "unordered", "subset", "superset"]),
        "arg_match": st.sampled_from(["exact", "ignore", "subset", "superset"]),
        "optimal_tasks": st.integers(1, 10),
        "optimal_steps": st.integers(1, 10),
        "expect_retrieval": st.booleans(),
        "require_citations": st.booleans(),
        "expect_complete": st.booleans(),
        "scope": NAMES,
        "must_contain": STRINGS,
        "must_not_contain": STRINGS,
        "answer_regex": st.sampled_from([r"\d+", "(a+)+$", "^$", "(?i)paris", "."]),
        "require_nodes": NAMES,
        "forbid_nodes": NAMES,
    },
)


@st.composite
def assertions(draw: st.DrawFn) -> dict[str, Any]:
    """A case's assertions: some plain keys, and some metrics' cut points."""
    given = draw(PLAIN_ASSERTIONS)
    for key in draw(st.lists(st.sampled_from(MAX_KEYS + MIN_KEYS), max_size=4, unique=True)):
        given.update(draw(cut_points(key)))
    return given


EXAMPLES = st.builds(
    Example,
    id=st.just("case"),
    input=st.fixed_dictionaries({}, optional={"query": TEXT}),
    expected=assertions(),
)
PAIRS = st.tuples(EXAMPLES, OUTPUTS)

# --- The scorers -----------------------------------------------------------------

REGISTRY = scorer_registry(plugins=False)


def build(name: str) -> BuiltScorer:
    """The scorer ``name`` with its default arguments, or a skip when its module is missing."""
    module = TRAJECTORY_SCORERS[name].partition(":")[0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"trajectory scorer {name!r}: its module {module} does not exist yet")
    return REGISTRY.build(REGISTRY.spec_of(name))


def score(scorer: BuiltScorer, example: Example, output: Output) -> Score:
    """Score one pair; a trajectory scorer is synchronous, so no event loop is needed."""
    call = scorer(example, output)
    try:
        call.send(None)
    except StopIteration as done:
        result: Score = done.value
        return result
    call.close()  # it awaited something: run it properly
    return asyncio.run(scorer(example, output))


def comparable(result: Score) -> dict[str, Any]:
    return result.model_dump(mode="json")


PROPERTY_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SCORER_NAMES = sorted(TRAJECTORY_SCORERS)


@pytest.mark.parametrize("name", SCORER_NAMES)
@PROPERTY_SETTINGS
@given(pair=PAIRS)
def test_a_scorer_never_errors_agrees_with_its_band_and_is_deterministic(
    name: str, pair: tuple[Example, Output]
) -> None:
    scorer = build(name)
    example, output = pair
    result = score(scorer, example, output)
    assert result.error is None, result.error
    assert result.name == name
    assert result.passed in (True, False, None)
    assert result.value is None or math.isfinite(result.value)
    if result.passed is None:
        assert result.band is None
        assert result.explanation, "an abstention says why"
    if result.band == "danger":
        assert result.passed is False
    if result.band in ("healthy", "review"):
        assert result.passed is True
    if "threshold_key" in result.metadata and result.passed is not None:
        assert result.band is not None, "a banded verdict carries its band"
    first = comparable(result)
    assert comparable(score(scorer, example, output)) == first
    assert comparable(score(REGISTRY.build(scorer.spec), example, output)) == first


@pytest.mark.parametrize("name", SCORER_NAMES)
@settings(PROPERTY_SETTINGS, max_examples=10)
@given(example=EXAMPLES, text=st.none() | TEXT)
def test_a_scorer_abstains_on_an_output_without_a_run(
    name: str, example: Example, text: str | None
) -> None:
    result = score(build(name), example, Output(text=text, label=text))
    assert (result.passed, result.band, result.error) == (None, None, None)


@pytest.mark.parametrize("name", SCORER_NAMES)
@settings(PROPERTY_SETTINGS, max_examples=8)
@given(pairs=st.lists(PAIRS, min_size=2, max_size=3), seed=st.randoms(use_true_random=False))
def test_the_order_of_scoring_does_not_change_a_score(
    name: str, pairs: list[tuple[Example, Output]], seed: Any
) -> None:
    scorer = build(name)
    in_order = [comparable(score(scorer, e, o)) for e, o in pairs]
    order = list(range(len(pairs)))
    seed.shuffle(order)
    shuffled = {i: comparable(score(scorer, *pairs[i])) for i in order}
    assert [shuffled[i] for i in range(len(pairs))] == in_order
