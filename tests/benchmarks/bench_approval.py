"""Benchmark an approved plan: its size, signing it, and checking it before a run.

    python tests/benchmarks/bench_approval.py [--rows 10000]
    python tests/benchmarks/bench_approval.py --short      # 500 rows, for CI

Builds a plan of N rows (every input value of a realistic row), signs it as `plan` (the
maker) and `approve` do, then times what `approve` and `run --plan` do before their first
request: read the file (its bytes must be its canonical JSON, every field of its form, every
row valid and the stated totals the rows'), verify the two signatures, and rebuild the rows
to pay from it. Prints:
    rows=10000 plan_mb=4.0 sign_s=0.03 read_s=0.90 verify_s=0.02 rebuild_s=0.05
"""

from __future__ import annotations

import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from batchpay import sshsig  # noqa: E402
from batchpay.controls.approval import MAKER_NAMESPACE, NAMESPACE, Maker, read_plan
from batchpay.controls.plan_file import PlanRow, build_plan, canonical_bytes
from batchpay.settings.model import Settings
from batchpay.sheet.read import Sheet  # noqa: E402
from tests.support.processes import benchmark_rows  # noqa: E402
from tests.support.sheets import HEADERS, rows  # noqa: E402


def main() -> int:
    n = benchmark_rows(__doc__ or "")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nov.plan.json"
        planned = [PlanRow(i + 1, str(v["payout_ref"]),
                           {k: str(x) for k, x in v.items() if x is not None}, "NGN",
                           str(v["amount"]), str(v["amount"] + 100))
                   for i, v in enumerate(rows(n))]
        sheet = Sheet(path=Path("nov.xlsx"), sheet_name="Payouts", columns=list(HEADERS),
                      headers=list(HEADERS), rows=[], sha256="0" * 64)
        settings = Settings(journal=Path(tmp) / "journal.sqlite3")
        key = Ed25519PrivateKey.generate()
        maker = Maker(key, sshsig.fingerprint(key.public_key()), ["Maya"])
        document = build_plan(settings, sheet, planned, run_id="20261124-120000-abcd",
                              chain_head="0" * 64, maker=maker, hours=72,
                              tolerance=Decimal("0.02"), source_currency=None)
        data = canonical_bytes(document)
        path.write_bytes(data)
        approver = Ed25519PrivateKey.generate()
        started = time.perf_counter()
        made = sshsig.sign(key, path.read_bytes(), MAKER_NAMESPACE)
        signature = sshsig.sign(approver, path.read_bytes(), NAMESPACE)
        sign_s = time.perf_counter() - started
        started = time.perf_counter()
        checked = read_plan(path)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        sshsig.verify(made, checked.data, MAKER_NAMESPACE)
        signer = sshsig.verify(signature, checked.data, NAMESPACE)
        verify_s = time.perf_counter() - started
        started = time.perf_counter()
        rebuilt = checked.sheet()
        rebuild_s = time.perf_counter() - started
    ok = (len(rebuilt.rows) == n
          and sshsig.fingerprint(signer) == sshsig.fingerprint(approver.public_key()))
    print(f"rows={n} plan_mb={len(data) / 2**20:.1f} sign_s={sign_s:.2f} read_s={read_s:.2f} "
          f"verify_s={verify_s:.2f} rebuild_s={rebuild_s:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
