"""Build the sample payout sheets in samples/ (run from the repository root):

    python tests/support/make_samples.py [OUT_DIR]

- november-payouts.xlsx: a clean November 2026 payout sheet (suppliers and staff in China,
  paid from an NGN wallet; three suppliers invoiced in CNY, paid by target_amount) that
  validates without a single error and, on the sandbox, ends with every row COMPLETED.
- november-payouts-mistakes.xlsx: a second batch to the same people (other amounts) with
  the mistakes operators make, for `batchpay validate`.
- november-payouts-corrected.xlsx: that sheet after the operator corrected every mistake
  (the repeated payout_ref became NOV26-M06), for the fix-and-run-again walkthrough.

Every value is fixed here (no randomness), so the files are the same on every run; the
check characters of the company codes and ID numbers are computed, never typed. The
people and companies are invented.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from a checkout

from batchpay.sheet.china_ids import resident_id_check_digit, uscc_check_char  # noqa: E402
from batchpay.sheet.columns import COLUMN_NAMES, COLUMNS_BY_NAME  # noqa: E402

MAIN_SAMPLE = "november-payouts.xlsx"
MISTAKES_SAMPLE = "november-payouts-mistakes.xlsx"
CORRECTED_SAMPLE = "november-payouts-corrected.xlsx"
CREATED = dt.datetime(2026, 11, 25, 9, 0, 0)  # fixed: the same bytes on every run

# Debit card BINs and lengths of the banks (the sandbox's CN bank list has these names).
CARD_PREFIX = {
    "中国工商银行": ("622202", 19), "中国建设银行": ("621700", 19), "中国银行": ("621661", 19),
    "中国农业银行": ("622848", 19), "交通银行": ("622260", 19), "招商银行": ("621483", 16),
    "中国邮政储蓄银行": ("621799", 19), "中信银行": ("621768", 16), "兴业银行": ("622909", 18),
    "平安银行": ("623058", 19), "中国民生银行": ("622622", 16), "上海浦东发展银行": ("621792", 16),
}

# (company, administrative division code of its registration, bank, city, NGN amount, invoice, goods)
SUPPLIERS = [
    ("深圳市华强电子有限公司", "440304", "中国工商银行", "深圳", "2875400.00", "014", "electronic components"),
    ("东莞市长安五金制品有限公司", "441900", "中国建设银行", "东莞", "1268950.50", "015", "hardware fittings"),
    ("广州市白云美妆用品有限公司", "440111", "招商银行", "广州", "846300.00", "016", "cosmetics packaging"),
    ("义乌市恒达小商品进出口有限公司", "330782", "中国农业银行", "义乌", "412780.25", "017", "household goods"),
    ("上海浦江精密机械有限公司", "310115", "交通银行", "上海", "4650000.00", "018", "CNC machine parts"),
    ("杭州西湖丝绸有限公司", "330106", "中国银行", "杭州", "735120.00", "019", "silk fabric"),
    ("宁波北仑港通物流有限公司", "330206", "中信银行", "宁波", "389500.00", "020", "freight and port handling"),
    ("佛山市顺德家电配件有限公司", "440606", "兴业银行", "佛山", "1932640.75", "021", "appliance spare parts"),
    ("苏州工业园区晶辉光电科技有限公司", "320571", "平安银行", "苏州", "3120880.00", "022", "LED modules"),
    ("北京中关村云图软件技术有限公司", "110108", "中国建设银行", "北京", "560000.00", "023", "software licences"),
    ("厦门鹭岛纺织品有限公司", "350206", "中国工商银行", "厦门", "1045210.40", "024", "cotton textiles"),
    ("青岛海湾精细化工有限公司", "370211", "中国邮政储蓄银行", "青岛", "2214000.00", "025", "industrial coatings"),
    ("温州市瓯海鞋业有限公司", "330304", "中国民生银行", "温州", "678430.60", "026", "leather shoes"),
    ("中山市古镇华耀灯饰有限公司", "442000", "上海浦东发展银行", "中山", "954875.00", "027", "lighting fixtures"),
    ("泉州市晋江鸿星服装有限公司", "350582", "中国银行", "泉州", "1587300.00", "028", "garments"),
]

# (name, division code of the ID's issue, birth date, sequence, bank, city, NGN amount, reason)
STAFF = [
    ("王伟", "440304", "19880314", "213", "招商银行", "深圳", "186400.00", "Salary November 2026"),
    ("李娜", "310104", "19920708", "146", "中国工商银行", "上海", "172850.00", "Salary November 2026"),
    ("张敏", "440106", "19950122", "328", "中国建设银行", "广州", "158300.00", "Salary November 2026"),
    ("刘洋", "330106", "19861105", "451", "中国银行", "杭州", "214760.00", "Salary November 2026"),
    ("陈静", "110105", "19900930", "262", "交通银行", "北京", "169900.00", "Salary November 2026"),
    ("杨磊", "430102", "19830617", "015", "中国农业银行", "深圳", "96500.00",
     "Sales commission November 2026"),
    ("黄丽", "420106", "19970403", "584", "兴业银行", "广州", "68250.00",
     "Translation services November 2026"),
    ("赵强", "510107", "19791221", "377", "平安银行", "上海", "243100.00", "Salary November 2026"),
    ("周芳", "350203", "19940811", "026", "中国邮政储蓄银行", "厦门", "57800.00",
     "Expense reimbursement trade fair Canton"),
    ("吴俊杰", "320505", "19891027", "193", "中信银行", "苏州", "131420.00",
     "Quality inspection services November 2026"),
]


# suppliers (by serial) whose invoice is in CNY: the row gives target_amount, not amount
INVOICES_CNY = {10: "2436.50", 12: "9627.38", 14: "4150.00"}


def uscc(division: str, serial: int) -> str:
    """An 18-character unified social credit code: 9 (market regulator), 1 (company),
    the division code, a 9-character organisation code with its own GB 11714 check
    character, then the GB 32100 check character."""
    body = f"MA{serial:06d}"[:8]
    values = [int(ch) if ch.isdigit() else ord(ch) - 55 for ch in body]
    check = 11 - sum(v * w for v, w in zip(values, (3, 7, 9, 10, 5, 8, 4, 2), strict=True)) % 11
    organisation = body + {10: "X", 11: "0"}.get(check, str(check))
    first17 = f"91{division}{organisation}"
    return first17 + uscc_check_char(first17)


def resident_id(division: str, birth: str, sequence: str) -> str:
    first17 = f"{division}{birth}{sequence}"
    return first17 + resident_id_check_digit(first17)


def account_number(bank: str, serial: int) -> str:
    """A debit card number of the bank's length, with its Luhn check digit."""
    prefix, length = CARD_PREFIX[bank]
    body = prefix + f"{serial * 7919 + 1234567:0{length - len(prefix) - 1}d}"[-(length - len(prefix) - 1):]
    total = 0
    for position, digit in enumerate(reversed(body)):
        value = int(digit) * (2 if position % 2 == 0 else 1)
        total += value - 9 if value > 9 else value
    return body + str((10 - total % 10) % 10)


