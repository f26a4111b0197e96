"""Shared fixtures: sandboxes served for real (uvicorn in a thread, a free port each), and a
journal in memory for the unit tests of the rules that read it."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import stamina

from batchpay.journal.store import Journal
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.server import RunningSandbox, start_in_thread

if TYPE_CHECKING:
    from tests.support.postgres import Cluster

SandboxFactory = Callable[..., RunningSandbox]

# The working tree is what every test runs, subprocesses included: importing tests.support
# puts it first on PYTHONPATH (benchmarks, which import it too, measure the tree as well).
from tests.support import WORKING_TREE  # noqa: E402, F401

# the helpers' own checks (a refused sheet, a sandbox answer) fail as readably as a test's
pytest.register_assert_rewrite("tests.support")

# The longest tests (tens of seconds each: real processes killed and started again, the README
# walkthrough, the benchmarks' short runs, a browser), started before all others. An idle
# worker takes work queued for a busy one, but it cannot split a test: one of these picked up
# last would keep the whole run waiting for it alone.
START_FIRST = (
    "tests/engine/test_exactly_once.py::test_sigkill_at_random_moments_never_pays_twice",
    "tests/test_readme.py::test_every_runnable_command_in_the_readme_works",
    "tests/test_benchmarks_short.py::",
    "tests/console/test_browser.py::",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first (in START_FIRST's order), then the other `slow` ones, then the
    rest: the same tests, in an order that keeps every worker busy to the end. Under xdist
    the long ones are dealt round to the workers (each starts on its share of the collection
    in order), so that no worker gets them all one after another."""

    def rank(item: pytest.Item) -> int:
        for place, start in enumerate(START_FIRST):
            if item.nodeid.startswith(start):
                return place
        return len(START_FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1:
        items[:] = dealt(items, workers, sum(rank(item) <= len(START_FIRST) for item in items))


def dealt(items: list[pytest.Item], workers: int, long: int) -> list[pytest.Item]:
    """`items` whose first `long` are dealt round-robin to the heads of the `workers` runs of
    the list that xdist's work-stealing schedule hands out first (consecutive, len // workers
    each, the remainder going to the last ones), the rest filling up each run in order."""
    hands: list[list[pytest.Item]] = [items[i:long:workers] for i in range(workers)]
    rest = iter(items[long:])
    left = len(items)
    for i, hand in enumerate(hands):
        size = left // (workers - i)
        left -= size
        hand.extend(itertools.islice(rest, max(0, size - len(hand))))
    return [item for hand in hands for item in hand] + list(rest)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` starts two workers per core. Most tests spend much of their time waiting,
    not computing (for a sandbox to settle payouts, a run to poll them, a process to start,
    a webhook to arrive): a second worker per core runs another test meanwhile.
    PYTEST_XDIST_AUTO_NUM_WORKERS still chooses the number, as pytest-xdist documents."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if chosen:
        return int(chosen)
    return 2 * len(os.sched_getaffinity(0))


@pytest.fixture(autouse=True)
def data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the developer's own settings and journals: the user data and
    config folders (where the default journals live) are per test, apart from tmp_path so
    that a test can still see what a command wrote there; subprocesses inherit them.
    Returns the user data folder (XDG_DATA_HOME)."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    # periods count in the time_zone setting's days, by default the machine's zone: the
    # tests name their days in UTC, whatever zone the machine running them is in
    monkeypatch.setenv("TZ", "UTC")
    return home / "data"


@pytest.fixture
def no_backoff() -> Iterator[None]:
    """stamina's test mode for a test that hits a closed port: every attempt the retry
    budget allows, without the real waits between them (10 s per command otherwise)."""
    with stamina.set_testing(True, attempts=1000, cap=True):
        yield


@pytest.fixture
def sandbox_factory() -> Iterator[SandboxFactory]:
    """Start sandboxes with SandboxConfig keyword arguments (port 0 unless given); all are
    stopped at teardown (the next test need not wait for that: see `stop_meanwhile`)."""
    started: list[RunningSandbox] = []

    def start(**options: Any) -> RunningSandbox:
        options.setdefault("port", 0)
        running = start_in_thread(SandboxConfig(**options))
        started.append(running)
        return running

    yield start
    stop_meanwhile(reversed(started))


# Sandboxes being stopped, each in a thread of its own: uvicorn takes a quarter of a second
# to see that it should stop and to shut down (most of it sleeping), which the next test
# spends running instead. Every stop is waited for before the next ones begin and when the
# session ends, so that none outlives the tests.
_stopping: list[threading.Thread] = []


def stop_meanwhile(sandboxes: Iterable[RunningSandbox]) -> None:
    wait_for_stops()
    for running in sandboxes:
        stopping = threading.Thread(target=running.stop, name=f"stopping {running.url}")
        stopping.start()
        _stopping.append(stopping)


def wait_for_stops() -> None:
    while _stopping:
        _stopping.pop().join()


def pytest_sessionfinish(session: pytest.Session) -> None:
    wait_for_stops()
    fail_skips_in_ci(session)


def fail_skips_in_ci(session: pytest.Session) -> None:
    """In CI (CI=true) a skipped test fails the run: a test skipped for a missing tool
    (ssh-keygen, LibreOffice, Chromium, PostgreSQL) is a test CI never ran, and `.ci/run`
    installs every tool the suite needs. Under xdist the controller judges, from every
    worker's reports."""
    if os.environ.get("CI", "").lower() != "true" or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; in CI every test must run "
                            "(install the missing tool in .ci/run)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def sandbox(sandbox_factory: SandboxFactory, tmp_path: Path) -> RunningSandbox:
    """A sandbox with the default settings, its state in a file under tmp_path."""
    return sandbox_factory(state_path=tmp_path / "sandbox-state.sqlite3")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this test session (of this xdist worker), started when a test
    first needs it; `postgres.journal_url()` is a new, empty journal in it."""
    from tests.support.postgres import Cluster

    cluster = Cluster()
    yield cluster
    cluster.stop()


# the journal's two stores, for the tests that matter for the store (a test marked with
# tests.support.postgres.BOTH_STORES runs once with its journal in a file, once in PostgreSQL)
STORES = ["sqlite", "postgresql"]


@pytest.fixture
def store(request: pytest.FixtureRequest) -> str:
    """Which store a test's journal is in: `sqlite` unless the test is parametrized
    (tests.support.postgres.BOTH_STORES)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def journal_at(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where a command's journal is: a file under tmp_path, or a new PostgreSQL journal."""
    if store == "postgresql":
        return str(request.getfixturevalue("postgres").journal_url())
    return str(tmp_path / "journal" / "journal.sqlite3")


@pytest.fixture
def cli_sandbox(sandbox_factory: SandboxFactory, tmp_path: Path, journal_at: str,
                monkeypatch: pytest.MonkeyPatch) -> Callable[..., RunningSandbox]:
    """Start a sandbox (SandboxConfig keyword arguments; its state under tmp_path) and point
    the CLI at it: BATCHPAY_BASE_URL and the key, a journal under tmp_path or in PostgreSQL
    (`journal_at`; or `journal`), no user settings file, and tmp_path as the current folder."""

    def start(*, journal: Path | None = None, **options: Any) -> RunningSandbox:
        options.setdefault("state_path", tmp_path / "sandbox.sqlite3")
        running = sandbox_factory(**options)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("BATCHPAY_BASE_URL", running.url)
        monkeypatch.setenv("BATCHPAY_API_KEY", running.api_key)
        monkeypatch.setenv("BATCHPAY_JOURNAL", str(journal or journal_at))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        return running

    return start


@pytest.fixture(params=STORES)
def journal(request: pytest.FixtureRequest) -> Iterator[Journal]:
    """A fresh journal, bound to the embedded sandbox as a run's journal is before it plans:
    in SQLite memory (no file, no folder, no lock file), and again in PostgreSQL. Tests of
    the journal's file itself (modes, WAL, the run lock, durability) open one under tmp_path
    instead."""
    where = ":memory:" if request.param == "sqlite" else request.getfixturevalue(
        "postgres").journal_url()
    with Journal(where) as j:
        j.bind_service("embedded")
        yield j
