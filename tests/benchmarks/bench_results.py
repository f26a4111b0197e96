"""Benchmark: write a results workbook of 100,000 realistic rows; print seconds and peak memory.

    python tests/benchmarks/bench_results.py            # 100,000 rows, targets 12 s / 300 MB
    python tests/benchmarks/bench_results.py --rows 2000  # short mode for CI

The writer runs in a child process, so the peak resident memory reported (ru_maxrss) is
that of building the rows and writing the workbook, not of this script. Exit 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

TARGET_SECONDS = 12.0
TARGET_MB = 300.0

INPUT_COLUMNS = (
    "payout_ref", "recipient_type", "recipient_name", "company_name", "company_id",
    "ic_number", "account_number", "bank_name", "bank_city", "sort_code", "amount",
    "source_currency", "reason", "remark", "item_category", "currency", "country",
    "payment_channel", "department", "approved_by",
)
_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗"
_GIVEN = "伟芳娜秀英敏静丽强磊军洋勇艳杰娟涛明超秀兰霞平刚桂英"
_COMPANIES = ("深圳市华强电子有限公司", "上海浦江精密机械有限公司", "广州天河纺织品贸易有限公司",
              "杭州西湖数码科技有限公司", "北京中关村软件有限公司", "宁波港通物流有限公司")
_BANKS = ("中国工商银行", "中国建设银行", "中国银行", "中国农业银行", "交通银行", "招商银行",
          "中国邮政储蓄银行", "中信银行", "兴业银行", "平安银行")
_CITIES = ("深圳", "上海", "广州", "杭州", "北京", "宁波", "苏州", "东莞")
_STATUSES = ("COMPLETED",) * 17 + ("FAILED", "PENDING", "REJECTED")
# Run as a script from anywhere in a checkout: the package is two levels up.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def make_rows(count: int, seed: int = 7) -> list:
    from batchpay.sheet.outcomes import ResultRow

    rnd = random.Random(seed)
    rows = []
    for i in range(count):
        business = rnd.random() < 0.6
        name = rnd.choice(_COMPANIES) if business else \
            rnd.choice(_SURNAMES) + "".join(rnd.choices(_GIVEN, k=2))
        amount = Decimal(rnd.randrange(5_000_000, 500_000_000)) / 100
        fee = (amount * Decimal("0.005")).quantize(Decimal("0.01"))
        status = rnd.choice(_STATUSES)
        sent = status != "REJECTED"
        inputs = (
            f"NOV26-{i + 1:06d}", "BUSINESS" if business else "INDIVIDUAL", name,
            name if business else None, "91440300MA5DABCD1X" if business else None,
            None if business else "110105199001011234",
            "".join(rnd.choices("0123456789", k=19)), rnd.choice(_BANKS),
            rnd.choice(_CITIES), None, amount, "NGN",
            f"Invoice INV-2026-11-{i % 1000:03d} electronic components", None,
            "ELECTRONICS", "CNY", "CN", "BANK_TRANSFER", "采购部", "李经理",
        )
        rows.append(ResultRow(
            row=i + 2, inputs=inputs, status=status,
            error="" if sent else "Invalid Bank Sortcode",
            reference_number=f"REF{i:010d}" if sent else "",
            payout_id=f"5f0c7a2e-0000-4000-8000-{i:012d}" if sent else "",
            quote_id=f"9b1d3c4e-0000-4000-8000-{i:012d}",
            rate=Decimal("230.15"), fee=fee,
            delivered=(amount / Decimal("230.15")).quantize(Decimal("0.01")),
            total_debit=amount + fee, updated_at="2026-11-30T10:15:02Z",
            amount=amount, source_currency="NGN", target_currency="CNY",
        ))
    return rows


def child(rows: int, out: Path) -> None:
    from batchpay.sheet.results import write_results

    built = make_rows(rows)
    started, cpu_started = time.perf_counter(), time.process_time()
    summary = write_results(out, input_columns=INPUT_COLUMNS, rows=built,
                            run_info=[("run_id", "bench")])
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert summary.rows == rows and summary.reconciles
    print(f"{seconds:.3f} {cpu:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rows, args.child)
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench-results.xlsx"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--rows", str(args.rows),
                               "--child", str(out)], capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 2
        write_seconds, cpu_seconds = map(float, done.stdout.split())
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        size_mb = out.stat().st_size / 1e6
    ok = write_seconds <= TARGET_SECONDS and peak_mb <= TARGET_MB
    print(f"rows={args.rows} write_seconds={write_seconds:.2f} (target {TARGET_SECONDS:g}) "
          f"cpu_seconds={cpu_seconds:.2f} peak_rss_mb={peak_mb:.0f} (target {TARGET_MB:g}) process_seconds={wall:.2f} "
          f"file_mb={size_mb:.1f} {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
