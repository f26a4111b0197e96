"""A held payee's read-back dates the payout "before" on the day of the `time_zone`
setting, as every other page does: a payout made at 17:30 UTC was made the next day in
Shanghai, one made at 03:00 UTC the day before in New York. The register is built here
from its records, at moments either side of a zone's midnight."""

from __future__ import annotations

import pytest

from batchpay.console.read_back import _held_payee
from batchpay.controls.payee_keys import fold
from batchpay.controls.payee_records import Paid, Payee
from batchpay.controls.payee_register import Register
from batchpay.journal.records import stored_status

PAYEE = "91440300MA0000002P"
SHOWN = {"recipient_name": "深圳市测试2电子有限公司", "account_number": "6222020000011112222",
         "bank_name": "中国银行", "bank_city": "深圳", "sort_code": ""}


def register_paid_at(at: str) -> Register:
    """A register of one payee, paid once, at `at` (a time as the journal stores it)."""
    paid = Paid("NOV26-001", stored_status("COMPLETED"), "20261127-173000-ab12", at, SHOWN,
                SHOWN["account_number"], "100000.00", "NGN", PAYEE)
    payee = Payee(PAYEE, keys={("company", fold(PAYEE))}, payouts=[paid])
    return Register([payee], {("company", fold(PAYEE)): payee})


@pytest.mark.parametrize(("at", "zone", "day"), [
    ("2026-11-27T17:30:00.000000Z", "Asia/Shanghai", "2026-11-28"),  # 01:30 there
    ("2026-11-27T15:59:59.999999Z", "Asia/Shanghai", "2026-11-27"),  # 23:59:59 there
    ("2026-11-27T16:00:00.000000Z", "Asia/Shanghai", "2026-11-28"),  # its midnight
    ("2026-11-28T03:00:00.000000Z", "America/New_York", "2026-11-27"),  # 22:00 there
    ("2026-11-27T23:59:59.000000Z", "UTC", "2026-11-27"),
    ("2026-11-27T17:30:00+00:00", "Asia/Shanghai", "2026-11-28"),  # a form older records hold
])
def test_the_payout_before_is_dated_on_the_zones_day(at: str, zone: str, day: str) -> None:
    held = {"payee": PAYEE, "account": "6222…2222", "confirmed": []}
    shown = _held_payee(held, register_paid_at(at), {}, True, zone)
    assert shown.last_paid == f"{day}, NOV26-001"
    assert [d.before for d in shown.details if d.label == "name"] == [SHOWN["recipient_name"]]
