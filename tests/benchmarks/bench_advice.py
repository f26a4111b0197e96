"""Benchmark `batchpay advise`: the remittance advices of one run of N payees, two paid rows
each, mailed to a local SMTP server (aiosmtpd) through the journal's outbox.

    python tests/benchmarks/bench_advice.py [--payees 20]
    python tests/benchmarks/bench_advice.py --short      # 3 payees, for CI

Builds a journal of one run whose rows are all COMPLETED (two per payee, each payee with a
Chinese name and a payee_email), then times `advise_run`: the font found, each advice's PDF
made (the CJK font cut down once to the characters used, then embedded in each) and
mailed. Prints (measured on a shared 2-core machine under load):
    payees=20 rows=40 advise_s=12.02 per_advice_s=0.60 mails=20 pdf_kb=29
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from batchpay.clock import stamp
from batchpay.engine.advice import advise_run
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.mail import SmtpMailer
from batchpay.settings.model import Mail

COLUMNS = ["payout_ref", "recipient_name", "account_number", "remark", "payee_email"]


class Count:
    def __init__(self) -> None:
        self.mails = 0
        self.biggest = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.mails += 1
        self.biggest = max(self.biggest, len(envelope.content))
        return "250 OK"


def build(path: Path, payees: int) -> None:
    rows = []
    with Journal(path) as j:
        j.bind_service("embedded")
        for p in range(payees):
            for k in range(2):
                n = 2 * p + k
                rows.append((n, f"A-{n:05d}", f"深圳市第{p}号电子有限公司", f"6222{p:015d}",
                             f"Invoice {n}", f"ap{p}@example.cn"))
        j.start_run(RunRecord("run-1", "run", stamp(), "advised.xlsx", "0" * 64, COLUMNS),
                    [RunRow(n, n + 2, ref, [ref, name, account, remark, email], "VALID")  # type: ignore[arg-type]
                     for n, ref, name, account, remark, email in rows])
        with j.transaction(durable=True):
            for n, ref, name, account, remark, _ in rows:
                details = json.dumps({"recipient_type": "INDIVIDUAL", "recipient_name": name,
                                      "account_number": account}, ensure_ascii=False)
                body = {"quoteId": f"q{n}", "remark": f"{remark} ref:{ref}", "recipient": {
                    "name": name, "account": {"accountNumber": account}}}
                attempt = j.record_intent(ref, "run-1", details, {"id": f"q{n}"}, body, 9e9,
                                          seq=n, amount="100000.00", target_amount="434.78",
                                          source_currency="NGN", target_currency="CNY")
                j.record_answer(attempt, "accepted", status="COMPLETED", run_id="run-1",
                                payout_id=f"p{n}", reference_number=f"REF{n:010d}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payees", type=int, default=20)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    payees = 3 if args.short else args.payees
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    inbox = Count()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "journal.sqlite3"
            build(path, payees)
            mail = Mail(host="127.0.0.1", port=port, security="none", sender="pay@acme.example")
            with Journal(path) as j:
                started = time.perf_counter()
                outcome = advise_run(j, "run-1", mail, SmtpMailer(mail, password=""))
                took = time.perf_counter() - started
    finally:
        controller.stop()
    print(f"payees={payees} rows={2 * payees} advise_s={took:.2f} "
          f"per_advice_s={took / max(1, payees):.2f} mails={inbox.mails} "
          f"pdf_kb={inbox.biggest // 1024}")
    return 0 if inbox.mails == payees and len(outcome.sent) == payees else 1


if __name__ == "__main__":
    sys.exit(main())
