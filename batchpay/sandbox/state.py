"""The sandbox's books: quotes, payouts and wallets in one SQLite database, behind one lock.

Write-through: every change is committed before the request that made it is answered (and
before a response is dropped on purpose). Without a state file the database lives in
memory. Payout states are not stored but derived from the time since creation, so they
need no timers and survive a restart:

    PENDING ─(settle/2)─► PROCESSING ─(settle)─► COMPLETED
                                      └─(settle, remark "fail")─► FAILED ─(2×settle)─► REFUNDED

A refund credits the wallet once: the first time anything looks at the books after the
payout became REFUNDED (a request, or the webhook thread's tick), a flag is set in the same
transaction as the credit.
"""

from __future__ import annotations

import secrets
import sqlite3
import string
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from batchpay.files import create_private, private_dir
from batchpay.sandbox import banks, rates
from batchpay.sandbox.checks import Refusal
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.faults import Dice, RateLimiter, Traffic, parse_rate_limit
from batchpay.sandbox.wire import (
    AcceptedPayout,
    Payout,
    PayoutRecord,
    PayoutRequest,
    Quote,
    Side,
    Wallet,
    dumps,
    loads,
)

START_BALANCES: dict[str, Decimal] = {"NGN": Decimal("10000000000"), "USD": Decimal("100000000")}
STATES = ("PENDING", "PROCESSING", "COMPLETED", "FAILED", "REFUNDED")
# the values the service's payout list takes as its required `state`; PROCESSING is
# listed under PENDING, as the real service does
LISTABLE_STATES = ("COMPLETED", "PENDING", "FAILED", "REFUNDED")
REFERENCE_ALPHABET = string.ascii_uppercase + string.digits
WALLET_IDS = uuid.UUID("6f1c0b7e-5d7a-4c8e-9a51-0d5b8b8a5a11")  # namespace of wallet ids

SCHEMA = """
CREATE TABLE IF NOT EXISTS quote (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    used INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS payout (
    seq INTEGER PRIMARY KEY,                 -- creation order
    id TEXT NOT NULL UNIQUE,
    quote_id TEXT NOT NULL UNIQUE,           -- one payout per quote, enforced twice
    created REAL NOT NULL,                   -- epoch seconds; never decreases
    fails INTEGER NOT NULL,                  -- remark "fail": ends FAILED, then REFUNDED
    refund INTEGER NOT NULL,                 -- 0 none, 1 owed once REFUNDED, 2 credited
    debit_currency TEXT NOT NULL,
    debit_amount TEXT NOT NULL,
    webhook_state TEXT,                      -- last state announced by webhook
    webhook_open INTEGER NOT NULL,           -- 1 while state changes remain to announce
    record TEXT NOT NULL                     -- the payout record without state/processed
);
-- created never decreases along seq, so this index also gives creation order, and a page
-- of any state filter is found in the index alone
CREATE INDEX IF NOT EXISTS payout_by_time ON payout(created, fails);
CREATE INDEX IF NOT EXISTS payout_refund_owed ON payout(created) WHERE refund = 1;
CREATE INDEX IF NOT EXISTS payout_webhook_open ON payout(seq) WHERE webhook_open = 1;
CREATE TABLE IF NOT EXISTS wallet (
    currency TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    balance TEXT NOT NULL
);
"""


def iso(timestamp: float) -> str:
    """ISO 8601 UTC with milliseconds and Z."""
    moment = datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")
    return moment.replace("+00:00", "Z")


def derive_state(age: float, settle: float, fails: bool) -> tuple[str, float]:
    """(state, seconds after creation at which that state began)."""
    if age < settle / 2:
        return "PENDING", 0.0
    if age < settle:
        return "PROCESSING", settle / 2
    if not fails:
        return "COMPLETED", settle
    if age < 2 * settle:
        return "FAILED", settle
    return "REFUNDED", 2 * settle


def state_path_of(fails: bool) -> tuple[str, ...]:
    if fails:
        return ("PENDING", "PROCESSING", "FAILED", "REFUNDED")
    return ("PENDING", "PROCESSING", "COMPLETED")


def _wallet_id(currency: str) -> str:
    return str(uuid.uuid5(WALLET_IDS, currency))


