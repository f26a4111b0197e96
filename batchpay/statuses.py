"""Every row status batchpay uses, and the groups its rules are written in.

The one vocabulary of the sheet, the engine, the display and the CLI. A member is its own
string (StrEnum, name = value), so the journal, the JSON output and the workbooks hold the
same text as ever and a status read back as plain text still finds its group. This module
imports nothing from batchpay: anything may import it.

Row groups (what a row of the results shows) and ledger groups (the status of a payout_ref
in the journal, which can also be SENDING) are named apart: they answer different questions.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final, Literal, TypeAlias, TypeVar

T = TypeVar("T")


class Status(StrEnum):
    """A row's status, as the Results sheet, `--json` and the README's table show it; in the
    order the Summary lists them."""

    VALID = "VALID"
    INVALID = "INVALID"
    NOT_SENT = "NOT_SENT"
    QUOTE_FAILED = "QUOTE_FAILED"
    REJECTED = "REJECTED"
    HELD = "HELD"
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REFUNDED = "REFUNDED"
    UNKNOWN = "UNKNOWN"


class HoldKind(StrEnum):
    """Why a row is HELD (or that its hold was released): the fact a row's next step, the
    gate's notes and a page's release box are decided by, never the words of its error."""

    PAYEE = "payee"  # the payee's bank details changed, are new or shared (controls.payees)
    SERVICE = "service"  # the service's own list holds the payment, or was not read whole
    REPEAT = "repeat"  # the same account and amount were paid recently (controls.repeats)
    RELEASED = "released"  # a service or repeat hold released by the operator (--allow-repeat)


# Ledger only: a payout request on disk without an answer yet; a row shows it as UNKNOWN.
SENDING: Final = "SENDING"
# A payout_ref's status in the journal's ledger: a row's status, or SENDING.
LedgerStatus: TypeAlias = Status | Literal["SENDING"]


def ledger_status(text: str) -> LedgerStatus:
    """A ledger status as the journal stores it (its text) back to its member."""
    return SENDING if text == SENDING else Status(text)


# The service's old names: older payout records say INITIATED for what it now calls PENDING.
SERVICE_ALIASES = {"INITIATED": Status.PENDING}

# The states the service gives a payout (after SERVICE_ALIASES).
SERVICE_STATES = frozenset({Status.PENDING, Status.PROCESSING, Status.COMPLETED, Status.FAILED,
                            Status.REFUNDED})
# Accepted by the service and not final yet: `sync` later.
ON_ITS_WAY = frozenset({Status.PENDING, Status.PROCESSING})
# The service's last word on a payout, except that a FAILED one still becomes REFUNDED.
FINAL = frozenset({Status.COMPLETED, Status.FAILED, Status.REFUNDED})
# Refused by the bank: the money comes (or came) back, and `rerun` pays the row again.
FAILED_AT_BANK = frozenset({Status.FAILED, Status.REFUNDED})
# Paid or on its way: nothing to do; a run or sync exits 0 when every row is FINE (a dry
# run's NOT_SENT rows too, see `exit_code`).
FINE = ON_ITS_WAY | {Status.COMPLETED}
# Rows a Results or validate report sheet leaves unshaded: FINE, and VALID (validate only).
FINE_OR_VALID = FINE | {Status.VALID}

# Control totals, sent: a row whose payout request reached the service, or may have.
SENT = SERVICE_STATES | {Status.UNKNOWN}
# Control totals, not sent: a valid row that sent nothing (VALID: validate reports only;
# HELD rows never reach the ledger).
UNSENT = frozenset({Status.VALID, Status.NOT_SENT, Status.QUOTE_FAILED, Status.REJECTED,
                    Status.HELD})

# Ledger: no payout at the service for the payout_ref (refused, or proven never received),
# so the next run sends it afresh with a new quote.
NO_PAYOUT = frozenset({Status.NOT_SENT, Status.QUOTE_FAILED, Status.REJECTED})
# Ledger: the request may have reached the service with its answer lost; looked up, never
# resent blindly.
IN_DOUBT = frozenset({SENDING, Status.UNKNOWN})
# Ledger: a payout request reached the service, or may have (the payee register's history).
REQUESTED = SENT | IN_DOUBT
# Ledger: the money went, or may have; paying the same again is a possible duplicate.
MAY_HAVE_PAID = FINE | IN_DOUBT
# Ledger: what `sync` follows, as the service may still change it (FAILED becomes REFUNDED).
MAY_CHANGE = (REQUESTED - FINAL) | {Status.FAILED}


# How a status is coloured wherever it is shown (the workbooks' fills, the terminal): done,
# not paid, look again, under way.
TONES: dict[str, frozenset[Status]] = {
    "done": frozenset({Status.COMPLETED, Status.VALID}),
    "not paid": frozenset({Status.FAILED, Status.REFUNDED, Status.REJECTED, Status.INVALID,
                           Status.QUOTE_FAILED}),
    "look again": frozenset({Status.UNKNOWN, Status.NOT_SENT, Status.HELD}),
    "under way": ON_ITS_WAY,
}


def display_status(status: str) -> str:
    """A journal state as the operator sees it: a request in flight (SENDING) is UNKNOWN."""
    return Status.UNKNOWN if status == SENDING else status


def coloured(colours: dict[str, T]) -> dict[str, T]:
    """Status → its tone's colour, in Status order, from tone → colour."""
    return {status: colours[tone] for status in Status
            for tone, members in TONES.items() if status in members}


def in_order(statuses: Iterable[str]) -> tuple[Status, ...]:
    """These statuses in Status order, for anything that is written or summed in an order
    (a frozenset has none); SENDING and strings batchpay does not know are left out."""
    wanted = set(statuses)
    return tuple(s for s in Status if s in wanted)


# The exit codes of every command: all is well; some rows need the operator; nothing could
# be done (a BatchpayError's own exit_code says which of the last two it is).
EXIT_OK, EXIT_ROWS, EXIT_FAILED = 0, 1, 2


def needs_nothing(*, dry_run: bool = False) -> frozenset[str]:
    """The row statuses that ask nothing of the operator: FINE, and VALID (a `validate` row,
    checked as asked; a run's rows are never VALID); a dry run's NOT_SENT too, as it sends
    nothing by design."""
    return FINE_OR_VALID | {Status.NOT_SENT} if dry_run else FINE_OR_VALID


def exit_code(statuses: Iterable[str], *, dry_run: bool = False) -> int:
    """The one rule from row statuses to an exit code: EXIT_OK when no row needs the
    operator (`needs_nothing`), else EXIT_ROWS; `validate`, `run`, `rerun`, a dry run and
    `sync` all decide so."""
    fine = needs_nothing(dry_run=dry_run)
    return EXIT_OK if all(status in fine for status in statuses) else EXIT_ROWS
