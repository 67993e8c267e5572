"""A scorer factory whose annotations cannot be resolved is an input error, not a crash."""

from __future__ import annotations

import pytest

from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction, scorer


@scorer(name="unresolvable")
def unresolvable(*, limit: NotImportedAnywhere = None) -> ScoreFunction:  # type: ignore[name-defined]  # noqa: F821
    raise AssertionError("never built")


def test_building_it_names_the_scorer_and_its_factory() -> None:
    with pytest.raises(InputError, match=r"scorer 'unresolvable'.*cannot be resolved.*NameError"):
        unresolvable(limit=3)
