"""The run lock: one run, rerun or sync at a time on a journal file.

An OS lock that dies with its process (no stale locks), taken on the journal file itself
(flock, on its inode), so that every path to it (a symbolic link, a hard link, another
spelling) meets the same lock. SQLite's own locks are POSIX record locks, which flock does
not touch; but closing any descriptor of the file would drop them, so the flock is taken on
the descriptor batchpay.journal.descriptors keeps open while the process lives, and let go
without closing it. Within the process, who holds the lock is recorded there too: a second
holder of this process is refused as one of another process is.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from batchpay.errors import JournalError, JournalLocked
from batchpay.journal.descriptors import Identity, KeptFile, identity_of, keep


def file_identity(path: Path) -> tuple[int, int]:
    """(device, inode) of the file at `path`, through any symbolic link."""
    return identity_of(path)


class RunLock:
    """The lock on the journal file a Journal opened (`identity`: that file's device and
    inode, taken when it was opened, before SQLite wrote a byte)."""

    def __init__(self, path: Path, identity: Identity) -> None:
        self.path = path
        self.identity = identity
        self._kept: KeptFile | None = None

    def take(self) -> None:
        """Lock the file, or refuse at once (JournalLocked) while another process, or
        another holder of this one, holds it; taking it twice is once."""
        if self._kept is not None:
            return
        import fcntl

        kept = self._file()
        with kept.mutex:
            if kept.held():
                raise self._locked()
            try:
                fcntl.flock(kept.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._locked() from None
            if not self.still_at_path():  # replaced after it was opened: refused, as below
                fcntl.flock(kept.fd, fcntl.LOCK_UN)
                raise self._replaced()
            kept.holder = weakref.ref(self)
        self._kept = kept

    def _file(self) -> KeptFile:
        """The kept descriptor of the file the journal opened (by its identity, whatever is
        at the path now); a file at the path that is another one is refused."""
        try:
            kept = keep(self.path)
        except OSError:
            raise self._replaced() from None
        if kept.identity != self.identity:
            raise self._replaced()
        return kept

    def _locked(self) -> JournalLocked:
        return JournalLocked(
            f"Another batchpay run is using the journal {self.path}.",
            hint="Wait for it to finish (nothing was sent by this one), then run again.")

    def _replaced(self) -> JournalError:
        return JournalError(f"The journal {self.path} was replaced while it was being opened.",
                            hint="Run again.")

    def still_at_path(self) -> bool:
        """Whether the file the journal opened is still the one at its path (not deleted,
        moved away or replaced by another file meanwhile)."""
        try:
            return file_identity(self.path) == self.identity
        except OSError:
            return False

    def release(self) -> None:
        """Let the lock go (LOCK_UN): the descriptor stays open, so that SQLite's locks on
        the file stay with their connections."""
        kept, self._kept = self._kept, None
        if kept is None:
            return
        import fcntl

        with kept.mutex:
            if kept.holder is not None and kept.holder() is self:
                kept.holder = None
                fcntl.flock(kept.fd, fcntl.LOCK_UN)


def in_use(path: Path) -> bool:
    """Whether a run, rerun or sync (of this process or another) holds the run lock of the
    journal file at `path` now. Another process's is asked with a shared lock taken and let go
    at once (a run starting at that instant would be told to wait); never on the descriptor
    while this process holds the lock, which a shared lock would turn into a shared one."""
    import fcntl

    try:
        kept = keep(path)
    except OSError:
        return False
    with kept.mutex:
        if kept.held():
            return True
        try:
            fcntl.flock(kept.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(kept.fd, fcntl.LOCK_UN)
    return False
