"""The pytest plugin, run the way a user runs it: pytester sessions over real test files.

Each session's tests evaluate a small quiz (four capitals) against a system that answers
all of them (``good``) or two of them wrong (``worse``); runs go to a store of the test's
own, read back here to check what the plugin stored.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from arbiter.store import Store
from arbiter.testing import LABEL_TAG, NODE_TAG
from tests.mcp.quiz import APP, CAPITALS

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module", autouse=True)
def _engines_loaded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Run one evaluation here first: pytester's in-process sessions unload the modules
    they imported, and numpy cannot be imported twice in one process."""
    from arbiter.service.compare import compare_runs
    from arbiter.testing import assert_output, evaluate
    from tests.mcp.quiz import write_quiz

    folder = tmp_path_factory.mktemp("warm")
    write_quiz(folder)
    store = Store(f"sqlite:///{folder / 'store.db'}")
    try:
        run = evaluate(f"{folder / 'quiz_app.py'}:good", dataset=folder / "quiz.jsonl", store=store)
        assert run.run_id is not None
        compare_runs(store, run.run_id, run.run_id)
        assert run.failing == []
        assert_output("Paris", scorer="normalized", expected="paris")
    finally:
        store.close()


@pytest.fixture
def quiz(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """The quiz's dataset and app in the session's folder; the store URL runs go to."""
    rows = [
        {"id": c.lower(), "input": {"country": c}, "expected": city} for c, city in CAPITALS.items()
    ]
    pytester.makefile(".jsonl", quiz="\n".join(json.dumps(row) for row in rows))
    pytester.makepyfile(quiz_app=APP)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    url = f"sqlite:///{pytester.path / 'store.db'}"
    monkeypatch.setenv("ARBITER_DB_URL", url)
    monkeypatch.setenv("ARBITER_HOME", str(pytester.path / ".arbiter"))
    return url


def lit(text: str) -> str:
    """``text`` as an fnmatch pattern of itself but its ``*`` (brackets escaped)."""
    return "".join({"[": "[[]", "]": "[]]"}.get(c, c) for c in text)


def stored_runs(url: str) -> list[dict[str, str]]:
    store = Store(url)
    try:
        from arbiter.service.browse import list_runs

        return [info.tags for info in list_runs(store, limit=100).items]
    finally:
        store.close()


PASSING = """
import pytest
from quiz_app import good

@pytest.mark.arbiter(dataset="quiz.jsonl", scorers=["normalized"], k=2)
def test_callable(arbiter_eval):
    result = arbiter_eval(good)
    assert result.pass_rate.estimate == 1.0
    assert result.pass_rate.low > 0.5
    assert result.report.k == {k}

@pytest.mark.arbiter(dataset="quiz.jsonl", target="quiz_app.py:good", scorers=["normalized"])
def test_named_target(arbiter_eval):
    result = arbiter_eval()
    assert result.pass_hat_k.estimate == 1.0
"""


def test_a_passing_suite_stores_a_run_per_evaluation_tagged_with_its_node(
    pytester: pytest.Pytester, quiz: str
) -> None:
    pytester.makepyfile(test_quiz=PASSING.format(k=2))
    outcome = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml")
    outcome.assert_outcomes(passed=2)
    tags = stored_runs(quiz)
    assert sorted(t[NODE_TAG] for t in tags) == [
        "test_quiz.py::test_callable",
        "test_quiz.py::test_named_target",
    ]
    outcome.stdout.fnmatch_lines(
        ["*arbiter: 2 run(s) stored*", "see one with: arbiter report RUN_ID"]
    )
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    properties = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in cases
    }
    figures = properties["test_callable"]
    assert figures["arbiter_pass_rate"] == "1.000000"
    assert figures["arbiter_pass_rate_n"] == "8"
    assert float(figures["arbiter_pass_rate_low"]) < 1.0
    assert figures["arbiter_pass_hat_2"] == "1.000000"
    assert len(figures["arbiter_run_id"]) == 22


def test_arbiter_k_overrides_the_marker_s_k(pytester: pytest.Pytester, quiz: str) -> None:
    pytester.makepyfile(test_quiz=PASSING.format(k=3))
    outcome = pytester.runpytest("-p", "no:cacheprovider", "--arbiter-k", "3", "-k", "callable")
    outcome.assert_outcomes(passed=1, deselected=1)


def test_a_failing_assertion_names_the_figure_and_the_failing_examples(
    pytester: pytest.Pytester, quiz: str
) -> None:
    pytester.makepyfile(
        test_quiz="""
        import pytest

        @pytest.mark.arbiter(
            dataset="quiz.jsonl", target="quiz_app.py:worse", scorers=["normalized"]
        )
        def test_quality(arbiter_eval):
            result = arbiter_eval()
            assert result.pass_rate.low >= 0.8
        """
    )
    outcome = pytester.runpytest("-p", "no:cacheprovider")
    outcome.assert_outcomes(failed=1)
    shown = [
        "*assert 0.150* >= 0.8",  # the interval's lower end, not the 50% estimate
        "*where 0.150* = <pass rate 50.0% [15.0%, 85.0%] n=4>.low",
        "*<EvalResult quiz: failing 2/4: france, peru>.pass_rate",
        "*- arbiter evaluation -*",
        "quiz (run *): <pass rate 50.0% [15.0%, 85.0%] n=4>, <pass^1 50.0% [0.0%, 100.0%] n=4>*",
        "failing 2/4 examples:",
        "  france (1/1 reps: normalized, expected 'paris', got 'lyon')",
        "  peru (1/1 reps: normalized, expected 'lima', got 'lyon')",
    ]
    outcome.stdout.fnmatch_lines([lit(line) for line in shown])