class SandboxState:
    """Thread-safe books of one sandbox (one lock around every read and change)."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.drift = rates.Drift(config.rate_drift, config.seed)
        self.traffic = Traffic()
        self.dice = Dice(config.seed)
        self.limiter = RateLimiter(parse_rate_limit(config.rate_limit) if config.rate_limit else [])
        self._webhook_url = config.webhook_url
        self._webhook_secret = config.webhook_secret
        self._lock = threading.RLock()
        self._last_created = 0.0
        self._db = self._open(config.state_path)

    # -- storage ---------------------------------------------------------------------------

    def _open(self, path: Path | None) -> sqlite3.Connection:
        if path is not None:
            path = create_private(private_dir(Path(path).parent) / Path(path).name)
        db = sqlite3.connect(
            ":memory:" if path is None else str(path), check_same_thread=False,
            isolation_level=None, timeout=10,
        )
        if path is not None:
            # WAL + NORMAL: a commit is durable against a crash of this process at the cost
            # of a write, not of an fsync, so a payout commit stays well under a millisecond.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        with self._lock:
            if db.execute("SELECT COUNT(*) FROM wallet").fetchone()[0] == 0:
                self._insert_start_wallets(db)
            self._last_created = db.execute("SELECT COALESCE(MAX(created), 0) FROM payout").fetchone()[0]
        return db

    @staticmethod
    def _insert_start_wallets(db: sqlite3.Connection) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO wallet (currency, id, balance) VALUES (?, ?, ?)",
            [(cur, _wallet_id(cur), str(balance)) for cur, balance in START_BALANCES.items()],
        )

    @contextmanager
    def _transaction(self, now: float | None = None) -> Iterator[sqlite3.Connection]:
        """The lock and one SQLite transaction; refunds due by `now` are credited first, so
        that nothing shown as REFUNDED at `now` is shown without its credit."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._credit_due_refunds(time.time() if now is None else now)
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _credit_due_refunds(self, now: float) -> None:
        settle = self.config.settle_seconds
        owed = self._db.execute(
            "SELECT seq, debit_currency, debit_amount FROM payout WHERE refund = 1 AND created <= ?",
            (now - 2 * settle,),
        ).fetchall()
        for seq, currency, amount in owed:
            self._add_to_wallet(currency, Decimal(amount))
            self._db.execute("UPDATE payout SET refund = 2 WHERE seq = ?", (seq,))

    def _balance(self, currency: str) -> Decimal:
        row = self._db.execute("SELECT balance FROM wallet WHERE currency = ?", (currency,)).fetchone()
        return Decimal(row[0]) if row else Decimal(0)

    def _add_to_wallet(self, currency: str, amount: Decimal) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO wallet (currency, id, balance) VALUES (?, ?, ?)",
            (currency, _wallet_id(currency), str(self._balance(currency) + amount)),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- webhooks target -------------------------------------------------------------------

    def set_webhook(self, url: str | None, secret: str | None) -> None:
        """Where state changes of payouts created from now on are POSTed (None: nowhere)."""
        with self._lock:
            self._webhook_url, self._webhook_secret = url, secret

    def webhook_target(self) -> tuple[str | None, str | None]:
        with self._lock:
            return self._webhook_url, self._webhook_secret

    # -- quotes ----------------------------------------------------------------------------

    def create_quote(
        self, channel: str, amount: Decimal, source_currency: str, source_country: str,
        target_currency: str, target_country: str,
    ) -> Quote:
        if (
            source_country not in rates.CURRENCY_COUNTRIES.get(source_currency, ())
            or (target_currency, target_country) != (banks.TARGET_CURRENCY, banks.TARGET_COUNTRY)
        ):
            raise Refusal(400, "Invalid country or currency ISO code")
        decimals = rates.currency_decimals(source_currency)
        if -amount.as_tuple().exponent > decimals:  # type: ignore[operator]
            raise Refusal(400, f"source.amount has more than {decimals} decimals for {source_currency}")
        price = rates.price(amount, source_currency, target_currency, self.config.seed,
                            rounding=self.config.rounding,
                            moved=self.drift.next(source_currency, target_currency))
        if price.target_amount < banks.TARGET_MINIMUM:
            raise Refusal(400, f"Minimum target amount for transaction is {banks.TARGET_MINIMUM}")
        if price.target_amount > banks.TARGET_MAXIMUM:
            raise Refusal(400, f"Maximum target amount for transaction is {banks.TARGET_MAXIMUM}")
        ttl = self.config.quote_ttl
        quote = Quote(
            id=str(uuid.uuid4()),
            paymentChannel=channel,
            source=Side(currency=source_currency, country=source_country, amount=amount),
            target=Side(currency=target_currency, country=target_country,
                        amount=price.target_amount),
            rate=price.rate,
            fee={"amount": price.fee},
            summary={"total": price.total},
            rules=banks.limit_rules(),
            settlementTime=f"Within 24 hours (sandbox: {self.config.settle_seconds:g} seconds)",
            expiresInSeconds=_seconds(ttl),
        )
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO quote (id, created, expires, data) VALUES (?, ?, ?, ?)",
                (quote["id"], now, now + ttl, dumps(quote)),
            )
        return quote

    def read_quote(self, quote_id: str) -> Quote | None:
        with self._lock:
            row = self._db.execute("SELECT expires, data FROM quote WHERE id = ?", (quote_id,)).fetchone()
        if row is None:
            return None
        quote: Quote = loads(row[1])
        quote["expiresInSeconds"] = _seconds(max(0.0, row[0] - time.time()))
        return quote

    # -- payouts ---------------------------------------------------------------------------

    def create_payout(self, request: PayoutRequest) -> Payout:
        """Commit a checked payout request; Refusal for a quote or wallet problem."""
        recipient = request["recipient"]
        now = time.time()
        with self._transaction(now) as db:
            row = db.execute("SELECT expires, used, data FROM quote WHERE id = ?", (request["quoteId"],)).fetchone()
            if row is None or row[1]:
                raise Refusal(422, "Invalid quote ID provided")
            if now > row[0]:
                raise Refusal(400, "Quotes only last for 10 minutes")
            quote: Quote = loads(row[2])
            if (recipient["currency"], recipient["country"]) != (
                quote["target"]["currency"], quote["target"]["country"]
            ):
                raise Refusal(
                    400,
                    f"recipient currency and country must match the quote's target "
                    f"({quote['target']['currency']}, {quote['target']['country']})",
                )
            currency = quote["source"]["currency"]
            total = Decimal(quote["summary"]["total"])
            if self._balance(currency) < total:
                raise Refusal(400, "Insufficient wallet balance for transaction")
            self._add_to_wallet(currency, -total)
            db.execute("UPDATE quote SET used = 1 WHERE id = ?", (request["quoteId"],))
            created = self._last_created = max(now, self._last_created + 1e-6)
            fails = _says_fail(request.get("remark"))
            record = PayoutRecord(
                id=str(uuid.uuid4()),
                referenceNumber="".join(secrets.choice(REFERENCE_ALPHABET) for _ in range(13)),
                type="SEND",
                reason=request.get("reason"),
                remark=request.get("remark"),
                quote=quote,
                recipient=recipient,
                created=iso(created),
            )
            tracked = self._webhook_url is not None
            db.execute(
                "INSERT INTO payout (id, quote_id, created, fails, refund, debit_currency,"
                " debit_amount, webhook_state, webhook_open, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                (record["id"], request["quoteId"], created, int(fails), int(fails), currency,
                 str(total), int(tracked), dumps(record)),
            )
        return self._render(record, created, fails, now)

    def _render(self, record: PayoutRecord, created: float, fails: bool, now: float,
                state: str | None = None) -> Payout:
        """The payout record as the service shows it at `now` (or in a given state)."""
        settle = self.config.settle_seconds
        if state is None:
            state, began = derive_state(now - created, settle, fails)
        else:
            began = _state_began(state, settle)
        return Payout(id=record["id"], referenceNumber=record["referenceNumber"], state=state,
                      type=record["type"], reason=record["reason"], remark=record["remark"],
                      quote=record["quote"], recipient=record["recipient"],
                      created=record["created"], processed=iso(created + began))

    def read_payout(self, payout_id: str) -> Payout | None:
        now = time.time()
        with self._transaction(now) as db:
            row = db.execute("SELECT created, fails, record FROM payout WHERE id = ?", (payout_id,)).fetchone()
        if row is None:
            return None
        return self._render(loads(row[2]), row[0], bool(row[1]), now)

    def list_payouts(self, state: str, page: int, size: int) -> tuple[list[Payout], int]:
        """One page of the payouts listed under `state` (LISTABLE_STATES), in creation order,
        and their count. PENDING lists the payouts still on their way, PROCESSING ones with
        them: the service documents no state to list PROCESSING by, and a payout must be
        in some list from the moment it is made to its last state."""
        now = time.time()
        settle = self.config.settle_seconds
        if state == "PENDING":
            where, params = "created > ?", [now - settle]
        elif state == "COMPLETED":
            where, params = "fails = 0 AND created <= ?", [now - settle]
        elif state == "FAILED":
            where, params = "fails = 1 AND created > ? AND created <= ?", [now - 2 * settle, now - settle]
        elif state == "REFUNDED":
            where, params = "fails = 1 AND created <= ?", [now - 2 * settle]
        else:
            raise ValueError(f"not a listable state: {state}")
        with self._transaction(now) as db:
            total = db.execute(f"SELECT COUNT(*) FROM payout INDEXED BY payout_by_time WHERE {where}", params).fetchone()[0]
            page_seqs = [seq for (seq,) in db.execute(
                f"SELECT seq FROM payout INDEXED BY payout_by_time WHERE {where}"
                " ORDER BY created LIMIT ? OFFSET ?",
                [*params, size, page * size],
            )]
            rows = db.execute(
                f"SELECT created, fails, record FROM payout WHERE seq IN ({','.join('?' * len(page_seqs))})"
                " ORDER BY seq",
                page_seqs,
            ).fetchall()
        return [self._render(loads(record), created, bool(fails), now) for created, fails, record in rows], total

    def inspection_list(self) -> list[AcceptedPayout]:
        """Every payout accepted, in order, in the /_sandbox/payouts shape."""
        now = time.time()
        with self._transaction(now) as db:
            rows = db.execute("SELECT created, fails, record FROM payout ORDER BY seq").fetchall()
        listed = []
        for created, fails, text in rows:
            record: PayoutRecord = loads(text)
            listed.append(AcceptedPayout(
                id=record["id"],
                quoteId=record["quote"]["id"],
                referenceNumber=record["referenceNumber"],
                state=derive_state(now - created, self.config.settle_seconds, bool(fails))[0],
                accountNumber=record["recipient"]["account"]["accountNumber"],
                recipientName=record["recipient"]["name"],
                sourceAmount=record["quote"]["source"]["amount"],
                sourceCurrency=record["quote"]["source"]["currency"],
                targetAmount=record["quote"]["target"]["amount"],
                remark=record["remark"],
                created=record["created"],
            ))
        return listed

    # -- webhooks --------------------------------------------------------------------------

    def due_webhook_events(self) -> list[tuple[str, Payout]]:
        """(state, record in that state) for every state change not yet announced, once each."""
        now = time.time()
        settle = self.config.settle_seconds
        events: list[tuple[str, Payout]] = []
        with self._transaction(now) as db:
            rows = db.execute(
                "SELECT seq, created, fails, webhook_state, record FROM payout WHERE webhook_open = 1"
            ).fetchall()
            for seq, created, fails, announced, text in rows:
                current = derive_state(now - created, settle, bool(fails))[0]
                if current == announced:
                    continue
                path = state_path_of(bool(fails))
                start = path.index(announced) + 1 if announced in path else 0
                record = loads(text)
                for state in path[start: path.index(current) + 1]:
                    events.append((state, self._render(record, created, bool(fails), now, state)))
                db.execute(
                    "UPDATE payout SET webhook_state = ?, webhook_open = ? WHERE seq = ?",
                    (current, int(current != path[-1]), seq),
                )
        return events

    # -- wallets ---------------------------------------------------------------------------

    def wallets(self, currency: str | None) -> list[Wallet]:
        if currency is not None and currency not in rates.UNITS_PER_USD:
            raise Refusal(400, "Invalid country or currency ISO code")
        with self._transaction() as db:
            rows = db.execute("SELECT currency, id, balance FROM wallet ORDER BY currency").fetchall()
        held = {cur: (wallet_id, Decimal(balance)) for cur, wallet_id, balance in rows}
        if currency is not None:
            held = {currency: held.get(currency, (_wallet_id(currency), Decimal(0)))}
        return [
            Wallet(id=wallet_id, balance=balance, currency=cur, country=rates.home_country(cur))
            for cur, (wallet_id, balance) in held.items()
        ]

    def set_wallet(self, currency: str, balance: Decimal) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO wallet (currency, id, balance) VALUES (?, ?, ?)",
                (currency, _wallet_id(currency), str(balance)),
            )

    # -- reset -----------------------------------------------------------------------------

    def reset(self) -> None:
        """Payouts, quotes, counters, windows, dice and wallets back to the start."""
        with self._transaction() as db:
            db.execute("DELETE FROM payout")
            db.execute("DELETE FROM quote")
            db.execute("DELETE FROM wallet")
            self._insert_start_wallets(db)
            self._last_created = 0.0
        self.traffic.reset()
        self.limiter.reset()
        self.dice.reset()


def _says_fail(remark: Any) -> bool:
    """Remark "fail" (the public sandbox convention), also with the `ref:<payout_ref>` that
    batchpay adds after a row's own remark."""
    words = str(remark or "").split()
    if words and words[-1].lower().startswith("ref:"):
        words = words[:-1]
    return " ".join(words).lower() == "fail"


def _state_began(state: str, settle: float) -> float:
    return {"PENDING": 0.0, "PROCESSING": settle / 2, "COMPLETED": settle,
            "FAILED": settle, "REFUNDED": 2 * settle}[state]


def _seconds(value: float) -> Decimal:
    """Seconds as a JSON number: 600 stays 600, 0.3 stays 0.3 (to the millisecond, down)."""
    seconds = Decimal(repr(value)).quantize(Decimal("0.001"), rounding=ROUND_FLOOR).normalize()
    return seconds.quantize(Decimal(1)) if seconds == seconds.to_integral_value() else seconds
