"""The journal files this process opens itself: one descriptor each, never closed.

SQLite's locks on a journal file are POSIX record locks (fcntl), and POSIX drops every
record lock a process holds on a file as soon as the process closes *any* descriptor of that
file, whoever opened it. Were batchpay to open a journal file (for the run lock, to create
it private) and close that descriptor again, it would silently drop the locks of its own
SQLite connections to the file: a write transaction in progress (a run writing an intent,
the console's Pay in a thread) would lose its lock, and another process could write, or
check the journal's write-ahead log into the file and delete it under the writer, at the
same time: a forked journal, intents lost, payouts made twice.

So a journal file is opened here only, once per file (by its device and inode: a symbolic
link, a hard link and another spelling meet the same descriptor), and its descriptor is
kept open (close-on-exec) while the process lives. The run lock is an `flock` on that
descriptor, taken (LOCK_EX) and let go (LOCK_UN), never closed; it still dies with its
process. An flock belongs to the open file description, which every thread of the process
shares, so it cannot tell two holders of this process apart: who holds the run lock in this
process is kept here too, and a second holder is refused as a second process is. A forked
child starts with none of this (it must never flock its parent's descriptions).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from batchpay.files import PRIVATE_FILE_MODE

Identity = tuple[int, int]  # (device, inode)


@dataclass
class KeptFile:
    """One journal file's kept descriptor, and this process's holder of its run lock.

    `mutex` orders every flock call on `fd`: a shared lock asked for (and let go) on the
    descriptor that holds the exclusive one would turn it into a shared one, and letting
    that go would drop the run lock."""

    fd: int
    identity: Identity
    mutex: threading.Lock = field(default_factory=threading.Lock)
    holder: weakref.ref[object] | None = None

    def held(self) -> bool:
        """Whether a holder of this process has the run lock (a holder that no longer
        exists holds nothing)."""
        return self.holder is not None and self.holder() is not None


_kept: dict[Identity, KeptFile] = {}
_spare: list[int] = []  # a second descriptor of a kept file (two opens raced): kept too
_registry = threading.Lock()


def identity_of(path: Path | str) -> Identity:
    """(device, inode) of the file at `path`, through any symbolic link (a stat: it opens
    nothing)."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def keep(path: Path | str, *, create: bool = False) -> KeptFile:
    """The kept descriptor of the file at `path`, opened (and kept) now unless this process
    keeps one already. `create`: make the file if it is missing, readable by its owner only
    from its first byte. Raises OSError when the file cannot be opened."""
    with _registry:
        try:
            known = _kept.get(identity_of(path))
        except FileNotFoundError:
            if not create:
                raise
            known = None
        if known is not None:
            return known
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        if identity in _kept:  # replaced by a kept file between the stat and the open
            _spare.append(fd)
            return _kept[identity]
        kept = _kept[identity] = KeptFile(fd, identity)
        return kept


def kept(identity: Identity) -> KeptFile | None:
    """The kept descriptor of the file with `identity`, if this process keeps one."""
    with _registry:
        return _kept.get(identity)


def _forget_in_child() -> None:
    """A forked child shares its parent's open file descriptions: an flock on them would
    take or drop the parent's run lock. It forgets them (closing its copies drops no lock of
    the parent's, and the child holds no record lock yet) and starts afresh."""
    global _registry
    for fd in [k.fd for k in _kept.values()] + _spare:
        with contextlib.suppress(OSError):
            os.close(fd)
    _kept.clear()
    _spare.clear()
    _registry = threading.Lock()  # another thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
