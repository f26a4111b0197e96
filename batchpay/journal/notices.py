"""The outbox of notifications: one record per event and receiver, in the journal's database.

An event (a batch waits for approval, a payment ended, ...) is queued once for each receiver
it goes to: the record's key is the event's own key and the receiver's, so queueing the same
event again changes nothing. The receiver is kept as a hash of its URL and the URL as it may
be shown (a mail server's password never enters the journal); the delivery worker finds the
URL again in the `notify` setting. Records move as every outbox record does
(batchpay.journal.outbox.Outbox); a try that failed is due again at `due_at`.

Nothing here touches a payment's records: a notification that cannot be delivered changes
no run, no row and no event of the chain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from batchpay.clock import now, stamp
from batchpay.journal.outbox import Outbox, OutboxState


@dataclass(frozen=True)
class NoticeDraft:
    """What is queued: one event's words for one receiver."""

    event: str  # the event's key: `kind:subject`, the same however often it is queued
    target: str  # the receiver's key (a hash of its URL)
    shown: str  # the receiver's URL without secrets
    kind: str
    title: str
    body: str


@dataclass(frozen=True)
class NoticeRecord(NoticeDraft):
    state: OutboxState
    attempts: int
    last_error: str
    created_at: str
    due_at: str
    tried_at: str | None
    sent_at: str | None


_COLUMNS = ("event, target, shown, kind, title, body, state, attempts, last_error, created_at, "
            "due_at, tried_at, sent_at")


def later(seconds: float) -> str:
    """A due time `seconds` from now, in the stored form."""
    return stamp(now() + timedelta(seconds=seconds))  # the stored form: due times compare as text


class NoticeOutbox(Outbox):
    """The notices' records and their moves (queued → sending → sent | failed | queued)."""

    def queue_notices(self, drafts: Iterable[NoticeDraft]) -> int:
        """Queue each draft unless its event and receiver have a record already; how many new."""
        added = 0
        now = stamp()
        with self.transaction():
            for d in drafts:
                cur = self.db.execute(
                    f"INSERT INTO notices ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, "
                    "NULL, NULL) ON CONFLICT (event, target) DO NOTHING",
                    (d.event, d.target, d.shown, d.kind, d.title, d.body, OutboxState.QUEUED,
                     now, now))
                added += cur.rowcount
        return added

    def notices(self, state: OutboxState | None = None) -> list[NoticeRecord]:
        """The notices (in one state only, with `state`), oldest first."""
        where, args = ("WHERE state = ?", (str(state),)) if state is not None else ("", ())
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM notices {where} ORDER BY created_at, event, target",
            args).fetchall()
        return [NoticeRecord(
            event=r["event"], target=r["target"], shown=r["shown"], kind=r["kind"],
            title=r["title"], body=r["body"], state=OutboxState(r["state"]),
            attempts=r["attempts"], last_error=r["last_error"], created_at=r["created_at"],
            due_at=r["due_at"], tried_at=r["tried_at"], sent_at=r["sent_at"]) for r in rows]

    def due_notices(self) -> list[NoticeRecord]:
        """The queued notices whose time has come (a failed try waits for its `due_at`)."""
        now = stamp()
        return [n for n in self.notices(OutboxState.QUEUED) if n.due_at <= now]

    def take_notice(self, event: str, target: str) -> bool:
        return self._take("notices", {"event": event, "target": target})

    def notice_sent(self, event: str, target: str) -> None:
        self._sent("notices", {"event": event, "target": target})

    def notice_not_sent(self, event: str, target: str, error: str, *, final: bool,
                        retry_in: float = 0.0) -> None:
        """Not delivered: queued again, due `retry_in` seconds from now, or failed for good."""
        self._not_sent("notices", {"event": event, "target": target}, error, final=final,
                       due_at=later(retry_in))
