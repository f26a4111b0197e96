"""The run lock: one run, rerun or sync at a time on a journal file.

An OS lock that dies with its process (no stale locks), taken on the journal file itself
(flock, on its inode), so that every path to it (a symbolic link, a hard link, another
spelling) meets the same lock. SQLite's own locks are POSIX record locks, which flock does
not touch.
"""

from __future__ import annotations

import os
from pathlib import Path

from batchpay.errors import JournalError, JournalLocked


def file_identity(path: Path) -> tuple[int, int]:
    """(device, inode) of the file at `path`, through any symbolic link."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


class RunLock:
    """The lock on the journal file a Journal opened (`identity`: that file's device and
    inode, taken when it was opened, before SQLite wrote a byte)."""

    def __init__(self, path: Path, identity: tuple[int, int]) -> None:
        self.path = path
        self.identity = identity
        self._fd: int | None = None

    def take(self) -> None:
        """Lock the file, or refuse at once (JournalLocked) while another process holds it;
        taking it twice is once."""
        if self._fd is not None:
            return
        import fcntl

        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JournalLocked(
                f"Another batchpay run is using the journal {self.path}.",
                hint="Wait for it to finish (nothing was sent by this one), then run again.",
            ) from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self.identity:
            os.close(fd)  # replaced between opening and locking: lock what SQLite has open
            raise JournalError(f"The journal {self.path} was replaced while it was being "
                               "opened.", hint="Run again.")
        self._fd = fd

    def still_at_path(self) -> bool:
        """Whether the file the journal opened is still the one at its path (not deleted,
        moved away or replaced by another file meanwhile)."""
        try:
            return file_identity(self.path) == self.identity
        except OSError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
