"""The kinds of the journal's events, named once: every writer and every query on `kind`
uses these names, so that a kind cannot be spelt two ways (a query with a typo finds nothing
and says nothing). The stored text of each kind is part of the journal's format: never
change a value, only add.

    journal.bound      the journal is tied to one service (its identity)
    chain.keyed        the chain is keyed from this event on (journal.chain_keys)
    run.started        a run began (its rows are in run_rows); carries the chain key's id
    run.finished       a run ended: outcome, exit code, counts
    payout.intent      a payout request is about to leave (the quote it spends)
    payout.<outcome>   the answer to a request (accepted, rejected, never_received, ...)
    payout.<source>    a status the service reported (webhook, sync, lookup)
    payout.status      a status set by batchpay itself
    payout.in_doubt    a request whose answer was lost
    hold.payee         a row held: the payee's bank details changed or are new
    hold.service       a row held: the service's own list holds the payment, or was not read
    hold.repeat        a row held: it repeats a recent payment
    hold.released      a hold released by the operator (--allow-repeat)
    webhook.claim      a webhook's payout claimed by a row in doubt
    payee.confirmed    a payee's bank details confirmed
    sync               a `sync` pass over a run
"""

from __future__ import annotations

from typing import Final

JOURNAL_BOUND: Final = "journal.bound"
CHAIN_KEYED: Final = "chain.keyed"
RUN_STARTED: Final = "run.started"
RUN_FINISHED: Final = "run.finished"
PAYOUT: Final = "payout."  # the family: every event about a payout's request or status
PAYOUT_INTENT: Final = "payout.intent"
PAYOUT_STATUS: Final = "payout.status"
PAYOUT_IN_DOUBT: Final = "payout.in_doubt"
HOLD: Final = "hold."  # the family: a row held, or a hold released
HOLD_PAYEE: Final = "hold.payee"
HOLD_SERVICE: Final = "hold.service"
HOLD_REPEAT: Final = "hold.repeat"
HOLD_RELEASED: Final = "hold.released"
WEBHOOK_CLAIM: Final = "webhook.claim"
PAYEE_CONFIRMED: Final = "payee.confirmed"
SYNC: Final = "sync"


def payout_event(what: str) -> str:
    """The kind of a payout event named by an attempt's outcome or a status's source."""
    return PAYOUT + what
