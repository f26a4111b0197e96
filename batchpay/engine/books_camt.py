"""ISO 20022 camt.053.001.02 (BankToCustomerStatementV02): the period's wallet statements
as the bank-statement message most ledgers and treasury systems import.

Version 001.02 is the one banks and ledgers read most widely (the SEPA and Swiss/German
implementation guides started from it). One `Stmt` per wallet currency: the opening (OPBD)
and closing (CLBD) balances are the wallet as the period's first run read it and after its
last run; one `Ntry` per payout debit, fee and refund, booked (`BOOK`), with the movement's
stable id as `NtryRef` and `AcctSvcrRef`, the service's reference number and the payout_ref
as `EndToEndId`. Amounts keep their exact digits (the schema allows up to five decimals).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from batchpay import clock
from batchpay.engine.books import FEE, PAYOUT, ClosedPeriod, Movement, WalletBook, plain

CAMT_VERSION = "camt.053.001.02"
NAMESPACE = f"urn:iso:std:iso:20022:tech:xsd:{CAMT_VERSION}"
# proprietary bank transaction codes (no ISO family fits a wallet payout exactly)
TX_CODES = {PAYOUT: "PAYOUT", FEE: "FEE", "refund": "REFUND"}


def write_camt053(closed: ClosedPeriod, out: TextIO) -> None:
    created = clock.now().replace(microsecond=0).isoformat()
    head = closed.statement.chain_head or "0"
    message_id = f"BATCHPAY-{closed.period.start:%Y%m%d}-{closed.period.end:%Y%m%d}-{head[:8]}"
    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<Document xmlns="{NAMESPACE}">', "<BkToCstmrStmt>",
             f"<GrpHdr><MsgId>{_t(message_id, 35)}</MsgId><CreDtTm>{created}</CreDtTm>"
             "</GrpHdr>"]
    for number, book in enumerate(closed.wallets.values(), start=1):
        parts.extend(_statement(closed, book, number, message_id, created))
    parts += ["</BkToCstmrStmt>", "</Document>"]
    out.write("\n".join(parts) + "\n")


def _statement(closed: ClosedPeriod, book: WalletBook, number: int, message_id: str,
               created: str) -> list[str]:
    period = closed.period
    c = book.currency
    opening = book.opening if book.opening is not None else Decimal(0)
    closing = book.closing if book.closing is not None else opening + book.total
    debits = [m for m in book.movements if m.amount < 0]
    credits = [m for m in book.movements if m.amount > 0]
    lines = [
        "<Stmt>",
        # Max35Text: the message id without its prefix, then the currency (30 characters)
        f"<Id>{_t(message_id.removeprefix('BATCHPAY-') + '-' + c, 35)}</Id>"
        f"<ElctrncSeqNb>{number}</ElctrncSeqNb>",
        f"<CreDtTm>{created}</CreDtTm>",
        f"<FrToDt><FrDtTm>{_local(period.first_moment, closed)}</FrDtTm>"
        f"<ToDtTm>{_local(period.end_moment, closed)}</ToDtTm></FrToDt>",
        f"<Acct><Id><Othr><Id>WALLET-{_t(c, 20)}</Id></Othr></Id><Ccy>{_t(c, 3)}</Ccy></Acct>",
        _balance("OPBD", opening, c, period.start.isoformat()),
        _balance("CLBD", closing, c, period.end.isoformat()),
        "<TxsSummry>"
        f"<TtlNtries><NbOfNtries>{len(book.movements)}</NbOfNtries></TtlNtries>"
        f"<TtlCdtNtries><NbOfNtries>{len(credits)}</NbOfNtries>"
        f"<Sum>{plain(sum((m.amount for m in credits), Decimal(0)))}</Sum></TtlCdtNtries>"
        f"<TtlDbtNtries><NbOfNtries>{len(debits)}</NbOfNtries>"
        f"<Sum>{plain(-sum((m.amount for m in debits), Decimal(0)))}</Sum></TtlDbtNtries>"
        "</TxsSummry>",
    ]
    lines.extend(_entry(m, closed) for m in book.movements)
    lines.append("</Stmt>")
    return lines


def _balance(code: str, amount: Decimal, currency: str, day: str) -> str:
    return (f"<Bal><Tp><CdOrPrtry><Cd>{code}</Cd></CdOrPrtry></Tp>"
            f"<Amt Ccy={quoteattr(currency)}>{plain(abs(amount))}</Amt>"
            f"<CdtDbtInd>{'DBIT' if amount < 0 else 'CRDT'}</CdtDbtInd>"
            f"<Dt><Dt>{day}</Dt></Dt></Bal>")


def _entry(m: Movement, closed: ClosedPeriod) -> str:
    party = "Cdtr" if m.kind == PAYOUT else "Dbtr"
    name = m.payee if m.kind == PAYOUT else ""
    related = (f"<RltdPties><{party}><Nm>{_t(name, 140)}</Nm></{party}></RltdPties>"
               if name else "")
    return (
        f"<Ntry><NtryRef>{_t(m.fitid, 35)}</NtryRef>"
        f"<Amt Ccy={quoteattr(m.currency)}>{plain(abs(m.amount))}</Amt>"
        f"<CdtDbtInd>{'CRDT' if m.amount > 0 else 'DBIT'}</CdtDbtInd><Sts>BOOK</Sts>"
        f"<BookgDt><DtTm>{_local(closed.period.local(m.at), closed)}</DtTm></BookgDt>"
        f"<ValDt><Dt>{m.day.isoformat()}</Dt></ValDt>"
        + (f"<AcctSvcrRef>{_t(m.reference, 35)}</AcctSvcrRef>" if m.reference else "")
        + f"<BkTxCd><Prtry><Cd>{TX_CODES[m.kind]}</Cd><Issr>batchpay</Issr></Prtry></BkTxCd>"
        "<NtryDtls><TxDtls>"
        f"<Refs><AcctSvcrRef>{_t(m.fitid, 35)}</AcctSvcrRef>"
        f"<EndToEndId>{_t(m.payout_ref or 'NOTPROVIDED', 35)}</EndToEndId></Refs>"
        f"{related}<RmtInf><Ustrd>{_t(m.description, 140)}</Ustrd></RmtInf>"
        "</TxDtls></NtryDtls>"
        f"<AddtlNtryInf>{_t(m.description, 500)}</AddtlNtryInf></Ntry>")


def _local(when: datetime, closed: ClosedPeriod) -> str:
    """ISO 8601 with the period zone's offset (ISODateTime takes one)."""
    return when.astimezone(closed.period.tz).replace(microsecond=0).isoformat()


def _t(text: str, limit: int) -> str:
    return escape(text[:limit])
