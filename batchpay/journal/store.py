"""The journal: one SQLite file or PostgreSQL database, the single source of truth of every payout batchpay sent.

Its tables are described in batchpay.journal.schema; the database and its transactions in
batchpay.journal.database, the two stores in batchpay.journal.stores. Every change appends an event to a hash chain (keyed, see
batchpay.journal.chain_keys). A payout_ref whose latest attempt has no answer is *in
doubt* (status SENDING): its request may have reached the service. It is never given a new
quote; it is looked up and, while its quote is valid, resent with the identical body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from batchpay.clock import stamp
from batchpay.errors import AlreadySent, JournalServiceMismatch
from batchpay.files import is_database_address
from batchpay.journal import event_kinds as kinds
from batchpay.journal.chain_keys import MARKER
from batchpay.journal.notices import NoticeOutbox
from batchpay.journal.outbox import AdviceOutbox
from batchpay.journal.records import (
    GENESIS,
    Attempt,
    ChainCheck,
    LedgerEntry,
    RunRecord,
    RunRow,
    canonical,
    event_hash,
    pack_values,
    sha256_text,
)
from batchpay.journal.schema import (
    LEDGER_FIELDS,
    RANK,
    RUN_ROW_FIELDS,
    known_fields,
    moves_forward,
)
from batchpay.statuses import (
    IN_DOUBT,
    MAY_HAVE_PAID,
    SENDING,
    SERVICE_ALIASES,
    HoldKind,
    Status,
)

# a hold event's kind → the hold it records
_HOLDS = {kinds.HOLD + h: h for h in HoldKind if h != HoldKind.RELEASED}


class Journal(AdviceOutbox, NoticeOutbox):
    """A small typed class over one journal database (a SQLite file or a PostgreSQL
    schema): the runs, the ledger and the decisions recorded about them, each state change
    one transaction with its event (and the outboxes of remittance advices and of
    notifications, batchpay.journal.outbox and batchpay.journal.notices)."""

    def has_payout_requests(self) -> bool:
        """False for a new, empty journal: it knows of no payout request ever sent."""
        return self.db.execute("SELECT 1 FROM attempts LIMIT 1").fetchone() is not None

    # --- the service ---------------------------------------------------------------------
    def bind_service(self, identity: str) -> None:
        """A journal belongs to one service; another one is refused before anything is sent."""
        with self.transaction():
            row = self.db.execute("SELECT value FROM meta WHERE key = 'service'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('service', ?)", (identity,))
                self._event(kinds.JOURNAL_BOUND, data={"service": identity})
            elif row[0] != identity:
                raise JournalServiceMismatch(
                    f"This journal records payouts of {row[0]}, not {identity}.",
                    hint="Use the journal of that service (--journal or BATCHPAY_JOURNAL), "
                    "or a new journal file for this one.",
                )

    # --- events: the hash chain ----------------------------------------------------------
    def _event(self, kind: str, *, run_id: str = "", ref: str = "", data: Any = None,
               names_key: bool = False, at: str | None = None) -> str:
        """Append one event; must run inside a transaction (so it reads the true head).

        A chain keyed just now (or keyed before the chain named its key) gets its
        chain.keyed event first; with `names_key`, the event's data carry the key's id
        (`chain_key`), so that a journal stripped of its key is seen to have had one. `at`:
        the stored time of the change it records (default now)."""
        assert self._depth, "events are written inside a transaction"
        last = self.last_event or self.db.execute(LAST_EVENT).fetchone()
        seq = (last[0] + 1) if last else 1
        prev = last[1] if last else GENESIS
        key = self._chain.for_writing(seq)
        marker = self._chain.marker_due()
        at = at or stamp()
        if marker is not None:
            prev = self._append(seq, prev, MARKER, "", "", marker, key, at)
            self._chain.marked(seq)
            seq += 1
        body = data if data is not None else {}
        if names_key and (name := self._chain.key_name()) is not None:
            body = {**body, "chain_key": name}
        digest = self._append(seq, prev, kind, run_id, ref, body, key, at)
        self.last_event = (seq, digest)
        return digest

    def _append(self, seq: int, prev: str, kind: str, run_id: str, ref: str, data: Any,
                key: bytes | None, at: str) -> str:
        text = canonical(data)
        digest = event_hash(prev, seq, at, kind, run_id, ref, text, key)
        self.db.execute(
            "INSERT INTO events (seq, at, kind, run_id, payout_ref, data, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, at, kind, run_id, ref, text, prev, digest),
        )
        return digest

    def head(self) -> str:
        row = self.db.execute(LAST_EVENT).fetchone()
        return str(row[1]) if row else GENESIS

    def verify(self, head: str | None = None) -> ChainCheck:
        """The hash chain from its first event (keyed from its first keyed event); with
        `head`, also that it reaches it."""
        return self._chain.check(self.db.execute("SELECT * FROM events ORDER BY seq"), head)

    def holds_event(self, digest: str) -> bool:
        """Whether an event of this journal has this hash (a plan's chain head, say)."""
        return self.db.execute("SELECT 1 FROM events WHERE hash = ? LIMIT 1",
                               (digest,)).fetchone() is not None

    # --- runs ------------------------------------------------------------------------------
    def start_run(self, run: RunRecord, rows: Iterable[RunRow]) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO runs (id, kind, started_at, sheet, input_sha256, input_columns, info) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run.id, run.kind, run.started_at, run.sheet, run.input_sha256,
                 json.dumps(run.input_columns, ensure_ascii=False), canonical(run.info)),
            )
            self.db.executemany(
                "INSERT INTO run_rows (run_id, seq, row, payout_ref, inputs, linked, status, error,"
                " warning, amount, source_currency, target_currency, asked) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((run.id, r.seq, r.row, r.payout_ref, pack_values(r.inputs), int(r.linked), r.status,
                  r.error, r.warning, _text(r.amount), r.source_currency, r.target_currency,
                  _text(r.asked))
                 for r in rows),
            )
            # everything the runs row holds, so that `verify` checks the row against it
            # (integrity.run_disagreements) and a statement reads its figures from here
            self._event(kinds.RUN_STARTED, run_id=run.id, names_key=True, data={
                "kind": run.kind, "sheet": run.sheet, "input_sha256": run.input_sha256,
                "info": run.info, "started_at": run.started_at,
                "input_columns": run.input_columns})

    def update_run_row(self, run_id: str, seq: int, **fields: Any) -> None:
        known_fields(fields, RUN_ROW_FIELDS, "run_rows")
        if "linked" in fields:
            fields["linked"] = int(fields["linked"])
        fields.setdefault("updated_at", stamp())
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self.transaction():
            self.db.execute(f"UPDATE run_rows SET {cols} WHERE run_id = ? AND seq = ?",
                            (*[_text(v) for v in fields.values()], run_id, seq))

    def link_run_rows(self, run_id: str, seqs: Iterable[int]) -> None:
        """The run's rows `seqs` linked to their ledger rows. The seqs' span is said too: a
        database server that has no statistics of the run's rows yet (PostgreSQL, during
        the run that wrote them) would otherwise read every row of the run to find these."""
        wanted = list(seqs)
        with self.transaction():
            for i in range(0, len(wanted), 500):  # one statement per 500 rows
                chunk = wanted[i : i + 500]
                self.db.execute("UPDATE run_rows SET linked = 1 WHERE run_id = ? AND seq "
                                f"BETWEEN ? AND ? AND seq IN ({','.join('?' * len(chunk))})",
                                (run_id, min(chunk), max(chunk), *chunk))

    def finish_run(self, run_id: str, outcome: str, exit_code: int, info: dict[str, Any]) -> None:
        with self.transaction():
            row = self.db.execute("SELECT info FROM runs WHERE id = ?", (run_id,)).fetchone()
            merged = {**json.loads(row[0]), **info} if row else info
            self.db.execute(
                "UPDATE runs SET finished_at = ?, outcome = ?, exit_code = ?, info = ? WHERE id = ?",
                (stamp(), outcome, exit_code, canonical(merged), run_id),
            )
            self._event(kinds.RUN_FINISHED, run_id=run_id,
                        data={"outcome": outcome, "exit_code": exit_code, **info})

    def runs(self) -> list[RunRecord]:
        # runs started in the same instant keep the order they were recorded in (a run id's
        # last part is random, so it orders nothing)
        return [self._run(r) for r in self.db.execute(
            "SELECT * FROM runs ORDER BY started_at, rowid")]

    def run_ids_of(self, input_sha256: str, kinds: Iterable[str]) -> list[str]:
        """The ids of the runs of these input bytes and kinds, oldest first, without reading
        their records (a page following a payment asks this every second)."""
        wanted = list(kinds)
        marks = ",".join("?" * len(wanted))
        return [r[0] for r in self.db.execute(
            f"SELECT id FROM runs WHERE input_sha256 = ? AND kind IN ({marks}) "
            "ORDER BY started_at, rowid", (input_sha256, *wanted))]

    def run_row_states(self, run_id: str) -> list[Any]:
        """Each row of a run with what its status comes from, in order, its inputs unread:
        row, payout_ref, linked, status, error, and its payout_ref's ledger status, error
        and reference_number (NULL when none). `render.row_states` applies the rule."""
        return list(self.db.execute(
            "SELECT rr.row, rr.payout_ref, rr.linked, rr.status, rr.error, "
            "p.status AS ledger_status, p.error AS ledger_error, p.reference_number "
            "FROM run_rows rr LEFT JOIN payouts p ON rr.linked = 1 "
            "AND p.payout_ref = rr.payout_ref WHERE rr.run_id = ? ORDER BY rr.seq",
            (run_id,)).fetchall())

    def run(self, run_id: str | None = None) -> RunRecord | None:
        if run_id is None:
            r = self.db.execute(
                "SELECT * FROM runs WHERE kind != 'dry-run' ORDER BY started_at DESC, rowid DESC LIMIT 1"
            ).fetchone()
        else:
            r = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return self._run(r) if r else None

    @staticmethod
    def _run(r: Any) -> RunRecord:
        return RunRecord(
            id=r["id"], kind=r["kind"], started_at=r["started_at"], sheet=r["sheet"],
            input_sha256=r["input_sha256"], input_columns=json.loads(r["input_columns"]),
            info=json.loads(r["info"]), finished_at=r["finished_at"], outcome=r["outcome"],
            exit_code=r["exit_code"],
        )

    def run_rows(self, run_id: str) -> Iterator[RunRow]:
        """The run's rows in input order, a HELD row with the hold its run recorded."""
        holds = self.run_holds(run_id)
        cur = self.db.execute("SELECT * FROM run_rows WHERE run_id = ? ORDER BY seq", (run_id,))
        for r in cur:
            row = RunRow.from_row(dict(r))
            if row.status == Status.HELD:
                row.hold = holds.get(row.payout_ref)
            yield row

    # --- the ledger -------------------------------------------------------------------------
    def entry(self, ref: str) -> LedgerEntry | None:
        r = self.db.execute("SELECT * FROM payouts WHERE payout_ref = ?", (ref,)).fetchone()
        return LedgerEntry.from_row(dict(r)) if r else None

    def entries(self, refs: Iterable[str] | None = None) -> dict[str, LedgerEntry]:
        if refs is None:
            rows = self.db.execute("SELECT * FROM payouts").fetchall()
            return {r["payout_ref"]: LedgerEntry.from_row(dict(r)) for r in rows}
        wanted = list(dict.fromkeys(refs))
        out: dict[str, LedgerEntry] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.db.execute(f"SELECT * FROM payouts WHERE payout_ref IN ({marks})", chunk):
                out[r["payout_ref"]] = LedgerEntry.from_row(dict(r))
        return out

    def set_status(self, ref: str, status: str, *, run_id: str = "", details: str = "",
                   event: str = kinds.PAYOUT_STATUS, evidence: dict[str, Any] | None = None,
                   attempt_id: int | None = None, **fields: Any) -> None:
        """Record a decision about a payout_ref (creating its ledger row if needed).

        The event carries everything the ledger row is set to (the details as their
        SHA-256), so that the ledger can be checked against the chain (`integrity`); the
        row's `attempt_id`, when given, is named by the event's evidence instead."""
        known_fields(fields, LEDGER_FIELDS, "payouts")
        now = stamp()
        with self.transaction():
            sets = {"status": status, "updated_at": now, **fields}
            if attempt_id is not None:
                sets["attempt_id"] = attempt_id
            if run_id:
                sets["run_id"] = run_id
            if details:
                sets["details"] = details
            # made, or set: one statement (no answer to wait for on PostgreSQL), which a group
            # written together sends with its others as one (batchpay.journal.together)
            made = {"payout_ref": ref, "details": details, "run_id": run_id, **sets}
            cols = ", ".join(f"{k} = excluded.{k}" for k in sets)
            self.db.execute(
                f"INSERT INTO payouts ({', '.join(made)}) VALUES "
                f"({', '.join('?' * len(made))}) ON CONFLICT (payout_ref) DO UPDATE SET "
                f"{cols}", [_text(v) for v in made.values()])
            data = {"status": status, **fields, **(evidence or {})}
            if details:
                data["details_sha256"] = sha256_text(details)
            self._event(event, run_id=run_id, ref=ref, data=data, at=now)

    def record_intent(self, ref: str, run_id: str, details: str, quote: dict[str, Any],
                      body: dict[str, Any], expires_at: float, *, seq: int | None = None,
                      **fields: Any) -> int:
        """The quote id and the exact body, on disk before the request leaves. Status SENDING.

        With `seq`, the run's row `seq` shows this payout_ref's ledger status from now on.
        """
        with self.transaction(durable=True):
            claim, sent = self.claim_attempt(ref, run_id, quote, body, expires_at)
            return self.intent_claimed(claim.fetchone(), sent, ref, run_id, details, body, seq,
                                       fields)

    # the steps of record_intent and record_answer, apart so that several calls can be
    # written together, each step of all of them before the next (batchpay.journal.together)
    def claim_attempt(self, ref: str, run_id: str, quote: dict[str, Any], body: dict[str, Any],
                      expires_at: float) -> tuple[Any, str]:
        """The attempt's INSERT, sent: it is made only while no payout of the ref may have
        paid (the check and the claim one statement, one wait for a database server). Its
        answer's row (the attempt's id, or none) goes to `intent_claimed`, with the body's
        text as stored, whose hash the intent's event carries."""
        sent = canonical(body)
        return self.db.execute(
            f"INSERT INTO attempts ({ATTEMPT_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ? WHERE "
            f"{claimable('?')} RETURNING id",
            (*self.attempt_values(ref, run_id, body["quoteId"], quote, sent, expires_at), ref,
             *TAKEN)), sent

    @staticmethod
    def attempt_values(ref: str, run_id: str, quote_id: str, quote: dict[str, Any], sent: str,
                       expires_at: float) -> tuple[Any, ...]:
        """An attempt's ATTEMPT_COLUMNS as claim_attempt writes them."""
        return (ref, run_id, quote_id, canonical(quote), sent, expires_at, stamp())

    def intent_claimed(self, made: Any, sent: str, ref: str, run_id: str, details: str,
                       body: dict[str, Any], seq: int | None, fields: dict[str, Any]) -> int:
        """The rest of an intent once its claim is answered (`made`: the row of the
        attempt's id, None when none was made: then AlreadySent, nothing written)."""
        if made is None:
            # another run (or a webhook) got there since this run planned the row
            now = self.db.execute("SELECT status FROM payouts WHERE payout_ref = ?",
                                  (ref,)).fetchone()
            raise AlreadySent(ref, now[0])
        attempt_id = int(made[0])
        if seq is not None:
            self.link_run_rows(run_id, [seq])
        fields.update(quote_id=body["quoteId"], payout_id="", reference_number="", error="")
        self.set_status(ref, SENDING, run_id=run_id, details=details,
                        event=kinds.PAYOUT_INTENT, evidence={
                            "attempt": attempt_id, "body_sha256": sha256_text(sent)},
                        attempt_id=attempt_id, **fields)
        return attempt_id

    def mark_sent(self, attempt_id: int) -> None:
        """Counts sends of an attempt (the same body may go several times, never a new quote)."""
        with self.transaction():
            self.db.execute("UPDATE attempts SET sends = sends + 1 WHERE id = ?", (attempt_id,))

    def record_answer(self, attempt_id: int, outcome: str, *, status: str, run_id: str = "",
                      http_status: int | None = None, message: str = "", **fields: Any) -> None:
        """The answer to an attempt, and the payout_ref's resulting status, in one transaction."""
        with self.transaction():
            self.answer_found(self.attempt_refs([attempt_id])[attempt_id], attempt_id, outcome,
                              status=status, run_id=run_id, http_status=http_status,
                              message=message, **fields)

    def attempt_refs(self, attempt_ids: list[int]) -> dict[int, tuple[str, str]]:
        """Each attempt's (payout_ref, that ref's status), asked in one statement."""
        if not attempt_ids:
            return {}
        return {int(r[0]): (r[1], r[2]) for r in self.db.execute(
            attempt_refs_query(len(attempt_ids)), attempt_ids).fetchall()}

    def answer_found(self, r: tuple[str, str], attempt_id: int, outcome: str, *, status: str,
                     run_id: str = "", http_status: int | None = None, message: str = "",
                     **fields: Any) -> None:
        """The rest of record_answer once `attempt_refs` has answered: `r` is the attempt's
        (payout_ref, status)."""
        self.db.execute(ANSWERED, (stamp(), outcome, http_status, message, attempt_id))
        if r[1] in RANK and status in RANK and not moves_forward(r[1], status):
            status = r[1]  # a webhook about this payout outran its own answer: keep it
        self.set_status(r[0], status, run_id=run_id, event=kinds.payout_event(outcome),
                        **fields)

    def attempt(self, attempt_id: int) -> Attempt:
        r = self.db.execute("SELECT * FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
        return Attempt(
            id=r["id"], payout_ref=r["payout_ref"], run_id=r["run_id"], quote_id=r["quote_id"],
            quote=json.loads(r["quote_json"]), body=json.loads(r["body_json"]),
            quote_expires_at=r["quote_expires_at"], sends=r["sends"], outcome=r["outcome"],
        )

    def apply_state(self, ref: str, state: str, *, source: str, payout_id: str, quote_id: str,
                    **fields: Any) -> bool:
        """Move a payout forward to `state` as reported by the service; never backwards.

        The report must be about the ledger's current payout of `ref` (same quote; same
        payout id once known): a late event about an earlier, failed payout of a ref that
        was paid again changes nothing. Idempotent: the same state twice changes nothing.
        Returns whether anything changed.
        """
        state = SERVICE_ALIASES.get(state, state)
        if state not in RANK:
            return False
        with self.transaction():
            r = self.db.execute("SELECT status, payout_id, quote_id FROM payouts "
                                "WHERE payout_ref = ?", (ref,)).fetchone()
            if r is None or r["quote_id"] != quote_id:
                return False
            if r["payout_id"] and r["payout_id"] != payout_id:
                return False
            if not moves_forward(r["status"], state):
                return False
            if r["status"] in IN_DOUBT:
                # the answer to the in-doubt attempt has been found
                self.db.execute(
                    "UPDATE attempts SET answered_at = ?, outcome = 'found' "
                    "WHERE id = (SELECT attempt_id FROM payouts WHERE payout_ref = ?)",
                    (stamp(), ref))
                fields.setdefault("error", "")
            self.set_status(ref, state, event=kinds.payout_event(source), payout_id=payout_id,
                            **fields)
            return True

    def ref_for_payout(self, payout_id: str) -> str | None:
        r = self.db.execute("SELECT payout_ref FROM payouts WHERE payout_id = ?",
                            (payout_id,)).fetchone()
        return r[0] if r else None

    def ref_for_quote(self, quote_id: str) -> str | None:
        """The payout_ref of an attempt made with this quote (that is how lost answers are found)."""
        r = self.db.execute("SELECT payout_ref FROM attempts WHERE quote_id = ? ORDER BY id DESC"
                            " LIMIT 1", (quote_id,)).fetchone()
        return r[0] if r else None

    def sent_since(self, since: str, statuses: Iterable[str]) -> list[tuple[str, str, str, str, str]]:
        """(payout_ref, details, status, run_id, first request time) of every payout_ref in
        one of `statuses` whose first payout request was made at `since` or later."""
        wanted = sorted(statuses)  # a set has no order; the query's parameters do
        marks = ",".join("?" * len(wanted))
        return [tuple(r) for r in self.db.execute(
            "SELECT p.payout_ref, p.details, p.status, p.run_id, e.sent_at FROM payouts p JOIN "
            "(SELECT payout_ref, MIN(at) AS sent_at FROM events WHERE kind = ? "
            " GROUP BY payout_ref) e ON e.payout_ref = p.payout_ref "
            f"WHERE p.status IN ({marks}) AND e.sent_at >= ?",
            (kinds.PAYOUT_INTENT, *wanted, since))]

    def record_decisions(self, run_id: str,
                         decisions: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Events (kind, payout_ref, data) about rows of a run: holds and their releases."""
        with self.transaction():
            for kind, ref, data in decisions:
                self._event(kind, run_id=run_id, ref=ref, data=data)

    def known_quotes(self, quote_ids: Iterable[str]) -> set[str]:
        """Which of these quote ids a payout request of this journal was made with."""
        wanted = list(dict.fromkeys(quote_ids))
        known: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            known.update(r[0] for r in self.db.execute(
                f"SELECT quote_id FROM attempts WHERE quote_id IN ({marks})", chunk))
        return known

    def refs(self) -> list[str]:
        """Every payout_ref of the ledger."""
        return [r[0] for r in self.db.execute("SELECT payout_ref FROM payouts")]

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        """The data of every event of `kind`, oldest first."""
        return [json.loads(r[0]) for r in self.db.execute(
            "SELECT data FROM events WHERE kind = ? ORDER BY seq", (kind,))]

    def run_holds(self, run_id: str) -> dict[str, HoldKind]:
        """payout_ref → the kind of hold a run recorded for it (payee, repeat, service)."""
        return {ref: _HOLDS[kind] for ref, kind in self.db.execute(
            "SELECT payout_ref, kind FROM events WHERE run_id = ? AND kind LIKE ? "
            "AND kind != ? ORDER BY seq", (run_id, kinds.HOLD + "%", kinds.HOLD_RELEASED))
            if kind in _HOLDS}

    def record_note(self, kind: str, data: Mapping[str, Any], run_id: str = "") -> None:
        with self.transaction():
            self._event(kind, run_id=run_id, data=data)


TAKEN = tuple(sorted(MAY_HAVE_PAID))  # the statuses of a ref whose payout may have been made
TAKEN_MARKS = ",".join("?" * len(TAKEN))
# the columns a claim writes (Journal.attempt_values), and an attempt's answer as
# answer_found writes it (batchpay.journal.together writes many of each at once)
ATTEMPT_COLUMNS = ("payout_ref, run_id, quote_id, quote_json, body_json, quote_expires_at, "
                   "created_at")
ANSWERED = ("UPDATE attempts SET answered_at = ?, outcome = ?, http_status = ?, message = ? "
            "WHERE id = ?")
LAST_EVENT = "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"  # the chain's head


def claimable(ref: str) -> str:
    """The condition of a claim: no payout of the payout_ref `ref` (an SQL expression, then
    TAKEN's values) may have paid. Its status is asked by the ledger's key, a subquery per
    ref (at most one row: payout_ref is the key), so that a server without statistics of a
    ledger that grew during the run never reads the whole ledger to answer it (a NOT
    EXISTS of many claims at once becomes a join that does)."""
    return (f"COALESCE((SELECT p.status FROM payouts p WHERE p.payout_ref = {ref}), '') "
            f"NOT IN ({TAKEN_MARKS})")


def attempt_refs_query(n: int, tag: str = "") -> str:
    """The SELECT of Journal.attempt_refs for `n` attempts; each row begins with `tag`."""
    return (f"SELECT {tag}a.id, a.payout_ref, p.status FROM attempts a JOIN payouts p ON "
            f"p.payout_ref = a.payout_ref WHERE a.id IN ({','.join('?' * n)})")


def journal_holds_event(path: Path | str, digest: str) -> bool:
    """Whether the journal at `path` has an event with this hash; False when there is no
    journal file there (nothing is created)."""
    if not is_database_address(path) and not Path(path).is_file():
        return False
    with Journal(path) as journal:
        return journal.holds_event(digest)


def _text(value: Any) -> Any:
    """Money and other Decimals are stored as their exact digits."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    return str(value)
