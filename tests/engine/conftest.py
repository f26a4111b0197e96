"""The engine's fixtures: a journal in memory for the unit tests of its rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from batchpay.journal.store import Journal


@pytest.fixture
def journal() -> Iterator[Journal]:
    """A fresh journal in SQLite memory, bound to the embedded sandbox as a run's journal is
    before it plans: no file, no folder, no lock file. Tests of the journal's file itself
    (modes, WAL, the run lock, durability) open one under tmp_path instead."""
    with Journal(":memory:") as j:
        j.bind_service("embedded")
        yield j
