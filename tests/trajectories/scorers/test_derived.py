"""The memo of features shared by the scorers of one case: found only for the very same
example and trajectory objects, bounded, never keeping a failure, and changing no score."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings

from arbiter.contract import Example, Output, Trajectory
from arbiter.trajectories.scorers.derived import MEMO_PAIRS, forget, shared
from tests.trajectories.scorers.runs import run, tool
from tests.trajectories.scorers.test_common_properties import (
    PAIRS,
    PROPERTY_SETTINGS,
    SCORER_NAMES,
    build,
    comparable,
    score,
)


@pytest.fixture(autouse=True)
def _fresh_memo() -> Iterator[None]:
    forget()
    yield
    forget()


class Counting:
    """A feature that counts how often it was computed."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, example: Example, trajectory: Trajectory) -> int:
        self.calls += 1
        return len(trajectory.steps)


def _case() -> Example:
    return Example(id="case", input={})


def test_a_feature_is_computed_once_per_pair() -> None:
    feature, example, trajectory = Counting(), _case(), run(tool("a"))
    assert [shared(feature, example, trajectory) for _ in range(3)] == [1, 1, 1]
    assert feature.calls == 1


def test_an_equal_but_different_object_is_not_the_same_pair() -> None:
    feature, example = Counting(), _case()
    first, twin = run(tool("a")), run(tool("a"))
    assert first == twin
    shared(feature, example, first)
    shared(feature, example, twin)
    shared(feature, _case(), first)
    assert feature.calls == 3


def test_each_feature_has_its_own_value() -> None:
    example, trajectory = _case(), run(tool("a"), tool("b"))
    assert shared(Counting(), example, trajectory) == 2
    assert shared(lambda e, t: t.steps[0].kind, example, trajectory) == "tool_call"


def test_the_memo_keeps_only_the_last_pairs() -> None:
    feature, example = Counting(), _case()
    runs = [run(tool("a")) for _ in range(MEMO_PAIRS + 1)]
    for trajectory in runs:
        shared(feature, example, trajectory)
    shared(feature, example, runs[-1])  # still kept
    assert feature.calls == MEMO_PAIRS + 1
    shared(feature, example, runs[0])  # dropped: computed again
    assert feature.calls == MEMO_PAIRS + 2


def test_a_feature_that_raises_is_not_kept() -> None:
    attempts: list[int] = []

    def failing(example: Example, trajectory: Trajectory) -> int:
        attempts.append(1)
        raise ValueError("bad case")

    example, trajectory = _case(), run()
    for _ in range(2):
        with pytest.raises(ValueError, match="bad case"):
            shared(failing, example, trajectory)
    assert len(attempts) == 2


def test_forget_drops_what_was_kept() -> None:
    feature, example, trajectory = Counting(), _case(), run(tool("a"))
    shared(feature, example, trajectory)
    forget()
    shared(feature, example, trajectory)
    assert feature.calls == 2


@settings(PROPERTY_SETTINGS, max_examples=30)
@given(pair=PAIRS)
def test_scorers_that_share_features_score_as_each_does_alone(
    pair: tuple[Example, Output],
) -> None:
    example, output = pair
    scorers = [build(name) for name in SCORER_NAMES]
    together = [comparable(score(scorer, example, output)) for scorer in scorers]
    alone = []
    for scorer in scorers:
        forget()
        alone.append(comparable(score(scorer, example, output)))
    assert together == alone
