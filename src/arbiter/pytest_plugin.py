"""Arbiter's pytest plugin: evaluations as tests, with honest figures and stored runs.

Registered through the ``pytest11`` entry point, so installing Arbiter is enough::

    @pytest.mark.arbiter(dataset="capitals.jsonl", scorers=["normalized"], k=3)
    def test_answers(arbiter_eval):
        result = arbiter_eval(answer)              # a callable, or "pkg.module:function"
        assert result.pass_rate.low >= 0.8         # the interval's lower end
        result.assert_no_regression(baseline="main")

    @pytest.mark.arbiter(dataset="capitals.jsonl")
    def test_each_row(arbiter_example):           # one test per row, its id as test id
        arbiter.assert_output(answer(arbiter_example.input), scorer="normalized",
                              expected=arbiter_example.expected)

Paths in the marker are relative to the test file. Each evaluation is stored as a run
(named after the test, tagged with its node id and ``--arbiter-label``'s label), its
figures are added to the test's JUnit XML properties, and the runs are listed at the end
of the session. Options: ``--arbiter-k`` (repetitions, over the marker's),
``--arbiter-store URL`` (default: the configured store), ``--arbiter-no-store`` (a
temporary store), ``--arbiter-label NAME``. With pytest-xdist each worker runs its own
tests and stores into the same store.

This module imports nothing of Arbiter's engines until a test uses them: it loads in
every pytest run once Arbiter is installed.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from arbiter.store import Store
    from arbiter.testing import EvalResult

__all__ = ["Evaluator"]

MARKER = "arbiter"
_EVALUATOR = pytest.StashKey["Evaluator"]()
_OPTIONS = ("dataset", "target", "scorers", "k", "system", "limit", "seed", "name", "tags")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arbiter", "Arbiter evaluations")
    group.addoption(
        "--arbiter-k",
        type=int,
        default=None,
        metavar="K",
        help="Repetitions per example of every evaluation (over the marker's k).",
    )
    group.addoption(
        "--arbiter-store",
        default=None,
        metavar="URL",
        help="Store the runs here (default: ARBITER_DB_URL, else the SQLite file in ARBITER_HOME).",
    )
    group.addoption(
        "--arbiter-no-store",
        action="store_true",
        default=False,
        help="Keep the runs in a temporary store, removed with pytest's temporary files.",
    )
    group.addoption(
        "--arbiter-label",
        default=None,
        metavar="NAME",
        help="Store the runs under this label, the baseline assert_no_regression(NAME) "
        "finds (e.g. main).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "arbiter(dataset, target=None, scorers=(), k=1, system='python', limit=None, "
        "seed=0, name=None, tags=None): an Arbiter evaluation, run by the arbiter_eval "
        "fixture; arbiter_example parametrizes the test over the dataset's rows",
    )
    k = config.getoption("arbiter_k", None)
    if k is not None and k < 1:
        raise pytest.UsageError(f"--arbiter-k must be a positive integer; got {k}")
    if config.getoption("arbiter_no_store", False) and config.getoption("arbiter_store", None):
        raise pytest.UsageError("--arbiter-store and --arbiter-no-store are exclusive; give one")
    temporary = bool(config.getoption("arbiter_no_store", False))
    config.pluginmanager.register(_RunList(temporary), "arbiter-runs")


def _relative(node: pytest.Item | pytest.Function, value: str) -> str:
    """A path of the marker, read relative to the test file when it is there."""
    path = Path(value)
    beside = Path(str(node.path)).parent / path
    return str(beside) if not path.is_absolute() and beside.exists() else value


def _target(node: pytest.Item, target: Any) -> Any:
    """A ``file.py:function`` target read relative to the test file; others as given."""
    if not isinstance(target, str):
        return target
    module, sep, attribute = target.rpartition(":")
    if sep and module.endswith(".py"):
        return f"{_relative(node, module)}:{attribute}"
    return target


class Evaluator:
    """What the ``arbiter_eval`` fixture gives a test: call it to run an evaluation.

    The test's ``arbiter`` marker gives the defaults; a call's keywords override them.
    """

    def __init__(self, request: pytest.FixtureRequest, store: Store) -> None:
        self._request = request
        self._store = store
        self.results: list[EvalResult] = []
        """Every evaluation the test ran, in order."""

    def __call__(self, target: Any = None, **options: Any) -> EvalResult:
        """Run an evaluation and return its result (see :func:`arbiter.testing.evaluate`).

        Args:
            target: The system under test: a callable, ``"pkg.module:function"``,
                ``"file.py:function"``, or another kind's target (``system=``); default:
                the marker's ``target``.
            **options: ``dataset``, ``scorers``, ``k``, ``system``, ``limit``, ``seed``,
                ``name``, ``tags``, over the marker's.
        """
        from arbiter.errors import ArbiterError
        from arbiter.testing import LABEL_TAG, evaluate

        node = self._request.node
        marker = node.get_closest_marker(MARKER)
        merged: dict[str, Any] = {**(marker.kwargs if marker else {}), **options}
        unknown = sorted(set(merged) - set(_OPTIONS))
        if unknown:
            pytest.fail(
                f"arbiter: unknown option {unknown[0]!r}; the options: {', '.join(_OPTIONS)}",
                pytrace=False,
            )
        chosen = target if target is not None else merged.pop("target", None)
        merged.pop("target", None)
        if chosen is None or "dataset" not in merged:
            pytest.fail(
                "arbiter: an evaluation needs a target and a dataset (the marker's, or "
                "arbiter_eval(target, dataset=...))",
                pytrace=False,
            )
        config = self._request.config
        k = config.getoption("arbiter_k") or merged.pop("k", 1)
        merged.pop("k", None)
        label = config.getoption("arbiter_label")
        tags = {**(merged.pop("tags", None) or {}), **({LABEL_TAG: label} if label else {})}
        dataset = _relative(node, str(merged.pop("dataset")))
        try:
            result = evaluate(
                _target(node, chosen),
                dataset=dataset,
                k=k,
                tags=tags,
                name=merged.pop("name", None) or node.name[:200],
                store=self._store,
                node_id=node.nodeid,
                **merged,
            )
        except ArbiterError as exc:
            pytest.fail(f"arbiter: {' '.join(str(exc).split())}", pytrace=False)
        self.results.append(result)
        _record(node, result)
        return result


def _record(node: pytest.Item, result: EvalResult) -> None:
    """The result's figures as the test's properties (JUnit XML, xdist reports)."""
    figures = [result.pass_rate, result.pass_hat_k]
    properties = [("arbiter_run_id", result.run_id or "")]
    for figure in figures:
        key = "arbiter_" + figure.name.replace(" ", "_").replace("^", "_hat_")
        properties += [
            (key, f"{figure.estimate:.6f}"),
            (f"{key}_low", f"{figure.low:.6f}"),
            (f"{key}_high", f"{figure.high:.6f}"),
            (f"{key}_n", str(figure.n)),
        ]
    properties.append(("arbiter_error_rate", f"{result.error_rate:.6f}"))
    node.user_properties.extend(properties)


@pytest.fixture(scope="session")
def arbiter_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """The store evaluations go to (``--arbiter-store``, ``--arbiter-no-store``, or the
    configured one), opened on first use and closed at the end of the session."""
    from arbiter.config import Settings
    from arbiter.errors import StoreUnavailable
    from arbiter.store import Store

    config = request.config
    if config.getoption("arbiter_no_store"):
        url = f"sqlite:///{tmp_path_factory.mktemp('arbiter') / 'runs.db'}"
    else:
        url = config.getoption("arbiter_store") or Settings().database_url()
    try:
        store = Store(url)
    except StoreUnavailable:
        # Two xdist workers creating a new store's tables at once: the second sees them.
        store = Store(url)
    yield store
    store.close()


@pytest.fixture
def arbiter_eval(request: pytest.FixtureRequest, arbiter_store: Store) -> Evaluator:
    """Runs Arbiter evaluations for the test: ``arbiter_eval(target, **options)``."""
    evaluator = request.node.stash[_EVALUATOR] = Evaluator(request, arbiter_store)
    return evaluator


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that ran evaluations shows each one's figures and failing examples
    (with every scorer's reason), however its assertion was written."""
    report = yield
    evaluator = item.stash.get(_EVALUATOR, None)
    if report.when == "call" and report.failed and evaluator is not None:
        for result in evaluator.results:
            report.sections.append(("arbiter evaluation", result.summary()))
    return report


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "arbiter_example" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    dataset = marker.kwargs.get("dataset") if marker is not None else None
    if dataset is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: arbiter_example needs "
            "@pytest.mark.arbiter(dataset=...) on the test"
        )
    from arbiter.datasets import load_dataset
    from arbiter.errors import ArbiterError

    try:
        rows = load_dataset(_relative(metafunc.definition, str(dataset))).examples
    except ArbiterError as exc:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {exc}") from None
    metafunc.parametrize("arbiter_example", rows, ids=[row.id for row in rows])


class _RunList:
    """The runs the session's tests stored (from their reports, so xdist workers' too),
    listed at the end."""

    def __init__(self, temporary: bool) -> None:
        self.temporary = temporary
        self.runs: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "arbiter_run_id" and value:
                self.runs.append((str(value), report.nodeid))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.runs:
            return
        from arbiter import escape

        where = "in a temporary store" if self.temporary else "stored"
        terminalreporter.write_sep("-", f"arbiter: {len(self.runs)} run(s) {where}")
        for run_id, nodeid in self.runs:
            terminalreporter.write_line(f"{run_id}  {escape.terminal(nodeid, single_line=True)}")
        if not self.temporary:
            terminalreporter.write_line("see one with: arbiter report RUN_ID")
