"""The sandbox and the runner as real processes, for tests that kill the runner."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


@contextmanager
def sandbox_process(*options: str, state: Path | None = None) -> Iterator[str]:
    """`batchpay sandbox` on a free port; yields its URL."""
    args = [sys.executable, "-m", "batchpay", "sandbox", "--port", "0", *options]
    if state is not None:
        args += ["--state", str(state)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        url = _wait_for_url(proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_for_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError("the sandbox process ended before it printed its URL")
        match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if match:
            url = match.group(1)
            for _ in range(100):
                try:
                    httpx.get(f"{url}/_sandbox/stats", timeout=1)
                    return url
                except httpx.HTTPError:
                    time.sleep(0.05)
    raise RuntimeError("the sandbox process did not start")


def runner_env(url: str, journal: Path, key: str = "sandbox-key") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    env.update(BATCHPAY_BASE_URL=url, BATCHPAY_API_KEY=key, BATCHPAY_JOURNAL=str(journal),
               NO_COLOR="1")
    return env


def start_runner(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "batchpay", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
