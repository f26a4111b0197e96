"""Benchmark the batch engine's throughput against the latency-bound ceiling.

    python tests/benchmarks/bench_engine.py [--rows N] [--latency-ms 50] [--concurrency 1,4,16]
                                            [--repeat 1] [--journal-dir DIR] [--reference]
                                            [--store sqlite|postgresql]
                                            [--journal postgresql://USER@HOST/DB]
    python tests/benchmarks/bench_engine.py --short      # a few seconds, for CI
    python tests/benchmarks/bench_engine.py --rows 2000 --latency-ms 1 --concurrency 16 \
        --reference --repeat 3 [--store postgresql]      # the journal's and the CPU's targets

`--journal-dir /dev/shm` puts the journals on tmpfs, where an fsync costs nothing: the
difference from a normal run is what the journal's durable commits cost.

A sandbox runs as its own process (`batchpay sandbox --latency-ms L`: every answer leaves
L after its request arrived) and `batchpay run SHEET --wait 0 --quiet --concurrency C` runs
as a subprocess, with a fresh journal and a reset sandbox each time, on N rows (default
50 per worker, at least 100). Each row costs two requests (quote, payout), so C workers can
pay at most C / (2 × L) rows a second.

The rate is the steady state of the paying phase, from the payouts' `created` times at the
sandbox: the payouts made between the first and the last tenth of them, over the time that
took. Python start-up, reading the sheet and writing the results are not in it, nor are the
first wave (C connections opening at once) and the ragged end (the last rows finish one by
one while the other workers have nothing left to take); the whole-batch rate, (N − C)
payouts from the first to the last, is printed beside it.

Prints one line per run:
    concurrency=16 rows=800 rows_per_s=146.2 bound=160.0 share=91.4% whole_batch=89.2% ...
(max_gap_ms, the longest pause between two payouts, shows a stall such as a garbage collection;
run_cpu_ms and sandbox_cpu_ms, the CPU time per payout of the run process and of the sandbox
process, show which of the two limits the rate) and exits 1 when the share at the highest
concurrency (the median, with --repeat) is below the target (90%) or cannot be measured, or
when a run did not pay every row exactly once. Short mode checks no target.

`--latency-ms 0` has no latency bound: the rate is then held against the bare client's on the
same sandbox (`--reference`, implied). With `--reference` the target is the engine's share
of the bare client (the same PayoutClient, quote then payout, no journal, no engine): at
least 95% with the journal in SQLite, 90% in PostgreSQL (`--store postgresql` starts a
cluster of its own, fsync on, as tests/support/postgres.py does; each run gets a new
journal schema in it; `--journal postgresql://USER@HOST/DB` takes an existing server
instead, a team's, where the figures are to hold: each run gets a new schema there, named
batchpay_bench_..., all dropped at the end; USER needs CREATE on DB). Without it, the
target is the share of the latency bound (90%).
The bare client's own CPU per payout (this process's) is printed beside its rate: the part
of a run's CPU that the HTTP client takes. The bare client runs right after each engine run
at the highest concurrency, and the share held against the target is the median of these
pairs' shares: this host's speed drifts by 10-30 % from one minute to the next, and a
share of two medians measured minutes apart measures that drift as well. With the
journal's own PostgreSQL cluster (`--store postgresql`), the cluster's CPU per payout over
the paying phase is printed too: it shares the machine's cores with the run and the
sandbox.

The run process's CPU per payout (start-up, reading the sheet and writing the results
included) must stay at or under 4 ms (the median, with --repeat): CPU time, not wall time,
is the figure that holds on a machine shared with other work; the load average at the
start and the end is printed beside it. Other helpers here (run_batch, StatsSampler, ...)
are shared with the other benchmarks.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

from tests.support.processes import (  # noqa: E402
    SANDBOX_PIDS,
    cpu_seconds,
    family_cpu_seconds,
    runner_env,
    sandbox_process,
)
from tests.support.sheets import rows, write_sheet  # noqa: E402

TARGET_SHARE = 0.90  # of the latency bound
TARGET_CLIENT_SHARE = {"sqlite": 0.95, "postgresql": 0.90}  # of the bare client (--reference)
TARGET_RUN_CPU_MS = 4.0  # the run process's CPU per payout


class StatsSampler:
    """Polls /_sandbox/stats (not counted by the sandbox) to time the requests it answers.

    The sandbox keeps counts, not times: sampling them every `interval` seconds gives, within
    two intervals, when the first and the last request of a run were answered.
    """

    def __init__(self, url: str, interval: float = 0.02, enabled: bool = True) -> None:
        self.url, self.interval, self.enabled = url, interval, enabled
        self.samples: list[tuple[float, int]] = []  # (time, requests answered, 429s excluded)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> StatsSampler:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join()

    def _poll(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.is_set():
                counts = client.get(f"{self.url}/_sandbox/stats").json()["requests"]
                admitted = sum(v for k, v in counts.items() if not k.endswith(" 429"))
                self.samples.append((time.perf_counter(), admitted))
                self._stop.wait(self.interval)

    def rate(self) -> tuple[float, float, int]:
        """(requests per second, seconds, requests) from the first answered to the last."""
        if not self.samples:
            return float("nan"), 0.0, 0
        final = self.samples[-1][1]
        start = next(((t, n) for t, n in self.samples if n > 0), None)
        end = next(((t, n) for t, n in self.samples if n == final), None)
        if start is None or end is None or end[0] <= start[0]:
            return float("nan"), 0.0, final
        return (end[1] - start[1]) / (end[0] - start[0]), end[0] - start[0], end[1] - start[1]


class CpuTrace:
    """Samples the CPU time used so far by the run process, the sandbox process and (given
    its postmaster's pid) a PostgreSQL cluster, every `interval` seconds, with the
    wall-clock time (the sandbox's payouts are stamped in it): the CPU each spent between
    two moments of the run (`between`), e.g. over its steady paying phase, without the
    start-up and the results that a whole run's figure holds.

    A sample reads /proc once per process, about 40 µs each (ten processes with a
    PostgreSQL cluster): every 50 ms that is under 1 % of a core, taken from the cores the
    run, the sandbox and the database share, where every 10 ms it took 4 %."""

    def __init__(self, pids: tuple[int, int | None], interval: float = 0.05,
                 database: int | None = None) -> None:
        self.pids, self.interval, self.database = pids, interval, database
        # (time, run cpu, sandbox cpu, database cpu)
        self.samples: list[tuple[float, float, float, float]] = []
        self._seen: dict[int, float] = {}  # the database's processes: CPU when last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        run, sandbox = self.pids
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), cpu_seconds(run),
                                     cpu_seconds(sandbox) if sandbox else math.nan,
                                     family_cpu_seconds(self.database, self._seen)
                                     if self.database else math.nan))
            except (OSError, IndexError):  # the run process has ended
                return
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, when: float) -> tuple[float, float, float]:
        """(run, sandbox, database) CPU seconds at `when`, interpolated between the samples
        around it."""
        samples = self.samples
        if not samples or when < samples[0][0] or when > samples[-1][0]:
            return math.nan, math.nan, math.nan
        for before, after in zip(samples, samples[1:], strict=False):
            if before[0] <= when <= after[0]:
                f = (when - before[0]) / (after[0] - before[0]) if after[0] > before[0] else 0.0
                run, sandbox, database = (a + f * (b - a) for a, b in
                                          zip(before[1:], after[1:], strict=True))
                return run, sandbox, database
        return samples[-1][1], samples[-1][2], samples[-1][3]

    def between(self, start: float, end: float) -> tuple[float, float, float]:
        """(run, sandbox, database) CPU seconds spent from `start` to `end`."""
        first, last = self.at(start), self.at(end)
        return last[0] - first[0], last[1] - first[1], last[2] - first[2]


@dataclass
class RunFigures:
    exit_code: int
    wall_seconds: float
    run_cpu_seconds: float  # the `batchpay run` process, user + system
    sandbox_cpu_seconds: float  # the sandbox process over the same run
    payouts: list[dict[str, Any]]
    requests: dict[str, int]
    max_in_1s: int
    stderr: str
    sampler: StatsSampler
    cpu: CpuTrace


def sandbox_get(url: str, path: str) -> Any:
    response = httpx.get(f"{url}/_sandbox/{path}", timeout=30)
    response.raise_for_status()
    return response.json()


def reset(url: str) -> None:
    httpx.post(f"{url}/_sandbox/reset", timeout=30).raise_for_status()


def created_seconds(payouts: list[dict[str, Any]]) -> list[float]:
    """The payouts' `created` stamps (ISO 8601, Z) as epoch seconds, sorted."""
    return sorted(datetime.fromisoformat(p["created"].replace("Z", "+00:00")).timestamp()
                  for p in payouts)


def run_batch(url: str, sheet: Path, work: Path, *extra: str, timeout: float = 600,
              journal_dir: Path | None = None, sample: bool = False,
              new_journal: Callable[[], str] | None = None,
              database_pid: int | None = None) -> RunFigures:
    """`batchpay run SHEET` as a subprocess on a reset sandbox, with a journal of its own
    (a new file, or the database address `new_journal` gives).

    `sample` times the requests with a StatsSampler (its polling costs the sandbox a little
    CPU, so the throughput benchmark leaves it off)."""
    reset(url)
    journal: Path | str = (journal_dir or work) / f"journal-{time.monotonic_ns()}.sqlite3"
    if new_journal is not None:
        journal = new_journal()
    out = work / f"results-{time.monotonic_ns()}.xlsx"
    args = [sys.executable, "-m", "batchpay", "run", str(sheet), "--quiet", "--out", str(out),
            *extra]
    sandbox_pid = SANDBOX_PIDS.get(url)
    sandbox_before = cpu_seconds(sandbox_pid) if sandbox_pid else math.nan
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with StatsSampler(url, enabled=sample) as sampler, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(args, env=runner_env(url, journal, folder=work), cwd=work,
                                   stdout=subprocess.DEVNULL, stderr=err, text=True)
        trace = CpuTrace((process.pid, sandbox_pid), database=database_pid)
        try:
            code = process.wait(timeout)
        finally:
            trace.stop()
            if process.poll() is None:
                process.kill()
                process.wait()
        err.seek(0)
        stderr = err.read()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    sandbox_cpu = (cpu_seconds(sandbox_pid) - sandbox_before) if sandbox_pid else math.nan
    if journal_dir is not None and isinstance(journal, Path):  # not ours to leave behind
        for path in journal_dir.glob(journal.name + "*"):
            path.unlink()
    stats = sandbox_get(url, "stats")
    return RunFigures(code, wall, run_cpu, sandbox_cpu,
                      sandbox_get(url, "payouts")["data"],
                      stats["requests"], stats["max_requests_in_1s"], stderr, sampler, trace)


def exactly_once(payouts: list[dict[str, Any]], sheet_rows: list[dict[str, Any]]) -> str:
    """'' when every row was paid exactly once, else what is wrong."""
    paid = Counter(p["accountNumber"] for p in payouts)
    wanted = Counter(r["account_number"] for r in sheet_rows)
    if paid == wanted:
        return ""
    return f"duplicates {dict(paid - wanted)} missing {len(wanted - paid)}"


def whole_batch_rate(payouts: list[dict[str, Any]], concurrency: int) -> float:
    """Payouts after the first wave, per second from the first payout to the last."""
    stamps = created_seconds(payouts)
    first_wave = min(concurrency, len(stamps) - 1)
    span = stamps[-1] - stamps[0]
    return (len(stamps) - max(first_wave, 1)) / span if span > 0 else float("nan")


def steady_window(payouts: list[dict[str, Any]], trim: float = 0.1) -> tuple[float, float, int]:
    """(start, end, payouts made in between): from the payout after the first `trim` of
    them to the one before the last `trim`, as the service stamped them."""
    stamps = created_seconds(payouts)
    first, last = int(len(stamps) * trim), int(len(stamps) * (1 - trim)) - 1
    if last <= first:
        return math.nan, math.nan, 0
    return stamps[first], stamps[last], last - first


def steady_rate(payouts: list[dict[str, Any]], trim: float = 0.1) -> float:
    """Payouts per second between the first and the last `trim` of them."""
    start, end, made = steady_window(payouts, trim)
    span = end - start if made else 0.0
    return made / span if span > 0 else float("nan")


def steady_cpu_ms(figures: RunFigures) -> tuple[float, float, float]:
    """Milliseconds of CPU per payout of the run process, of the sandbox and of the
    journal's PostgreSQL cluster (NaN: none of ours) over the steady paying phase
    (`steady_window`): what limits the rate, without start-up and results."""
    start, end, made = steady_window(figures.payouts)
    if not made:
        return math.nan, math.nan, math.nan
    run, sandbox, database = figures.cpu.between(start, end)
    return run / made * 1000, sandbox / made * 1000, database / made * 1000


# client_alone's: rows/s, its CPU ms per payout, and over the steady phase its and the sandbox's
Figures = tuple[float, float, float, float]


def client_alone(url: str, n: int, concurrency: int) -> Figures:
    """Steady rows/s of the bare PayoutClient (quote, then payout; no journal, no engine) on
    the same sandbox: what this machine allows the engine at most; the milliseconds of
    this process's CPU it spent per payout (the client's own share of a run's CPU); and
    the same two CPU figures (this process, the sandbox) over its steady phase only."""
    import asyncio
    from decimal import Decimal

    from batchpay.provider.client import PayoutClient
    from tests.support.sandbox_calls import payout_request

    sandbox_pid = SANDBOX_PIDS.get(url)

    async def pay_all() -> list[tuple[float, float]]:
        done: list[tuple[float, float]] = []  # (when, this process's CPU so far)
        left = list(range(n))
        async with PayoutClient(url, "sandbox-key", concurrency=concurrency) as client:
            await client.wallets()

            async def worker() -> None:
                while left:
                    left.pop()
                    quote = await client.create_quote(
                        source_amount=Decimal(100000), source_currency="NGN",
                        source_country="NG")
                    await client.submit_payout(payout_request(quote.id))
                    done.append((time.perf_counter(), time.process_time()))

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done

    reset(url)
    cpu_before = time.process_time()
    trace = CpuTrace((os.getpid(), sandbox_pid))
    wall_at = time.time() - time.perf_counter()  # perf_counter to the trace's wall clock
    try:
        done = asyncio.run(pay_all())
    finally:
        trace.stop()
    cpu_ms = (time.process_time() - cpu_before) * 1000 / n
    first, last = int(n * 0.1), int(n * 0.9) - 1
    made = last - first
    rate = made / (done[last][0] - done[first][0])
    own = (done[last][1] - done[first][1]) * 1000 / made
    _, sandbox, _ = trace.between(wall_at + done[first][0], wall_at + done[last][0])
    return rate, cpu_ms, own, sandbox * 1000 / made


def latency_bound(concurrency: int, latency_ms: float) -> float | None:
    """Rows/s that `concurrency` workers can pay at most when every request waits
    `latency_ms` (two requests a row); None at latency 0, where no such bound exists."""
    return concurrency / (2 * latency_ms / 1000) if latency_ms > 0 else None


@dataclass
class Medians:
    """The median figures of the runs at the highest concurrency (NaN: none measured)."""

    rows_per_s: float = math.nan
    run_cpu_ms: float = math.nan
    sandbox_cpu_ms: float = math.nan
    paying_run_cpu_ms: float = math.nan  # over the steady paying phase only
    paying_sandbox_cpu_ms: float = math.nan
    paying_database_cpu_ms: float = math.nan  # the journal's own PostgreSQL cluster


@dataclass(frozen=True)
class Pair:
    """An engine run's steady rate and the bare client's figures (client_alone) measured
    right after it."""

    engine: float
    client: Figures

    @property
    def share(self) -> float:
        return self.engine / self.client[0]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def bench(url: str, work: Path, n: int | None, latency_ms: float, concurrencies: list[int],
          journal_dir: Path | None = None, repeat: int = 1,
          new_journal: Callable[[], str] | None = None,
          database_pid: int | None = None,
          alongside: Callable[[], Figures] | None = None) -> tuple[bool, Medians, list[Pair]]:
    """Each concurrency `repeat` times; returns (all paid exactly once, the medians at the
    last concurrency, and with `alongside` (the bare client) its run made right after each
    engine run at the last concurrency, paired with that run's rate)."""
    ok = True
    pairs: list[Pair] = []
    rates: list[float] = []
    run_cpu: list[float] = []
    sandbox_cpu: list[float] = []
    paying_cpu: list[tuple[float, float, float]] = []
    for concurrency in concurrencies:
        count = n or max(100, 50 * concurrency)
        sheet_rows = rows(count)
        sheet = write_sheet(work / f"sheet-{count}.xlsx", sheet_rows)
        bound = latency_bound(concurrency, latency_ms)
        rates, run_cpu, sandbox_cpu, paying_cpu = [], [], [], []
        for _ in range(repeat):
            figures = run_batch(url, sheet, work, "--wait", "0", "--concurrency",
                                str(concurrency), journal_dir=journal_dir,
                                new_journal=new_journal, database_pid=database_pid)
            wrong = exactly_once(figures.payouts, sheet_rows)
            if figures.exit_code != 0 or wrong:
                print(f"concurrency={concurrency} FAILED exit={figures.exit_code} {wrong}\n"
                      f"{figures.stderr[-2000:]}", flush=True)
                ok = False
                continue
            rate = steady_rate(figures.payouts)
            whole = whole_batch_rate(figures.payouts, concurrency)
            rates.append(rate)
            paid = len(figures.payouts)
            run_cpu.append(figures.run_cpu_seconds / paid * 1000)
            sandbox_cpu.append(figures.sandbox_cpu_seconds / paid * 1000)
            paying_cpu.append(steady_cpu_ms(figures))
            stamps = created_seconds(figures.payouts)
            gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
            others = {k: v for k, v in figures.requests.items()
                      if k not in ("POST /v1/quote 200", "POST /v2/payout 200")}
            against = (f"bound={bound:.1f} share={rate / bound:.1%} whole_batch={whole / bound:.1%}"
                       if bound else f"whole_batch_rows_per_s={whole:.1f}")
            print(f"concurrency={concurrency} rows={count} rows_per_s={rate:.1f} {against} "
                  f"paying_s={stamps[-1] - stamps[0]:.2f} "
                  f"wall_s={figures.wall_seconds:.2f} requests={sum(figures.requests.values())} "
                  f"run_cpu_ms={run_cpu[-1]:.2f} sandbox_cpu_ms={sandbox_cpu[-1]:.2f} "
                  f"paying_run_cpu_ms={paying_cpu[-1][0]:.2f} "
                  f"paying_sandbox_cpu_ms={paying_cpu[-1][1]:.2f} "
                  + (f"paying_database_cpu_ms={paying_cpu[-1][2]:.2f} "
                     if database_pid is not None else "") +
                  f"median_gap_ms={statistics.median(gaps) * 1000:.1f} "
                  f"max_gap_ms={max(gaps) * 1000:.1f} "
                  f"max_in_1s={figures.max_in_1s} load={load_average()}"
                  + (f" other_requests={others}" if others else ""), flush=True)
            if alongside is not None and concurrency == concurrencies[-1]:
                # right after the engine's run: the host's speed drifts from minute to
                # minute, and a share of two runs made far apart measures the drift
                pairs.append(Pair(rate, alongside()))
                print(f"  client alone right after: rows_per_s={pairs[-1].client[0]:.1f} "
                      f"client_cpu_ms={pairs[-1].client[1]:.2f} "
                      f"paying_sandbox_cpu_ms={pairs[-1].client[3]:.2f}; the engine reaches "
                      f"{pairs[-1].share:.1%} of it", flush=True)
        if repeat > 1 and rates:
            middle = statistics.median(rates)
            print(f"concurrency={concurrency} median of {len(rates)}: rows_per_s={middle:.1f}"
                  + (f" share={middle / bound:.1%} range={min(rates) / bound:.1%}-"
                     f"{max(rates) / bound:.1%}" if bound else
                     f" range={min(rates):.1f}-{max(rates):.1f}")
                  + f" run_cpu_ms={median(run_cpu):.2f} (range {min(run_cpu):.2f}-"
                  f"{max(run_cpu):.2f}) sandbox_cpu_ms={median(sandbox_cpu):.2f} "
                  f"paying_run_cpu_ms={median([c[0] for c in paying_cpu]):.2f} "
                  f"paying_sandbox_cpu_ms={median([c[1] for c in paying_cpu]):.2f}"
                  + (f" paying_database_cpu_ms={median([c[2] for c in paying_cpu]):.2f}"
                     if database_pid is not None else ""), flush=True)
    return ok, Medians(median(rates), median(run_cpu), median(sandbox_cpu),
                       median([c[0] for c in paying_cpu]), median([c[1] for c in paying_cpu]),
                       median([c[2] for c in paying_cpu])), pairs


def main(argv: list[str] | None = None) -> int:
    from batchpay.files import shown_address  # an address is printed without its password

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int,
                        help="rows per run (default 50 per worker, at least 100)")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", default="1,4,16",
                        help="comma-separated concurrencies (default 1,4,16)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per concurrency; with more than one, the median is printed "
                             "and held against the target")
    parser.add_argument("--journal-dir", type=Path,
                        help="where the runs' journals go (default: a temporary directory); "
                             "/dev/shm shows what the journal's fsyncs cost")
    stores = parser.add_mutually_exclusive_group()
    stores.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite",
                        help="the journal's store: a SQLite file (default) or PostgreSQL (a "
                             "cluster of its own in a temporary folder, fsync on)")
    stores.add_argument("--journal", metavar="postgresql://USER@HOST/DB",
                        help="the journals in an existing PostgreSQL database instead: a new "
                             "schema per run, dropped at the end (USER needs CREATE on DB)")
    parser.add_argument("--reference", action="store_true",
                        help="also time the bare client (no journal, no engine) at the highest "
                             "concurrency: the ceiling this machine sets, and the target's base")
    parser.add_argument("--short", action="store_true",
                        help="a few seconds: 32 rows at concurrency 4 and 16, no target")
    args = parser.parse_args(argv)
    if args.journal is not None:
        if not args.journal.startswith(("postgresql://", "postgres://")):
            parser.error("--journal takes a PostgreSQL address: postgresql://USER@HOST/DB")
        args.store = "postgresql"
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    n = args.rows
    if args.short:
        n, concurrencies = 32, [4, 16]
    where = (f"PostgreSQL at {shown_address(args.journal)} (a new schema per run)"
             if args.journal is not None
             else "PostgreSQL (a cluster of its own, fsync on)" if args.store == "postgresql"
             else args.journal_dir or "a temp dir")
    print(f"engine throughput: {n or '50 per worker'} rows, sandbox latency {args.latency_ms:g} ms, "
          + ("bound = concurrency / (2 x latency)" if args.latency_ms > 0
             else "no latency bound: held against the bare client")
          + f", journal in {where}, load {load_average()}",
          flush=True)
    top = concurrencies[-1]
    bound = latency_bound(top, args.latency_ms)
    reference = args.reference or bound is None
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-engine-")))
        new_journal: Callable[[], str] | None = None
        database_pid: int | None = None
        if args.journal is not None:
            from tests.support.postgres import Server

            try:
                server = Server(args.journal)
            except RuntimeError as exc:
                parser.error(f"--journal {shown_address(args.journal)}: {exc}")
            stack.callback(server.stop)
            new_journal = server.journal_url
        elif args.store == "postgresql":
            from tests.support.postgres import Cluster

            cluster = Cluster(fsync=True)
            stack.callback(cluster.stop)
            new_journal, database_pid = cluster.journal_url, cluster.pid()
        url = stack.enter_context(sandbox_process(
            "--latency-ms", f"{args.latency_ms:g}", "--settle-seconds", "0.2"))
        ok, medians, pairs = bench(
            url, tmp, n, args.latency_ms, concurrencies, args.journal_dir, args.repeat,
            new_journal, database_pid, alongside=(
                lambda: client_alone(url, n or max(100, 50 * top), top)) if reference else None)
        share_of_client = math.nan
        if pairs:
            figures = [pair.client for pair in pairs]
            shares = [pair.share for pair in pairs]
            share_of_client = statistics.median(shares)
            alone = statistics.median(f[0] for f in figures)
            print(f"client alone at concurrency {top} (median of {len(pairs)}, each run right "
                  f"after an engine run): rows_per_s={alone:.1f}"
                  + (f" share={alone / bound:.1%}" if bound else "")
                  + f" client_cpu_ms_per_payout={median([f[1] for f in figures]):.2f}"
                  + f" paying_client_cpu_ms={median([f[2] for f in figures]):.2f}"
                  + f" paying_sandbox_cpu_ms={median([f[3] for f in figures]):.2f}"
                  + f"; the engine reaches {share_of_client:.1%} of it (the median of the "
                  f"pairs' shares, range {min(shares):.1%}-{max(shares):.1%})", flush=True)
    print(f"at concurrency {top} (median of {args.repeat}): run_cpu_ms_per_payout="
          f"{medians.run_cpu_ms:.2f} sandbox_cpu_ms_per_payout={medians.sandbox_cpu_ms:.2f} "
          f"paying: run_cpu_ms={medians.paying_run_cpu_ms:.2f} "
          f"sandbox_cpu_ms={medians.paying_sandbox_cpu_ms:.2f} "
          + ("" if math.isnan(medians.paying_database_cpu_ms) else
             f"database_cpu_ms={medians.paying_database_cpu_ms:.2f} ")
          + f"load={load_average()}", flush=True)
    if not ok:
        return 1
    if args.short:
        return 0
    missed = []
    # with --reference (always at latency 0), the share of the bare client; else of the bound
    if reference:
        share, of, target = (share_of_client, "the bare client",
                             TARGET_CLIENT_SHARE[args.store])
    else:
        assert bound is not None
        share, of, target = medians.rows_per_s / bound, "the latency bound", TARGET_SHARE
    if not share >= target:  # NaN (nothing measured) misses the target too
        missed.append(f"{share:.1%} of {of} at concurrency {top} (target {target:.0%})")
    if not medians.run_cpu_ms <= TARGET_RUN_CPU_MS:
        missed.append(f"{medians.run_cpu_ms:.2f} ms of the run's CPU per payout "
                      f"(target {TARGET_RUN_CPU_MS:g} ms)")
    for line in missed:
        print(f"BELOW TARGET: {line}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
