"""The agent's tool calls against the case's expected ones: trajectory_match and
tool-call precision / recall / F1.

The case lists the calls it expects as ``expected_tool_calls: [{name, arguments}]``
(the τ-bench importer writes a task's gold actions there). How the agent's calls must
cover them is the ``match_mode``:

- ``strict``: the same calls in the same order, nothing more;
- ``unordered``: the same calls in any order, nothing more;
- ``subset``: every call the agent made is an expected one (it may leave some out);
- ``superset`` (the default): every expected call was made (the agent may make more).

The default is ``superset`` because what a case can state is what must happen; an
agent that also looked something up has not failed it ("grade what matters, not the
path"). Set ``strict`` where the sequence itself is the contract.

When two calls match is the ``arg_match`` (``arg_match_by_tool: {tool: mode}`` for
one tool): ``exact`` (equal canonical JSON), ``ignore`` (names only), ``subset`` (each
argument the agent passed is expected with that value) and ``superset`` (the default:
each expected argument was passed with that value, extra ones allowed). ``subset`` and
``superset`` compare top-level keys of object arguments; other arguments compare
exactly. A call matches at most one expected call and the pairing is a maximum
matching, so ``unordered`` and the counts behind P / R / F1 never depend on the order
the calls are tried in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from arbiter.contract import Evidence, Example, Output, Score, Trajectory
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.calls import MAX_LISTED, ComparedCall, listed
from arbiter.trajectories.scorers.common import (
    assertions,
    banded,
    compared_calls,
    trajectory_scorer,
)
from arbiter.trajectories.scorers.derived import shared

__all__ = [
    "ArgMatch",
    "CallMatch",
    "ComparedCall",
    "MatchMode",
    "match_calls",
    "tool_call_f1",
    "tool_call_precision",
    "tool_call_recall",
    "trajectory_match",
]

MatchMode = Literal["strict", "unordered", "subset", "superset"]
"""How the agent's calls must cover the expected ones."""
ArgMatch = Literal["exact", "ignore", "subset", "superset"]
"""When an agent's call's arguments match an expected call's."""

EXPECTED_KEY = "expected_tool_calls"


def _within(small: Mapping[str, str], large: Mapping[str, str]) -> bool:
    return all(key in large and large[key] == value for key, value in small.items())


def _arguments_match(mode: ArgMatch, actual: ComparedCall, expected: ComparedCall) -> bool:
    if mode == "ignore":
        return True
    if mode == "exact" or actual.fields is None or expected.fields is None:
        return actual.canonical == expected.canonical
    if mode == "subset":
        return _within(actual.fields, expected.fields)
    return _within(expected.fields, actual.fields)


@dataclass(frozen=True)
class CallMatch:
    """The agent's calls paired with the expected ones."""

    actual: list[ComparedCall]
    expected: list[ComparedCall]
    pairs: dict[int, int]
    """Expected index to the actual index it is matched with."""

    @property
    def matched(self) -> int:
        """Pairs found: the true positives."""
        return len(self.pairs)

    def missing(self) -> list[ComparedCall]:
        """Expected calls no agent call matched."""
        return [call for i, call in enumerate(self.expected) if i not in self.pairs]

    def unexpected(self) -> list[ComparedCall]:
        """Agent calls matched to no expected call."""
        used = set(self.pairs.values())
        return [call for i, call in enumerate(self.actual) if i not in used]


def match_calls(
    actual: list[ComparedCall], expected: list[ComparedCall], arg_mode: Callable[[str], ArgMatch]
) -> CallMatch:
    """A maximum pairing of expected calls with agent calls of the same tool.

    Identical expected calls share one list of candidates (the agent's calls of that
    tool whose arguments match), found by lookup for ``exact`` and ``ignore`` and by
    comparison for ``subset`` / ``superset`` (the distinct expected calls times the
    agent's calls of their tools): linear in the run for a given case. Each
    expected call first takes the next free candidate; one left without then looks for
    an augmenting path (Kuhn's algorithm: a candidate is taken from another expected
    call that can move to a different one), which makes the pairing maximum.
    """
    by_name: dict[str, list[int]] = {}
    for index, call in enumerate(actual):
        by_name.setdefault(call.name, []).append(index)
    by_key: dict[tuple[str, str], list[int]] | None = None  # for exact matches, on demand
    shared: dict[tuple[str, str], list[int]] = {}
    keys: list[tuple[str, str]] = []
    for call in expected:
        key = (call.name, call.canonical)
        keys.append(key)
        if key in shared:
            continue
        mode = arg_mode(call.name)
        if mode == "ignore":
            shared[key] = by_name.get(call.name, [])
        elif mode == "exact" or call.fields is None:
            if by_key is None:
                by_key = {}
                for name in {c.name for c in expected}:
                    for i in by_name.get(name, []):
                        by_key.setdefault((name, actual[i].canonical), []).append(i)
            shared[key] = by_key.get(key, [])
        else:
            shared[key] = [
                i for i in by_name.get(call.name, []) if _arguments_match(mode, actual[i], call)
            ]
    candidates = [shared[key] for key in keys]
    owner: dict[int, int] = {}  # actual index -> expected index
    # A matched agent call stays matched (an augmenting path only hands it on), so a
    # cursor over each shared candidate list never needs to step back.
    cursor = dict.fromkeys(shared, 0)
    unmatched: list[int] = []
    for e, key in enumerate(keys):
        options, at = shared[key], cursor[key]
        while at < len(options) and options[at] in owner:
            at += 1
        cursor[key] = at
        if at < len(options):
            owner[options[at]] = e
        else:
            unmatched.append(e)
    # Calls a failed search visited cannot reach a free call until the pairing changes,
    # so they stay marked across failures and are cleared only after a success.
    seen: set[int] = set()
    for e in unmatched:
        if _augment(e, candidates, owner, seen):
            seen.clear()
    return CallMatch(actual, expected, {e: a for a, e in owner.items()})