def main_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for serial, (company, division, bank, city, amount, invoice, goods) in enumerate(SUPPLIERS, 1):
        rows.append({
            "recipient_type": "BUSINESS", "recipient_name": company, "company_name": company,
            "company_id": uscc(division, 521000 + serial * 37), "account_number":
            account_number(bank, serial), "bank_name": bank, "bank_city": city,
            "reason": f"Invoice INV-2026-11-{invoice} {goods}",
            "remark": f"PO-2026-{4100 + serial}",
            # some suppliers invoiced in CNY: paid exactly what the invoice says
            **({"target_amount": Decimal(INVOICES_CNY[serial])} if serial in INVOICES_CNY
               else {"amount": Decimal(amount)}),
        })
    for serial, (name, division, birth, sequence, bank, city, amount, reason) in enumerate(STAFF, 1):
        rows.append({
            "recipient_type": "INDIVIDUAL", "recipient_name": name,
            "ic_number": resident_id(division, birth, sequence),
            "account_number": account_number(bank, 100 + serial), "bank_name": bank,
            "bank_city": city, "amount": Decimal(amount), "reason": reason,
        })
    # Suppliers and staff mixed as in a real sheet: two suppliers, then one of the staff.
    businesses, people = rows[:len(SUPPLIERS)], rows[len(SUPPLIERS):]
    order: list[dict[str, Any]] = []
    while businesses or people:
        order += businesses[:2] + people[:1]
        del businesses[:2], people[:1]
    for number, row in enumerate(order, 1):
        row["payout_ref"] = f"NOV26-{number:03d}"
        row.update(source_currency="NGN", currency="CNY", country="CN",
                   payment_channel="BANK_TRANSFER")
    return order


class Numeric(int):
    """An account number the operator typed as a number: the cell is numeric."""


def second_batch_rows() -> list[dict[str, Any]]:
    """The people of the main sheet with the amounts of another, later batch (the same
    amounts again under new payout_refs would be held as possible duplicate payments)."""
    rows = main_rows()
    for row in rows:
        if row.get("amount") is not None:
            row["amount"] = row["amount"] + Decimal("1250.00")
    return rows


