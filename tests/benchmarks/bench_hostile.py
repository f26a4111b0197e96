"""Benchmark how crafted files are refused: `batchpay validate FILE` time and peak memory.

    python tests/benchmarks/bench_hostile.py            # the full-size files
    python tests/benchmarks/bench_hostile.py --short    # small forms, for CI

Each file is made in a temporary folder (in short mode with `max_cells = 100000`) and validated by a `batchpay validate` process
(start-up included); a tiny valid sheet is the baseline. Prints one line per file:
    file=xfd1048576 bytes=1,234 exit=2 s=0.41 peak_mb=98 said="Sheet 'Payouts' of ..."
Target: every crafted file refused with exit 2 in < 1 s and < 200 MB, one error line.
Exits 1 when a target is missed (short mode: when a file is not refused).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support import hostile_files as crafted  # noqa: E402
from tests.support.processes import private_user_folders  # noqa: E402
from tests.support.sheets import rows, write_sheet  # noqa: E402

TARGET_SECONDS = 1.0
TARGET_PEAK_MB = 200


def cases(short: bool) -> dict[str, Callable[[Path], Path]]:
    cells, megabytes = (200_000, 4) if short else (10_000_000, 49)
    return {
        "xfd1048576": lambda p: crafted.one_far_cell(p, "XFD1048576", 1048576),
        "zz200000": lambda p: crafted.one_far_cell(p, "ZZ200000", 200000),
        "declared_dimension": crafted.declared_only,
        f"cells_{cells}": lambda p: crafted.many_cells(p, rows=cells // 10, columns=10),
        "unreferenced_300": lambda p: crafted.unreferenced_row(p, 300),
        f"csv_lines_{megabytes}mb": lambda p: crafted.csv_of_characters(
            p.with_suffix(".csv"), megabytes, "\n"),
        f"csv_fields_{megabytes}mb": lambda p: crafted.csv_of_characters(
            p.with_suffix(".csv"), megabytes, ","),
    }


def validate(path: Path, folder: Path, extra: list[str]) -> tuple[int, float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "COLUMNS": "200",
           **private_user_folders(folder)}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "batchpay", "validate", str(path),
                              "--no-bank-check", *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True,
                             cwd=folder)
    assert child.stderr is not None
    said = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    errors = [line for line in said.splitlines() if line.startswith("Error: ")]
    return (os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024,
            " | ".join(errors))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="small files, for CI")
    args = parser.parse_args()
    missed = wrong = False
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.short:  # the cell bound scaled down with the files (read from the folder)
            (folder / "batchpay.toml").write_text("max_cells = 100000\n")
        baseline = write_sheet(folder / "baseline.xlsx", rows(3))
        code, seconds, peak, _ = validate(baseline, folder, [])
        print(f"file=baseline bytes={baseline.stat().st_size:,} exit={code} s={seconds:.2f} "
              f"peak_mb={peak:.0f}")
        for name, make in cases(args.short).items():
            path = make(folder / f"{name}.xlsx")
            code, seconds, peak, said = validate(path, folder, [])
            print(f"file={name} bytes={path.stat().st_size:,} exit={code} s={seconds:.2f} "
                  f"peak_mb={peak:.0f} said={said[:170]!r}")
            refused = code == 2 and said.count("Error: ") == 1
            # a file not refused fails in every mode; time and memory only at full size
            if not refused:
                wrong = True
            if seconds > TARGET_SECONDS or peak > TARGET_PEAK_MB:
                missed = True
            path.unlink()
    if wrong:
        print("target missed: a crafted file was not refused with exit 2 and one error line")
    if missed:
        print(f"target missed: exit 2, one line, < {TARGET_SECONDS} s, < {TARGET_PEAK_MB} MB")
    return 1 if wrong or (missed and not args.short) else 0


if __name__ == "__main__":
    raise SystemExit(main())
