"""The outbox of remittance advices: one record per run and payee, in the journal's file;
and the moves every outbox record makes (`Outbox`), shared with the notices' outbox
(batchpay.journal.notices).

A payee's advice is queued once (the record's key is the run and the payee, so queueing it
again changes nothing), then taken for sending, then marked sent or given its error. The
record is the de-duplication: `advise` sends only records still `queued`, so an advice that
went out is never sent again, and one whose sending stopped half-way (`sending`: the mail
server may have taken it) is reported, not sent blindly a second time.

The queries are plain SQL that PostgreSQL runs too (ON CONFLICT DO NOTHING, no SQLite
functions); the table is made by batchpay.journal.schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from batchpay.clock import stamp
from batchpay.journal.database import JournalDatabase


class OutboxState(StrEnum):
    QUEUED = "queued"  # to send (again, after a receiver that could not be reached)
    SENDING = "sending"  # taken for sending: still so after a crash, it may have gone
    SENT = "sent"  # the receiver (a mail server, a web hook) accepted it
    FAILED = "failed"  # refused for good (an address the server will not take): not retried


AdviceState = OutboxState  # the name the advices' code knows it by


@dataclass(frozen=True)
class AdviceDraft:
    """What is queued: who gets an advice for which payouts of a run."""

    run_id: str
    payee: str  # the payee's key (payee_id, company code, ID number or name)
    payee_name: str
    recipients: tuple[str, ...]  # e-mail addresses
    payout_refs: tuple[str, ...]
    message_id: str  # the mail's Message-ID, fixed when queued: the same for every try


@dataclass(frozen=True)
class AdviceRecord(AdviceDraft):
    state: AdviceState
    attempts: int
    last_error: str
    created_at: str
    tried_at: str | None
    sent_at: str | None


_COLUMNS = ("run_id, payee, payee_name, recipients, payout_refs, state, attempts, last_error, "
            "message_id, created_at, tried_at, sent_at")


class Outbox(JournalDatabase):
    """The moves of an outbox record (queued → sending → sent | failed | queued), one
    transaction each, for a table whose records carry `state`, `attempts`, `last_error`,
    `tried_at` and `sent_at`, keyed by the columns of `key` (names are never data)."""

    def _take(self, table: str, key: dict[str, str], **also: str) -> bool:
        """Mark a queued record as being sent (and count the try), before it leaves; False
        when it is not queued (sent meanwhile, or another process took it)."""
        where = " AND ".join(f"{k} = ?" for k in key)
        sets = "".join(f", {k} = ?" for k in also)
        with self.transaction():
            cur = self.db.execute(
                f"UPDATE {table} SET state = ?, attempts = attempts + 1, tried_at = ?{sets} "
                f"WHERE {where} AND state = ?",
                (OutboxState.SENDING, stamp(), *also.values(), *key.values(),
                 OutboxState.QUEUED))
            return bool(cur.rowcount == 1)

    def _sent(self, table: str, key: dict[str, str]) -> None:
        where = " AND ".join(f"{k} = ?" for k in key)
        with self.transaction():
            self.db.execute(
                f"UPDATE {table} SET state = ?, sent_at = ?, last_error = '' WHERE {where}",
                (OutboxState.SENT, stamp(), *key.values()))

    def _not_sent(self, table: str, key: dict[str, str], error: str, *, final: bool,
                  **also: str) -> None:
        """It did not go: queued again for a later try, or failed for good."""
        where = " AND ".join(f"{k} = ?" for k in key)
        sets = "".join(f", {k} = ?" for k in also)
        state = OutboxState.FAILED if final else OutboxState.QUEUED
        with self.transaction():
            self.db.execute(
                f"UPDATE {table} SET state = ?, last_error = ?{sets} WHERE {where}",
                (state, error[:500], *also.values(), *key.values()))


class AdviceOutbox(Outbox):
    """The advices' records and their moves (queued → sending → sent | failed | queued)."""

    def queue_advices(self, drafts: Iterable[AdviceDraft]) -> int:
        """Queue each draft unless its run and payee have a record already; how many new."""
        added = 0
        now = stamp()
        with self.transaction():
            for d in drafts:
                cur = self.db.execute(
                    f"INSERT INTO advices ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 0, '', ?, ?, "
                    "NULL, NULL) ON CONFLICT (run_id, payee) DO NOTHING",
                    (d.run_id, d.payee, d.payee_name, json.dumps(list(d.recipients)),
                     json.dumps(list(d.payout_refs), ensure_ascii=False), AdviceState.QUEUED,
                     d.message_id, now))
                added += cur.rowcount
        return added

    def advices(self, run_id: str | None = None) -> list[AdviceRecord]:
        """A run's advice records (every run's without `run_id`), oldest first."""
        where, args = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM advices {where} ORDER BY created_at, run_id, payee",
            args).fetchall()
        return [AdviceRecord(
            run_id=r["run_id"], payee=r["payee"], payee_name=r["payee_name"],
            recipients=tuple(json.loads(r["recipients"])),
            payout_refs=tuple(json.loads(r["payout_refs"])), message_id=r["message_id"],
            state=AdviceState(r["state"]), attempts=r["attempts"], last_error=r["last_error"],
            created_at=r["created_at"], tried_at=r["tried_at"], sent_at=r["sent_at"],
        ) for r in rows]

    def advised_refs(self) -> set[str]:
        """Every payout_ref some advice names (queued or gone): never advised twice."""
        refs: set[str] = set()
        for (text,) in self.db.execute("SELECT payout_refs FROM advices"):
            refs.update(json.loads(text))
        return refs

    def take_advice(self, run_id: str, payee: str) -> bool:
        """Mark a queued advice as being sent (and count the try), before the mail leaves;
        False when it is not queued (sent meanwhile, or another process took it)."""
        return self._take("advices", {"run_id": run_id, "payee": payee})

    def advice_sent(self, run_id: str, payee: str) -> None:
        self._sent("advices", {"run_id": run_id, "payee": payee})

    def advice_not_sent(self, run_id: str, payee: str, error: str, *, final: bool) -> None:
        """The mail did not go: queued again for a later `advise`, or failed for good."""
        self._not_sent("advices", {"run_id": run_id, "payee": payee}, error, final=final)
