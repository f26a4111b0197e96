"""The run lock of a journal file, and the question whether a run holds it, never cost this
process's SQLite connections their locks on the file: POSIX drops every record lock a
process holds on a file when it closes any descriptor of it, so the run lock's descriptor is
kept open and let go with LOCK_UN. Within the process, a second holder is refused as a
second process is. Other processes are real ones here (a run lock, a reader, a writer)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from batchpay.engine import journal_in_use
from batchpay.errors import JournalError, JournalLocked
from batchpay.journal.lock import RunLock, file_identity
from batchpay.journal.store import Journal
from batchpay.settings.load import load_settings
from batchpay.settings.model import Settings

# another process's run lock on the journal file: "taken" or "locked", then held until the
# test closes its input
TAKE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from batchpay.errors import JournalLocked
    from batchpay.journal.lock import RunLock, file_identity
    path = Path(sys.argv[1])
    lock = RunLock(path, file_identity(path))
    try:
        lock.take()
    except JournalLocked:
        print("locked", flush=True)
        raise SystemExit(0)
    print("taken", flush=True)
    sys.stdin.read()
""")

# another process's write transaction, asked for with a short wait: "began" or SQLite's refusal
BEGIN = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], timeout=0.3, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        print(exc)
    else:
        print("began")
        db.execute("ROLLBACK")
    db.close()
""")

# another process that reads the journal and lets it go (a `batchpay status`, a console page)
READ = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], timeout=5)
    print(db.execute(sys.argv[2]).fetchone()[0])
    db.close()
""")


def elsewhere(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@contextmanager
def held_elsewhere(path: Path) -> Iterator[None]:
    """The run lock, held by another process until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", TAKE, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "taken"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)


def settings_for(path: Path) -> Settings:
    return load_settings(env={"BATCHPAY_JOURNAL": str(path)})


def run_lock(path: Path) -> RunLock:
    return RunLock(path, file_identity(path))


def intent(journal: Journal, ref: str) -> None:
    journal.record_intent(ref, "run1", '{"amount":"1"}', {"id": f"q-{ref}"},
                          {"quoteId": f"q-{ref}", "reason": "x"}, expires_at=9e9)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A journal file (made and closed again: a file the tests open as they need)."""
    where = tmp_path / "journal" / "journal.sqlite3"
    Journal(where).close()
    return where


# --- SQLite's locks of this process's connections stay with them -----------------------------

def test_the_run_lock_leaves_a_write_transaction_of_this_process_its_lock(tmp_path: Path
                                                                          ) -> None:
    """A write transaction of this process (a rollback journal's: its lock is on the file
    itself), then the run lock taken and let go and the question asked: another process is
    still refused a write transaction until this one commits."""
    path = tmp_path / "journal.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("CREATE TABLE t (x)")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO t VALUES (1)")
        lock = run_lock(path)
        lock.take()
        lock.release()
        assert journal_in_use(settings_for(path)) is False
        assert elsewhere(BEGIN, str(path)) == "database is locked"
        writer.execute("COMMIT")
        assert elsewhere(BEGIN, str(path)) == "began"
    finally:
        writer.close()


def test_intents_written_around_the_run_lock_survive_another_process_reading(path: Path
                                                                             ) -> None:
    """A run's write transaction of this process (WAL: its connections hold locks on the file
    while they are open), the run lock taken and let go and the question asked meanwhile:
    another process that reads the journal and lets it go must not take the file for its
    own (check the write-ahead log into it and delete it), or the intents committed next go
    to a deleted file: no other process sees them, and a crash loses them, so their payouts
    would be sent again."""
    journal = Journal(path)
    try:
        with journal.transaction(durable=True):
            intent(journal, "R1")
            journal.lock()
            journal.unlock()
            assert journal_in_use(settings_for(path)) is False
            assert elsewhere(READ, str(path), "SELECT COUNT(*) FROM attempts") == "0"
            intent(journal, "R2")
        intent(journal, "R3")
        # seen by the other processes while this one goes on (a run or a sync of theirs
        # must find them), and kept if it is killed now
        assert elsewhere(READ, str(path), "SELECT COUNT(*) FROM attempts") == "3"
    finally:
        journal.close()