def _augment(root: int, candidates: list[list[int]], owner: dict[int, int], seen: set[int]) -> bool:
    """Kuhn's augmenting path from expected call ``root``, depth first on a stack."""
    path: list[int] = [root]  # expected calls on the path
    taken: list[int] = []  # the agent call each of them would take
    position: list[int] = [0]
    while path:
        options = candidates[path[-1]]
        i = position[-1]
        while i < len(options) and options[i] in seen:
            i += 1
        if i == len(options):  # a dead end: back up one expected call
            path.pop()
            position.pop()
            if taken:
                taken.pop()
            continue
        position[-1] = i + 1
        chosen = options[i]
        seen.add(chosen)
        taken.append(chosen)
        if chosen not in owner:
            for e, a in zip(path, taken, strict=True):
                owner[a] = e
            return True
        path.append(owner[chosen])
        position.append(0)
    return False


@dataclass(frozen=True)
class _Case:
    """What a case asks of the agent's calls, and how the agent's calls pair with it."""

    expected: list[ComparedCall]
    given_mode: MatchMode | None
    """The case's own ``match_mode``; None: the scorer's default."""
    arg_mode: Callable[[str], ArgMatch]
    actual: list[ComparedCall]
    """The agent's graded calls."""
    found: CallMatch
    """The maximum pairing of the two."""


def _expected_calls(raw: Any) -> list[ComparedCall]:
    if not isinstance(raw, list):
        raise InputError(f"assertion {EXPECTED_KEY!r} must be a list of {{name, arguments}}")
    calls: list[ComparedCall] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError(f"assertion {EXPECTED_KEY!r}[{index}] must be an object with a name")
        calls.append(ComparedCall.of(entry["name"], entry.get("arguments")))
    return calls


