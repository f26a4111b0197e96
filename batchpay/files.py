"""Files batchpay keeps for itself (journal, sandbox state, caches, results): private.

A folder batchpay creates is readable by its owner only; a folder that already exists is
never changed (it may be a shared one such as /tmp, with modes others rely on). A file
batchpay creates is 0600 from its first byte, not narrowed after it was written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# a journal kept in a PostgreSQL database instead of a file is named by its address
DATABASE_SCHEMES = ("postgresql://", "postgres://")


def is_database_address(where: Path | str) -> bool:
    """Whether a journal's location names a PostgreSQL database rather than a file."""
    return isinstance(where, str) and where.lower().startswith(DATABASE_SCHEMES)


def shown_address(url: str) -> str:
    """A database address as it may be printed and filed: without its password."""
    hidden = re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", hidden, flags=re.IGNORECASE)


def fingerprint(secret: str | None) -> str:
    """A short, stable, non-reversible name for a secret: safe to print and to file."""
    if not secret:
        return "(not set)"
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:12]


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


def create_private(path: Path, *, new: bool = False) -> Path:
    """Create an empty file readable by its owner only, unless it exists (`new`: raise
    FileExistsError then; a file this process may have open, such as a journal, is then
    never opened and closed here, which would drop SQLite's locks on it)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | (os.O_EXCL if new else 0),
                 PRIVATE_FILE_MODE)
    os.close(fd)
    return Path(path)


def write_private(path: Path, data: bytes) -> None:
    """Write a new file, 0600 from its first byte."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def check_output(path: Path, *, overwrite: bool, inputs: tuple[Path, ...] = ()) -> Path:
    """An output file batchpay may write: never an input it reads, and never a file that
    exists unless the operator said `--overwrite`. Checked before anything is sent."""
    from batchpay.errors import UsageError

    target = Path(path)
    check_name_fits(target)  # first: a name the system refuses cannot even be looked up
    for source in inputs:
        if target.exists() and source.exists() and os.path.samefile(target, source) \
                or target.absolute() == Path(source).absolute():
            raise UsageError(f"{target} is the sheet being read: batchpay never writes over "
                             "its input.", hint="Give the results another name with --out.")
    if target.exists() and not overwrite:
        raise UsageError(f"{target} already exists; batchpay does not overwrite it.",
                         hint="Give another name with --out, or add --overwrite to replace it.")
    return target


def check_name_fits(path: Path) -> None:
    """Refuse, before anything is sent, an output whose name (or the partial file it is first
    written as) is longer than its folder's file system takes: found only after paying, it
    would leave a paid batch without its results workbook."""
    from batchpay.errors import UsageError

    target = Path(path).absolute()
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
        path_max = os.pathconf(folder, "PC_PATH_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows): the usual bounds
        name_max, path_max = 255, 4096
    longest = max(target.name, partial_path(target).name, key=lambda n: len(os.fsencode(n)))
    size = len(os.fsencode(longest))
    if size > name_max:
        shown = target.name if len(target.name) <= 60 else target.name[:40] + "…" + target.name[-16:]
        raise UsageError(f"The file name {shown} is too long: {size} bytes as batchpay writes it, "
                         f"and this folder takes at most {name_max}.",
                         hint="Give the sheet a shorter file name, or name the output with --out.")
    if len(os.fsencode(str(partial_path(target)))) >= path_max:
        raise UsageError(f"The path {str(target)[:40]}… is longer than the {path_max} bytes the "
                         "system takes.", hint="Work in a folder nearer the top, or name the "
                                               "output with --out.")


def partial_path(target: Path) -> Path:
    """The hidden file an output is written to before it replaces `target` in one step."""
    return target.with_name(f".~{target.stem}.{os.getpid()}.partial{target.suffix}")


def free_name(path: Path) -> Path:
    """`path`, or the first of `<stem>-2<suffix>`, `<stem>-3<suffix>`, ... that is free."""
    candidate, n = Path(path), 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


@contextlib.contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """Write to the path this yields (a hidden file in the same folder); once the block ends
    without an error it replaces `path` in one step, so a crash or a full disk leaves the
    old file whole and never a half-written one; on an error the partial file is removed."""
    target = Path(path)
    partial = partial_path(target)
    try:
        yield partial
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