def test_a_refused_run_lock_leaves_this_processs_journal_whole(path: Path) -> None:
    """The run lock refused (another process holds it) while a write transaction of this
    process goes on: the refusal costs it nothing either."""
    journal = Journal(path)
    try:
        with held_elsewhere(path), journal.transaction(durable=True):
            intent(journal, "R1")
            with pytest.raises(JournalLocked):
                journal.lock()
            assert journal_in_use(settings_for(path)) is True
            assert elsewhere(READ, str(path), "SELECT COUNT(*) FROM attempts") == "0"
            intent(journal, "R2")
        assert elsewhere(READ, str(path), "SELECT COUNT(*) FROM attempts") == "2"
    finally:
        journal.close()


# --- one holder at a time, in this process and across processes -----------------------------

def test_two_holders_in_this_process_exclude_each_other(path: Path, tmp_path: Path) -> None:
    """Two run locks of this process share one descriptor (flock cannot tell them apart):
    the second is refused as another process's is, whatever path it came by, until the first
    lets go; then it takes it, and the first is refused in turn."""
    link = tmp_path / "link.sqlite3"
    link.symlink_to(path)
    hard = tmp_path / "hard.sqlite3"
    os.link(path, hard)
    first = run_lock(path)
    first.take()
    first.take()  # twice is once
    for other in (run_lock(path), run_lock(link), run_lock(hard),
                  run_lock(path.parent / ".." / path.parent.name / path.name)):
        with pytest.raises(JournalLocked, match="Another batchpay run"):
            other.take()
    second = run_lock(link)
    first.release()
    second.take()
    with pytest.raises(JournalLocked):
        first.take()
    second.release()
    first.take()  # take, release, take
    assert elsewhere(TAKE, str(path)) == "locked"
    first.release()
    assert elsewhere(TAKE, str(path)) == "taken"


def test_the_question_does_not_loosen_this_processs_lock(path: Path) -> None:
    """While this process holds the lock the answer is yes, asked without touching the lock
    (a shared lock on its descriptor would turn it into one another process could share):
    another process is still refused."""
    lock = run_lock(path)
    lock.take()
    try:
        assert journal_in_use(settings_for(path)) is True
        assert journal_in_use(settings_for(path)) is True
        assert elsewhere(TAKE, str(path)) == "locked"
    finally:
        lock.release()
    assert journal_in_use(settings_for(path)) is False
    assert elsewhere(TAKE, str(path)) == "taken"


def test_another_processs_lock_refuses_this_one_until_it_lets_go(path: Path) -> None:
    lock = run_lock(path)
    with held_elsewhere(path):
        assert journal_in_use(settings_for(path)) is True
        with pytest.raises(JournalLocked):
            lock.take()
    assert journal_in_use(settings_for(path)) is False  # it died with its process
    lock.take()
    lock.release()


def test_a_file_replaced_at_the_path_is_refused(path: Path, tmp_path: Path) -> None:
    """The lock is taken on the file the journal opened: another file put at its path
    meanwhile is refused, not locked in its stead."""
    lock = run_lock(path)
    other = tmp_path / "other.sqlite3"
    Journal(other).close()
    os.replace(other, path)
    with pytest.raises(JournalError, match="was replaced"):
        lock.take()
    fresh = run_lock(path)  # the file now at the path is free
    fresh.take()
    fresh.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_does_not_share_this_processs_lock(path: Path) -> None:
    """A forked child shares its parent's open file descriptions, so an flock it took on an
    inherited descriptor would be its parent's too: the child opens its own, and the parent
    is refused while the child holds the lock."""
    lock = run_lock(path)
    lock.take()
    lock.release()  # the descriptor is kept, and now inherited by the child
    reader, writer = os.pipe()  # the child says it holds the lock
    held_until, let_go = os.pipe()  # the parent says it has tried
    pid = os.fork()
    if pid == 0:  # the child: take the lock, say so, hold it until the parent has tried
        os.close(reader)
        try:
            run_lock(path).take()
            os.write(writer, b"taken")
        except BaseException:
            os.write(writer, b"failed")
        os.read(held_until, 1)
        os._exit(0)
    os.close(writer)
    try:
        assert os.read(reader, 16) == b"taken"
        with pytest.raises(JournalLocked):
            lock.take()
        assert journal_in_use(settings_for(path)) is True
    finally:
        os.write(let_go, b"x")
        os.waitpid(pid, 0)
    lock.take()
    lock.release()