def _choice(value: Any, key: str, allowed: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise InputError(f"assertion {key!r} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


@lru_cache(maxsize=16)
def _case_reader(arg_match: ArgMatch) -> Callable[[Example, Trajectory], _Case | None]:
    """The feature "the case and its pairing" for scorers whose default is ``arg_match``:
    one function per default, so every scorer with the same default shares its result
    (:func:`~arbiter.trajectories.scorers.derived.shared`)."""

    def read(example: Example, trajectory: Trajectory) -> _Case | None:
        given = assertions(example)
        if EXPECTED_KEY not in given:
            return None
        expected = _expected_calls(given[EXPECTED_KEY])
        modes = get_args(ArgMatch)
        given_mode: Any = given.get("match_mode")
        if given_mode is not None:
            given_mode = _choice(given_mode, "match_mode", get_args(MatchMode), "superset")
        default: Any = _choice(given.get("arg_match"), "arg_match", modes, arg_match)
        overrides_raw = given.get("arg_match_by_tool", {})
        if not isinstance(overrides_raw, dict):
            raise InputError("assertion 'arg_match_by_tool' must be an object of tool: mode")
        overrides: dict[str, Any] = {
            str(tool): _choice(value, f"arg_match_by_tool.{tool}", modes, default)
            for tool, value in overrides_raw.items()
        }

        def arg_mode(name: str) -> ArgMatch:
            mode: ArgMatch = overrides.get(name, default)
            return mode

        actual = compared_calls(trajectory, example)
        found = match_calls(actual, expected, arg_mode)
        return _Case(expected, given_mode, arg_mode, actual, found)

    return read


def _read_case(example: Example, output: Output, arg_match: ArgMatch) -> _Case | None:
    """The case's expected calls, modes and pairing; None when it expects no calls."""
    trajectory: Trajectory | None = output.trajectory
    assert trajectory is not None  # trajectory_scorer abstains without one
    return shared(_case_reader(arg_match), example, trajectory)


def _listed(calls: list[ComparedCall]) -> str:
    return listed([call.quote for call in calls[:MAX_LISTED]], total=len(calls))


def _strict_mismatch(case: _Case) -> str | None:
    """Where the agent's sequence first departs from the expected one; None if nowhere."""
    actual = case.actual
    for position, (got, want) in enumerate(zip(actual, case.expected, strict=False), start=1):
        if got.name != want.name or not _arguments_match(case.arg_mode(want.name), got, want):
            return f"call {position}: expected {want.quote}, got {got.quote}"
    if len(actual) != len(case.expected):
        return f"{len(actual)} calls made, {len(case.expected)} expected"
    return None


@trajectory_scorer(name="trajectory_match", dimension="trajectory_match", moment="act")
def trajectory_match(
    *, match_mode: MatchMode = "superset", arg_match: ArgMatch = "superset"
) -> ScoreFunction:
    """The agent's tool calls cover the case's expected calls (``expected_tool_calls``).

    The case's ``match_mode``, ``arg_match`` and ``arg_match_by_tool`` assertions
    override the arguments; abstains when the case expects no calls.

    Args:
        match_mode: strict, unordered, subset or superset, for cases that set none.
        arg_match: exact, ignore, subset or superset, for cases that set none.
    """

    def score(example: Example, output: Output) -> Score:
        case = _read_case(example, output, arg_match)
        if case is None:
            return Score(explanation=f"the case sets no {EXPECTED_KEY}")
        found = case.found
        mode = case.given_mode or match_mode
        missing, unexpected = found.missing(), found.unexpected()
        problems: list[str] = []
        evidence: list[Evidence] = []
        if mode == "strict":
            mismatch = _strict_mismatch(case)
            if mismatch is not None:
                problems.append(mismatch)
        if mode in ("strict", "unordered", "superset") and missing:
            problems.append("missing: " + _listed(missing))
            evidence += [
                Evidence(quote=c.quote, note="expected, not called") for c in missing[:MAX_LISTED]
            ]
        if mode in ("strict", "unordered", "subset") and unexpected:
            problems.append("unexpected: " + _listed(unexpected))
            evidence += [
                Evidence(quote=c.quote, note="called, not expected")
                for c in unexpected[:MAX_LISTED]
            ]
        passed = not problems
        summary = f"{mode}: {found.matched} of {len(case.expected)} expected calls matched"
        return Score(
            value=float(passed),
            passed=passed,
            explanation=summary + ("" if passed else "; " + "; ".join(problems)),
            evidence=evidence,
            metadata={
                "match_mode": mode,
                "matched": found.matched,
                "missing": len(missing),
                "unexpected": len(unexpected),
            },
        )

    return score


Ratio = Literal["precision", "recall", "f1"]


def _ratio_scorer(which: Ratio, example: Example, output: Output, arg_match: ArgMatch) -> Score:
    case = _read_case(example, output, arg_match)
    if case is None:
        return Score(explanation=f"the case sets no {EXPECTED_KEY}")
    tp, n_actual, n_expected = case.found.matched, len(case.actual), len(case.expected)
    denominator = {"precision": n_actual, "recall": n_expected, "f1": n_actual + n_expected}[which]
    if denominator == 0:  # undefined, said so: never a silent 0 or 1
        what = {"precision": "the agent made no call", "recall": "the case expects no call"}
        return Score(explanation=what.get(which, "no call made and none expected"))
    value = (2 * tp if which == "f1" else tp) / denominator
    result = banded(value, f"min_tool_call_{which}", example, higher_is_better=True)
    result.explanation = (
        f"{tp} matched of {n_actual} made and {n_expected} expected; {result.explanation}"
    )
    result.metadata.update(true_positives=tp, made=n_actual, expected=n_expected)
    return result


@trajectory_scorer(name="tool_call_precision", dimension="tool_call_precision", moment="act")
def tool_call_precision(*, arg_match: ArgMatch = "superset") -> ScoreFunction:
    """Share of the agent's tool calls that were expected (``expected_tool_calls``).

    A multiset match: each expected call pairs with at most one call. Banded by the
    case's ``min_tool_call_precision`` (informational without it); abstains when the
    case expects no calls or the agent made none.

    Args:
        arg_match: exact, ignore, subset or superset, for cases that set none.
    """
    return lambda example, output: _ratio_scorer("precision", example, output, arg_match)


@trajectory_scorer(name="tool_call_recall", dimension="tool_call_recall", moment="act")
def tool_call_recall(*, arg_match: ArgMatch = "superset") -> ScoreFunction:
    """Share of the expected tool calls (``expected_tool_calls``) the agent made.

    Banded by the case's ``min_tool_call_recall`` (informational without it); abstains
    when the case expects no calls.

    Args:
        arg_match: exact, ignore, subset or superset, for cases that set none.
    """
    return lambda example, output: _ratio_scorer("recall", example, output, arg_match)


@trajectory_scorer(name="tool_call_f1", dimension="tool_call_f1", moment="act")
def tool_call_f1(*, arg_match: ArgMatch = "superset") -> ScoreFunction:
    """Harmonic mean of tool-call precision and recall against ``expected_tool_calls``.

    Banded by the case's ``min_tool_call_f1`` (informational without it); abstains
    when the case expects no calls and the agent made none.

    Args:
        arg_match: exact, ignore, subset or superset, for cases that set none.
    """
    return lambda example, output: _ratio_scorer("f1", example, output, arg_match)
