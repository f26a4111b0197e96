"""Benchmark `batchpay listen` under a flood of idle connections.

    python tests/benchmarks/bench_listener.py [--idle 20000]
    python tests/benchmarks/bench_listener.py --short      # 2,000 idle connections, for CI

Starts `batchpay listen` as a process on a journal holding one PENDING payout, with the
open-file limit many systems give a process (`ulimit -n` 1024), opens N TCP connections to
it that never send a byte, then delivers one signed `payout.completed` event and times its
answer. Prints:
    idle=20000 opened=20000 delivery_ms=12.3 status=200 journal=COMPLETED listener_peak_mb=61.0
Target: the delivery is answered 200 within 10 s (the service's deadline) and the journal
moves. Exits 1 when missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from batchpay.journal.store import Journal
from batchpay.webhooks import sign

SECRET = "bench-listener-secret-0123456789"
DEADLINE_SECONDS = 10.0


LISTENER_FILES = 1024  # a common default soft limit of open files


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LISTENER_FILES, LISTENER_FILES))


def start_listener(journal: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    env.update(NO_COLOR="1", BATCHPAY_WEBHOOK_SECRET=SECRET)
    proc = subprocess.Popen(
        [sys.executable, "-m", "batchpay", "listen", "--port", "0", "--journal", str(journal)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_limit_files)
    assert proc.stderr is not None
    said = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        said += line
        match = re.search(r"(http://127\.0\.0\.1:\d+)/webhook", said)
        if match:
            return proc, match.group(1)
    proc.kill()
    raise SystemExit(f"listen did not start: {said}")


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=20000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    idle_target = 2000 if args.short else args.idle
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    idle_target = min(idle_target, hard - 100)

    with tempfile.TemporaryDirectory() as tmp:
        journal_path = Path(tmp) / "journal.sqlite3"
        with Journal(journal_path) as j:
            attempt = j.record_intent("R1", "run-1", "{}", {"id": "q1"}, {"quoteId": "q1"},
                                      expires_at=9e9)
            j.record_answer(attempt, "accepted", status="PENDING", run_id="run-1",
                            payout_id="p1")
        proc, url = start_listener(journal_path)
        host, port = url.removeprefix("http://").split(":")
        idle: list[socket.socket] = []
        try:
            for _ in range(idle_target):
                try:
                    idle.append(socket.create_connection((host, int(port)), timeout=5))
                except OSError:
                    break
            body = json.dumps({"event": "payout.completed",
                               "data": {"id": "p1", "state": "COMPLETED",
                                        "quote": {"id": "q1"}}}).encode()
            started = time.monotonic()
            try:
                status = httpx.post(url + "/webhook", content=body, headers=sign(body, SECRET),
                                    timeout=DEADLINE_SECONDS).status_code
            except httpx.HTTPError as exc:
                status = 0
                print(f"delivery failed: {type(exc).__name__}", file=sys.stderr)
            elapsed = time.monotonic() - started
            memory = peak_mb(proc.pid)
        finally:
            for sock in idle:
                sock.close()
            proc.terminate()
            proc.wait(10)
        with Journal(journal_path) as j:
            entry = j.entry("R1")
            state = entry.status if entry else "missing"
    print(f"idle={idle_target} opened={len(idle)} delivery_ms={elapsed * 1000:.1f} "
          f"status={status} journal={state} listener_peak_mb={memory:.1f}")
    ok = status == 200 and state == "COMPLETED" and elapsed < DEADLINE_SECONDS
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
