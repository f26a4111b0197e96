"""`batchpay export`: a closed period in the format a ledger imports.

One function for the command: the period is closed from the journal (the statement's
model, chain checked first), then written in one format. Formats that describe one bank
account (OFX, Xero's CSV) write one file per wallet currency: the name given, or with
`-<CUR>` before the suffix when the period moved more than one currency. Every file is
written to a hidden partial file first and replaces its target in one step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from batchpay.days import Period
from batchpay.engine.books import ClosedPeriod, close_period
from batchpay.engine.books_camt import CAMT_VERSION, write_camt053
from batchpay.engine.books_text import write_journal, write_ofx, write_xero
from batchpay.engine.vouchers import Voucher, build_vouchers
from batchpay.engine.vouchers_book import write_voucher_book
from batchpay.files import check_output, replaced_atomically
from batchpay.journal.store import Journal
from batchpay.settings.model import Books

SUFFIXES = {"ofx": ".ofx", "xero": ".csv", "camt053": ".xml", "kingdee": ".xlsx",
            "yonyou": ".xlsx", "journal": ".csv"}
FORMATS = tuple(SUFFIXES)
PER_CURRENCY = ("ofx", "xero")
FORMAT_NAMES = {"ofx": "OFX 2.2 bank statement", "xero": "Xero bank statement CSV",
                "camt053": f"ISO 20022 {CAMT_VERSION}", "kingdee": "Kingdee K/3 WISE vouchers",
                "yonyou": "Yonyou U8 vouchers", "journal": "double-entry journal CSV"}


@dataclass
class Exported:
    closed: ClosedPeriod
    format: str
    outputs: list[Path] = field(default_factory=list)
    vouchers: list[Voucher] = field(default_factory=list)

    @property
    def movements(self) -> int:
        return sum(len(w.movements) for w in self.closed.wallets.values())


def default_export_path(fmt: str, period: Period) -> Path:
    return Path(f"books-{fmt}-{period.start.isoformat()}-{period.end.isoformat()}"
                f"{SUFFIXES[fmt]}")


def export_books(journal: Journal, period: Period, fmt: str, out: Path | None, books: Books,
                 *, overwrite: bool = False) -> Exported:
    """Close `period` and write it as `fmt`; the outputs are checked (never over an existing
    file without `overwrite`) before any is written."""
    target = out or default_export_path(fmt, period)
    closed = close_period(journal, period)
    done = Exported(closed, fmt)
    if fmt in PER_CURRENCY:
        many = len(closed.wallets) > 1
        plan = [(target.with_name(f"{target.stem}-{c}{target.suffix}") if many else target, c)
                for c in closed.wallets]
    elif fmt == "camt053" and not closed.wallets:
        plan = []  # a camt.053 message holds at least one statement: nothing moved, no file
    else:
        plan = [(target, "")]
    for path, _ in plan:
        check_output(path, overwrite=overwrite)
    if fmt in ("kingdee", "yonyou"):
        done.vouchers = build_vouchers(closed, books)
    for path, currency in plan:
        with replaced_atomically(path) as partial:
            _write(done, books, partial, currency)
        done.outputs.append(path)
    return done


def _write(done: Exported, books: Books, path: Path, currency: str) -> None:
    closed, fmt = done.closed, done.format
    if fmt in ("kingdee", "yonyou"):
        write_voucher_book(done.vouchers, books, path, fmt)
        return
    # CSV for Excel gets a byte order mark (Chinese names read right); Xero's importer and
    # the XML formats get plain UTF-8
    encoding = "utf-8-sig" if fmt == "journal" else "utf-8"
    with open(path, "w", encoding=encoding, newline="") as out:
        if fmt == "ofx":
            write_ofx(closed, closed.wallets[currency], out)
        elif fmt == "xero":
            write_xero(closed, closed.wallets[currency], out)
        elif fmt == "camt053":
            write_camt053(closed, out)
        else:
            write_journal(closed, books, out)
