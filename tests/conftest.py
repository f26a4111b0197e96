"""Shared fixtures: sandboxes served for real (uvicorn in a thread, a free port each), and a
journal in memory for the unit tests of the rules that read it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import stamina

from batchpay.journal.store import Journal
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.server import RunningSandbox, start_in_thread

SandboxFactory = Callable[..., RunningSandbox]

# the helpers' own checks (a refused sheet, a sandbox answer) fail as readably as a test's
pytest.register_assert_rewrite("tests.support")


@pytest.fixture(autouse=True)
def data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the developer's own settings and journals: the user data and
    config folders (where the default journals live) are per test, apart from tmp_path so
    that a test can still see what a command wrote there; subprocesses inherit them.
    Returns the user data folder (XDG_DATA_HOME)."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
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
    stopped at teardown."""
    started: list[RunningSandbox] = []

    def start(**options: Any) -> RunningSandbox:
        options.setdefault("port", 0)
        running = start_in_thread(SandboxConfig(**options))
        started.append(running)
        return running

    yield start
    for running in reversed(started):
        running.stop()


@pytest.fixture
def sandbox(sandbox_factory: SandboxFactory, tmp_path: Path) -> RunningSandbox:
    """A sandbox with the default settings, its state in a file under tmp_path."""
    return sandbox_factory(state_path=tmp_path / "sandbox-state.sqlite3")


@pytest.fixture
def cli_sandbox(sandbox_factory: SandboxFactory, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Callable[..., RunningSandbox]:
    """Start a sandbox (SandboxConfig keyword arguments; its state under tmp_path) and point
    the CLI at it: BATCHPAY_BASE_URL and the key, a journal under tmp_path (or `journal`),
    no user settings file, and tmp_path as the current folder."""

    def start(*, journal: Path | None = None, **options: Any) -> RunningSandbox:
        options.setdefault("state_path", tmp_path / "sandbox.sqlite3")
        running = sandbox_factory(**options)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("BATCHPAY_BASE_URL", running.url)
        monkeypatch.setenv("BATCHPAY_API_KEY", running.api_key)
        monkeypatch.setenv("BATCHPAY_JOURNAL",
                           str(journal or tmp_path / "journal" / "journal.sqlite3"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        return running

    return start


@pytest.fixture
def journal() -> Iterator[Journal]:
    """A fresh journal in SQLite memory, bound to the embedded sandbox as a run's journal is
    before it plans: no file, no folder, no lock file. Tests of the journal's file itself
    (modes, WAL, the run lock, durability) open one under tmp_path instead."""
    with Journal(":memory:") as j:
        j.bind_service("embedded")
        yield j
