"""The text exports of a closed period: OFX 2.2, Xero's bank statement CSV, and a plain
double-entry journal CSV.

- `ofx`: one OFX 2.2 bank statement (XML) per wallet currency, what Xero and QuickBooks
  import as a bank feed: a transaction per payout, per fee and per refund, each with a FITID
  that the same payout keeps in every export (so a second import skips what it has), the
  ledger balance the wallet after the period's last run.
- `xero`: Xero's bank statement CSV (Date, Amount, Payee, Description, Reference), one file
  per wallet currency (a Xero bank account has one currency); dates as DD/MM/YYYY, the
  service's reference number as Reference.
- `journal`: every movement as balanced double entry in its own currency (date, account,
  debit, credit, currency, memo, payout_ref, reference), accounts from `[books]`.

CSV text that a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) is written
with a leading apostrophe; amounts are the quote's exact digits.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import TextIO
from xml.sax.saxutils import escape

from batchpay import clock
from batchpay.engine.books import (
    FEE,
    PAYOUT,
    ClosedPeriod,
    Movement,
    WalletBook,
    as_text,
    plain,
)
from batchpay.settings.model import Books

XERO_COLUMNS = ("Date", "Amount", "Payee", "Description", "Reference")
JOURNAL_COLUMNS = ("date", "account", "debit", "credit", "currency", "memo", "payout_ref",
                   "reference")
OFX_NAME_LIMIT = 32  # OFX 2.2: NAME is at most 32 characters
BANK_ID = "batchpay"  # the wallet has no bank routing number; OFX wants one


# ------------------------------------------------------------------------------- OFX


def write_ofx(closed: ClosedPeriod, book: WalletBook, out: TextIO) -> None:
    """One wallet currency's statement as OFX 2.2 (the XML form, with its processing
    instruction header)."""
    period = closed.period
    now = _ofx_time(clock.now().astimezone(period.tz))
    closing = book.closing if book.closing is not None else book.total
    lines = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        '<?OFX OFXHEADER="200" VERSION="220" SECURITY="NONE" OLDFILEUID="NONE" '
        'NEWFILEUID="NONE"?>',
        "<OFX>",
        "<SIGNONMSGSRSV1><SONRS><STATUS><CODE>0</CODE><SEVERITY>INFO</SEVERITY></STATUS>"
        f"<DTSERVER>{now}</DTSERVER><LANGUAGE>ENG</LANGUAGE></SONRS></SIGNONMSGSRSV1>",
        "<BANKMSGSRSV1><STMTTRNRS>",
        f"<TRNUID>{_x(closed.statement.chain_head[:32] or '0')}</TRNUID>",
        "<STATUS><CODE>0</CODE><SEVERITY>INFO</SEVERITY></STATUS>",
        f"<STMTRS><CURDEF>{_x(book.currency)}</CURDEF>",
        f"<BANKACCTFROM><BANKID>{BANK_ID}</BANKID><ACCTID>WALLET-{_x(book.currency)}</ACCTID>"
        "<ACCTTYPE>CHECKING</ACCTTYPE></BANKACCTFROM>",
        f"<BANKTRANLIST><DTSTART>{_ofx_time(period.first_moment.astimezone(period.tz))}"
        f"</DTSTART><DTEND>{_ofx_time(period.end_moment.astimezone(period.tz))}</DTEND>",
    ]
    for m in book.movements:
        lines.append(
            f"<STMTTRN><TRNTYPE>{'CREDIT' if m.amount > 0 else 'DEBIT'}</TRNTYPE>"
            f"<DTPOSTED>{_ofx_time(period.local(m.at))}</DTPOSTED>"
            f"<TRNAMT>{plain(m.amount)}</TRNAMT><FITID>{_x(m.fitid)}</FITID>"
            + (f"<NAME>{_x(_ofx_name(m))}</NAME>" if _ofx_name(m) else "")
            + f"<MEMO>{_x(_memo(m)[:255])}</MEMO></STMTTRN>")
    lines += [
        "</BANKTRANLIST>",
        f"<LEDGERBAL><BALAMT>{plain(closing)}</BALAMT><DTASOF>{_ofx_time(_as_of(closed))}"
        "</DTASOF></LEDGERBAL>",
        "</STMTRS></STMTTRNRS></BANKMSGSRSV1>",
        "</OFX>",
    ]
    out.write("\n".join(lines) + "\n")


def _ofx_time(when: datetime) -> str:
    """YYYYMMDDHHMMSS.XXX[offset:zone], in the period's zone (the day an importer shows is
    the team's day)."""
    offset = when.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    name = re.sub(r"[^A-Za-z]", "", when.tzname() or "") or "UTC"
    shown = f"{sign}{hours}" + (f".{rest:02d}" if rest else "")
    return f"{when.strftime('%Y%m%d%H%M%S')}.{when.microsecond // 1000:03d}[{shown}:{name}]"


def _as_of(closed: ClosedPeriod) -> datetime:
    """When the wallet was last read: the period's last run's end, else the period's end."""
    ends = [r.finished_at or r.started_at for r in closed.statement.runs]
    tz = closed.period.tz
    return clock.parse(max(ends, key=clock.parse)).astimezone(tz) if ends else closed.period.end_moment.astimezone(tz)


def _ofx_name(m: Movement) -> str:
    return (m.payee if m.kind == PAYOUT else "Refund" if m.amount > 0 else "Fee")[
        :OFX_NAME_LIMIT]


def _memo(m: Movement) -> str:
    ref = f" [{m.reference}]" if m.reference else ""
    return f"{m.description}{ref}"


def _x(text: str) -> str:
    return escape(text)


# ------------------------------------------------------------------------------ Xero


def write_xero(closed: ClosedPeriod, book: WalletBook, out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(XERO_COLUMNS)
    for m in book.movements:
        payee = m.payee if m.kind == PAYOUT else ("Refund" if m.amount > 0 else "Fee")
        writer.writerow([m.day.strftime("%d/%m/%Y"), plain(m.amount), as_text(payee),
                         as_text(m.description), as_text(m.reference or m.fitid)])


# --------------------------------------------------------------------------- journal


def double_entries(m: Movement, books: Books) -> Iterator[tuple[str, Decimal, Decimal, str]]:
    """(account, debit, credit, memo) of one movement, in its own currency, balanced."""
    p = m.payment
    wallet = books.wallet_account(m.currency)
    payee = books.payee_account(p.recipient_name, p.reason)
    zero = Decimal(0)
    if m.kind == PAYOUT:
        yield payee, p.amount, zero, m.description
        yield wallet, zero, p.amount, m.description
    elif m.kind == FEE:
        yield books.fees, p.fee, zero, m.description
        yield wallet, zero, p.fee, m.description
    else:  # the whole debit comes back: the payout and its fee are undone
        yield wallet, p.total, zero, m.description
        yield payee, zero, p.amount, m.description
        if p.total - p.amount:
            yield books.fees, zero, p.total - p.amount, m.description


def write_journal(closed: ClosedPeriod, books: Books, out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(JOURNAL_COLUMNS)
    for m in closed.movements:
        for account, debit, credit, memo in double_entries(m, books):
            writer.writerow([m.day.isoformat(), as_text(account),
                             plain(debit) if debit else "", plain(credit) if credit else "",
                             m.currency, as_text(memo), as_text(m.payout_ref),
                             as_text(m.reference)])