def mistake_rows() -> list[dict[str, Any]]:
    rows = second_batch_rows()
    businesses = [r for r in rows if r["recipient_type"] == "BUSINESS"]
    people = [r for r in rows if r["recipient_type"] == "INDIVIDUAL"]

    def like(row: dict[str, Any], ref: str, **changes: Any) -> dict[str, Any]:
        return dict(row, payout_ref=ref, **changes)

    def other_last(code: str, instead: str) -> str:
        return code[:17] + (instead if code[17] != instead else "2")

    b, p = businesses, people
    return [
        like(b[0], "NOV26-M01"),  # valid
        # 19 digits typed as a number: the spreadsheet has already lost the last digits
        like(b[1], "NOV26-M02", account_number=Numeric(int(b[1]["account_number"]))),
        like(b[2], "NOV26-M03", company_id=other_last(b[2]["company_id"], "A")),
        like(p[0], "NOV26-M04", ic_number=other_last(p[0]["ic_number"], "1")),
        like(p[1], "NOV26-M05"),  # valid on its own ...
        like(b[3], "NOV26-M05"),  # ... but this row reuses its payout_ref
        like(b[4], "NOV26-M07", company_id=None),  # BUSINESS without company_id
        like(b[5], "NOV26-M08", amount=b[5]["amount"] + Decimal("0.005")),  # 3 decimals
        like(p[2], "NOV26-M09", source_currency="NGX"),  # not a currency
        like(b[6], "NOV26-M10", bank_name=None),  # bank missing
        # a letter O typed for a zero
        like(p[3], "NOV26-M11", account_number=p[3]["account_number"][:8] + "O"
             + p[3]["account_number"][9:]),
        like(b[7], "NOV26-M12"),  # valid
    ]


def corrected_rows() -> list[dict[str, Any]]:
    """The mistakes sheet after the operator fixed it: each row as it should have been."""
    by_ref = {r["payout_ref"]: r for r in second_batch_rows()}
    originals = {"NOV26-M01": 0, "NOV26-M02": 1, "NOV26-M03": 2, "NOV26-M07": 4,
                 "NOV26-M08": 5, "NOV26-M10": 6, "NOV26-M12": 7}
    businesses = [r for r in by_ref.values() if r["recipient_type"] == "BUSINESS"]
    people = [r for r in by_ref.values() if r["recipient_type"] == "INDIVIDUAL"]
    fixed = [dict(businesses[i], payout_ref=ref) for ref, i in originals.items()]
    fixed += [dict(people[0], payout_ref="NOV26-M04"), dict(people[1], payout_ref="NOV26-M05"),
              dict(businesses[3], payout_ref="NOV26-M06"),
              dict(people[2], payout_ref="NOV26-M09"), dict(people[3], payout_ref="NOV26-M11")]
    return sorted(fixed, key=lambda r: r["payout_ref"])


def write_sample(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A sheet as a careful operator keeps it: identifier columns formatted as Text."""
    workbook = xlsxwriter.Workbook(str(path), {"strings_to_numbers": False,
                                               "strings_to_formulas": False,
                                               "strings_to_urls": False})
    workbook.set_properties({"title": "Payouts November 2026", "created": CREATED})
    header = workbook.add_format({"bold": True, "bg_color": "#D9D9D9", "bottom": 1})
    text = workbook.add_format({"num_format": "@"})
    money = workbook.add_format({"num_format": "#,##0.00"})
    mangled = workbook.add_format({"num_format": "0"})  # how Excel shows a long typed number
    sheet = workbook.add_worksheet("Payouts")
    widths = {"recipient_name": 34, "company_name": 34, "reason": 44, "company_id": 21,
              "ic_number": 21, "account_number": 22, "bank_name": 18, "amount": 14,
              "target_amount": 14}
    for col, name in enumerate(COLUMN_NAMES):
        identifier = COLUMNS_BY_NAME[name].kind == "id"
        sheet.set_column(col, col, widths.get(name, max(len(name) + 2, 10)),
                         text if identifier else None)
        sheet.write_string(0, col, name, header)
    for r, values in enumerate(rows, start=1):
        for col, name in enumerate(COLUMN_NAMES):
            value = values.get(name)
            if value is None:
                continue
            if isinstance(value, Numeric):
                sheet.write_number(r, col, float(value), mangled)
            elif isinstance(value, Decimal):
                sheet.write_number(r, col, float(value), money)
            elif COLUMNS_BY_NAME[name].kind == "id":
                sheet.write_string(r, col, value, text)
            else:
                sheet.write_string(r, col, value)
    sheet.freeze_panes(1, 0)
    workbook.close()
    return path


def make_samples(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_sample(out_dir / MAIN_SAMPLE, main_rows()),
            write_sample(out_dir / MISTAKES_SAMPLE, mistake_rows()),
            write_sample(out_dir / CORRECTED_SAMPLE, corrected_rows())]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "samples"
    for written in make_samples(target):
        print(written)
