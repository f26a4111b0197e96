"""Voucher workbooks in the columns of the Chinese ledgers' voucher import.

- `kingdee`: Kingdee K/3 WISE (V13 to V15) 标准凭证引入 from Excel, the layout its own
  标准凭证引出 writes (KIS 专业版 reads the same columns): one row per entry (分录), the
  voucher's fields repeated on each row.
- `yonyou`: Yonyou U8 (V10.1 to V13) 总账 凭证引入, Excel form of the fields its 总账工具
  reads: 制单日期 + 凭证类别字 + 凭证号 name one voucher, one row per entry.

An import's own template (exported from your 账套) is the last word on its columns: the
ones here are the documented ones, in their documented order; the rest may stay empty.
Text cells are written as text (never a formula), amounts as numbers with two decimals
(the base currency's), the original amounts with their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter

from batchpay.engine.vouchers import Voucher, VoucherLine
from batchpay.money import currency_exponent
from batchpay.settings.model import Books
from batchpay.sheet.xlsx import WORKBOOK_OPTIONS, Lines, StreamingWorksheet, amount_format

KINGDEE_COLUMNS = (
    "凭证日期", "会计年度", "会计期间", "凭证字", "凭证号", "科目代码", "科目名称", "币别代码",
    "币别名称", "原币金额", "借方", "贷方", "制单", "凭证摘要", "分录序号", "附件数",
    "汇率类型", "汇率", "参考信息", "业务日期")
YONYOU_COLUMNS = (
    "制单日期", "凭证类别字", "凭证号", "附单据数", "摘要", "科目编码", "借方金额", "贷方金额",
    "币种", "汇率", "外币借方金额", "外币贷方金额", "制单人", "票号", "发生日期")
CURRENCY_NAMES = {"CNY": "人民币", "USD": "美元", "EUR": "欧元", "GBP": "英镑", "HKD": "港币",
                  "JPY": "日元", "NGN": "尼日利亚奈拉", "KES": "肯尼亚先令", "GHS": "加纳塞地",
                  "ZAR": "南非兰特", "EGP": "埃及镑"}


def write_voucher_book(vouchers: Sequence[Voucher], books: Books, path: Path,
                       layout: str) -> None:
    workbook = xlsxwriter.Workbook(str(path), WORKBOOK_OPTIONS)
    # streamed plain rows (no column formats: they would send every cell the slow way)
    sheet = workbook.add_worksheet("凭证", worksheet_class=StreamingWorksheet)
    bold = workbook.add_format({"bold": True, "bg_color": "#D9D9D9", "bottom": 1})
    money: dict[int, Any] = {}

    def amount(value: Decimal, currency: str) -> tuple[Decimal, Any] | str:
        if not value:
            return ""
        places = currency_exponent(currency)
        if places not in money:
            money[places] = workbook.add_format({"num_format": amount_format(places)})
        return value, money[places]

    columns, row_of = ((KINGDEE_COLUMNS, _kingdee) if layout == "kingdee"
                       else (YONYOU_COLUMNS, _yonyou))
    lines = Lines(sheet)
    lines.write(*((name, bold) for name in columns))
    sheet.freeze_panes(1, 0)
    for voucher in vouchers:
        for index, line in enumerate(voucher.lines, start=1):
            lines.write(*row_of(voucher, index, line, books, amount))
    sheet.autofilter(0, 0, max(lines.row - 1, 1), len(columns) - 1)
    workbook.close()


Money = Callable[[Decimal, str], "tuple[Decimal, Any] | str"]


def _kingdee(v: Voucher, index: int, x: VoucherLine, books: Books, money: Money) -> list[Any]:
    base = books.base_currency
    return [v.day.isoformat(), v.day.year, v.day.month, books.voucher_word, v.number,
            x.account, "", x.currency, CURRENCY_NAMES.get(x.currency, x.currency),
            money(x.original, x.currency), money(x.debit, base) or 0,
            money(x.credit, base) or 0, books.preparer, x.summary, index, 0, "公司汇率",
            x.rate, " ".join(filter(None, (x.payout_ref, x.reference))),
            v.day.isoformat()]


def _yonyou(v: Voucher, index: int, x: VoucherLine, books: Books, money: Money) -> list[Any]:
    base = books.base_currency
    foreign = x.currency != base
    return [v.day.isoformat(), books.voucher_word, v.number, 0, x.summary, x.account,
            money(x.debit, base) or 0, money(x.credit, base) or 0,
            x.currency if foreign else "", x.rate if foreign else "",
            money(x.original, x.currency) if foreign and x.debit else "",
            money(x.original, x.currency) if foreign and x.credit else "",
            books.preparer, x.reference, v.day.isoformat()]
