"""The sandbox and the runner as real processes, for tests that kill the runner."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.e2e import TLS

# the process id of each running sandbox_process, by its URL (benchmarks read its CPU time)
SANDBOX_PIDS: dict[str, int] = {}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def family_cpu_seconds(parent: int, seen: dict[int, float] | None = None) -> float:
    """User + system CPU time used so far by a running process and the processes it started
    (a PostgreSQL cluster: its postmaster and every server process). With `seen`, kept
    between calls, a child that has ended since is still counted, as it was last seen."""
    seen = {} if seen is None else seen
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    for pid in [parent, *map(int, children)]:
        with contextlib.suppress(OSError, IndexError, ValueError):  # ended meanwhile
            seen[pid] = cpu_seconds(pid)
    return sum(seen.values())


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Ask a server process to end; killed when it has not within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def sandbox_process(*options: str, state: Path | None = None) -> Iterator[str]:
    """`batchpay sandbox` on a free port as its own process; yields its URL.

    Its stderr goes to a file, not a pipe: over a long benchmark the warnings of a sandbox
    whose clients get killed would fill a pipe nobody reads, and the sandbox would stall.
    """
    args = [sys.executable, "-m", "batchpay", "sandbox", "--port", "0", *options]
    if state is not None:
        args += ["--state", str(state)]
    fd, name = tempfile.mkstemp(prefix="sandbox-", suffix=".log")
    log = Path(name)
    try:
        with os.fdopen(fd, "w") as err:
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        url = ""
        try:
            url = _wait_for_url(proc, log)
            SANDBOX_PIDS[url] = proc.pid
            yield url
        finally:
            SANDBOX_PIDS.pop(url, None)
            stop(proc)
    finally:
        log.unlink(missing_ok=True)


def _wait_for_url(proc: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = re.search(r"(http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        if match:
            url = match.group(1)
            while time.monotonic() < deadline:
                try:
                    httpx.get(f"{url}/_sandbox/stats", timeout=1, verify=TLS)
                    return url
                except httpx.HTTPError:
                    time.sleep(0.05)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"the sandbox did not start: {log.read_text(errors='replace')[-2000:]}")


def runner_env(url: str, journal: Path | str, key: str = "sandbox-key",
               folder: Path | None = None) -> dict[str, str]:
    """The runner's environment: this sandbox, this journal (a file, or a PostgreSQL
    address), and user folders of its own in `folder`, by default beside the journal file
    (benchmarks run outside pytest and must not touch the real ones)."""
    if folder is None:
        assert isinstance(journal, Path), "a journal in a database needs a folder"
        folder = journal.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    env.update(BATCHPAY_BASE_URL=url, BATCHPAY_API_KEY=key, BATCHPAY_JOURNAL=str(journal),
               NO_COLOR="1", **private_user_folders(folder))
    return env


def private_user_folders(folder: Path) -> dict[str, str]:
    """XDG_DATA_HOME and XDG_CONFIG_HOME under `folder`: default journals and settings there."""
    return {"XDG_DATA_HOME": str(folder / "xdg-data"), "XDG_CONFIG_HOME": str(folder / "xdg-config")}


def timed_child(args: list[str], folder: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit code of one child process (its user data and
    config folders under `folder`: the embedded sandbox it may start keeps its state there)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           **private_user_folders(folder)}
    started = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, child.returncode


def start_runner(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "batchpay", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def journaled_attempts(journal: Path | str) -> int:
    """How many payout intents a (running) runner has put in its journal (a file, or a
    PostgreSQL address)."""
    if isinstance(journal, str):
        import psycopg

        try:
            with psycopg.connect(journal, connect_timeout=2) as conn:
                found = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()
                return int(found[0]) if found else 0
        except psycopg.Error:
            return 0
    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1)
        try:
            return int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def kill_when(proc: subprocess.Popen[str], journal: Path | str, intents: int,
              extra: float) -> bool:
    """SIGKILL the runner once `intents` intents are journaled (plus `extra` s); True if killed."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if journaled_attempts(journal) >= intents:
            time.sleep(extra)
            break
        time.sleep(0.005)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    return killed


def benchmark_rows(description: str, default: int = 10000, short: int = 500) -> int:
    """A benchmark's size: `--rows N` (default `default`), or `--short` for CI."""
    import argparse

    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--rows", type=int, default=default)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    return short if args.short else int(args.rows)


@contextmanager
def listener_process(*options: str, env: dict[str, str], cwd: Path) -> Iterator[str]:
    """`batchpay listen --port 0` as its own process (its stderr in a file); yields the URL
    the service posts webhooks to, once it answers."""
    args = [sys.executable, "-m", "batchpay", "listen", "--port", "0", *options]
    fd, name = tempfile.mkstemp(prefix="listener-", suffix=".log")
    log = Path(name)
    try:
        with os.fdopen(fd, "w") as err:
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                    cwd=cwd)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                match = re.search(r"(http://127\.0\.0\.1:\d+)/webhook", log.read_text())
                if match:
                    try:
                        httpx.get(match.group(1) + "/health", timeout=1, verify=TLS)
                        break
                    except httpx.HTTPError:
                        pass
                time.sleep(0.05)
            else:
                raise AssertionError(f"listen did not start: {log.read_text()}")
            yield match.group(1) + "/webhook"
        finally:
            stop(proc)
    finally:
        log.unlink(missing_ok=True)
