"""Small datasets built in code for tests."""

from __future__ import annotations

from arbiter.contract import Dataset, Example


def yes_no_dataset(n: int, *, cohorts: tuple[str, ...] = ("a", "b")) -> Dataset:
    """``n`` examples whose input carries the right answer (yes/no) and its own id."""
    examples = [
        Example(
            id=f"ex-{i:04d}",
            input={"id": f"ex-{i:04d}", "answer": "yes" if i % 3 else "no"},
            expected_label="yes" if i % 3 else "no",
            cohort=cohorts[i % len(cohorts)],
        )
        for i in range(n)
    ]
    return Dataset(name="yes-no", examples=examples)
