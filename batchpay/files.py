"""Files batchpay keeps for itself (journal, sandbox state, caches, results): private.

A folder batchpay creates is readable by its owner only; a folder that already exists is
never changed (it may be a shared one such as /tmp, with modes others rely on). A file
batchpay creates is 0600 from its first byte, not narrowed after it was written.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) readable by its owner only; leave an existing
    folder as it is."""
    missing = []
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # made meanwhile by another process: not ours to change
            continue
        if os.name == "posix":
            os.chmod(folder, PRIVATE_DIR_MODE)  # mkdir's mode is narrowed by the umask only
    return Path(path)


def create_private(path: Path) -> Path:
    """Create an empty file readable by its owner only, unless it exists."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, PRIVATE_FILE_MODE)
    os.close(fd)
    return Path(path)


def write_private(path: Path, data: bytes) -> None:
    """Write a new file, 0600 from its first byte."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