def test_assert_no_regression_fails_against_the_labelled_baseline(
    pytester: pytest.Pytester, quiz: str
) -> None:
    # Twenty rows, eight of which the worse system breaks: a drop no interval excuses
    # (four rows could not show one: their paired interval reaches zero).
    rows = [{"id": f"n{i:02d}", "input": {"n": i}, "expected": str(i)} for i in range(20)]
    pytester.makefile(".jsonl", numbers="\n".join(json.dumps(row) for row in rows))
    pytester.makepyfile(
        numbers_app="""
        def good(input):
            return str(input["n"])

        def worse(input):
            return "?" if input["n"] < 8 else str(input["n"])
        """
    )
    suite = """
        import pytest

        @pytest.mark.arbiter(
            dataset="numbers.jsonl", target="numbers_app.py:{target}", scorers=["normalized"]
        )
        def test_quality(arbiter_eval):
            arbiter_eval().assert_no_regression(baseline="main")
        """
    pytester.makepyfile(test_quiz=suite.format(target="good"))
    missing = pytester.runpytest("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no baseline run 'main' for this test*--arbiter-label main*"])
    # The first run stored under the label is the baseline; the next compares with it.
    first = pytester.runpytest("-p", "no:cacheprovider", "--arbiter-label", "main")
    first.assert_outcomes(passed=1, warnings=1)
    first.stdout.fnmatch_lines(["*this run is the first baseline, nothing to compare with yet"])
    baseline = pytester.runpytest("-p", "no:cacheprovider", "--arbiter-label", "main")
    baseline.assert_outcomes(passed=1)
    pytester.makepyfile(test_quiz=suite.format(target="worse"))
    regressed = pytester.runpytest("-p", "no:cacheprovider")
    regressed.assert_outcomes(failed=1)
    regressed.stdout.fnmatch_lines(
        [
            "*accuracy regressed against baseline * (main): 100.0% -> 60.0% (change -0.400, "
            "paired 95% CI -* to -*, n=20 examples)*",
            "*broken (8): n00, n01, n02, n03, n04, n05, n06, n07*",
        ]
    )
    labels = [t.get(LABEL_TAG) for t in stored_runs(quiz)]
    assert labels.count("main") == 2


def test_arbiter_example_runs_a_test_per_row_named_by_its_id(
    pytester: pytest.Pytester, quiz: str
) -> None:
    pytester.makepyfile(
        test_rows="""
        import pytest
        import arbiter
        from quiz_app import worse

        @pytest.mark.arbiter(dataset="quiz.jsonl")
        def test_row(arbiter_example):
            answer = worse(arbiter_example.input)
            arbiter.assert_output(answer, scorer="normalized", expected=arbiter_example.expected)
        """
    )
    outcome = pytester.runpytest("-p", "no:cacheprovider", "-v")
    outcome.assert_outcomes(passed=2, failed=2)
    outcome.stdout.fnmatch_lines(
        [
            lit("*test_row[france] FAILED*"),
            lit("*test_row[japan] PASSED*"),
            "*scorer 'normalized' failed the output: *expected 'paris', got 'lyon'",
            "*output: 'Lyon'",
            "*expected: 'Paris'",
        ]
    )


def test_bad_input_fails_the_test_with_one_line(pytester: pytest.Pytester, quiz: str) -> None:
    pytester.makepyfile(
        test_quiz="""
        import pytest

        @pytest.mark.arbiter(dataset="missing.jsonl", target="quiz_app.py:good")
        def test_quality(arbiter_eval):
            arbiter_eval()
        """
    )
    outcome = pytester.runpytest("-p", "no:cacheprovider")
    outcome.assert_outcomes(failed=1)
    outcome.stdout.fnmatch_lines(["*arbiter: missing.jsonl: *"])
    assert "Traceback" not in outcome.stdout.str()
    assert "site-packages" not in outcome.stdout.str()


def test_no_store_keeps_the_configured_store_untouched(
    pytester: pytest.Pytester, quiz: str
) -> None:
    pytester.makepyfile(test_quiz=PASSING.format(k=2))
    outcome = pytester.runpytest("-p", "no:cacheprovider", "--arbiter-no-store")
    outcome.assert_outcomes(passed=2)
    outcome.stdout.fnmatch_lines(["*arbiter: 2 run(s) in a temporary store*"])
    assert not (pytester.path / "store.db").exists()


def test_an_xdist_run_stores_every_worker_s_runs(pytester: pytest.Pytester, quiz: str) -> None:
    tests = "\n".join(
        textwrap.dedent(
            f"""
            @pytest.mark.arbiter(
                dataset="quiz.jsonl", target="quiz_app.py:good", scorers=["normalized"]
            )
            def test_{n}(arbiter_eval):
                assert arbiter_eval().pass_rate.estimate == 1.0
            """
        )
        for n in range(4)
    )
    pytester.makepyfile(test_quiz="import pytest\n" + tests)
    outcome = pytester.runpytest("-p", "no:cacheprovider", "-n", "2")
    outcome.assert_outcomes(passed=4)
    outcome.stdout.fnmatch_lines(["*arbiter: 4 run(s) stored*"])
    assert sorted(t[NODE_TAG] for t in stored_runs(quiz)) == [
        f"test_quiz.py::test_{n}" for n in range(4)
    ]
