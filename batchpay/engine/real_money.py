"""Before the first payout through a real service: what will go, what the wallets hold, a yes.

Per source currency the confirmation shows the rows, their amount, the fees, the total
debit and the wallet's balance. Fees are estimated from one quote per currency, for its
smallest row (an invoice row's source amount from the conversion that quote shows): a fee that is a fixed part plus a share of the amount (capped or not) is
never a larger share of a larger amount, so the estimate errs on the high side. A wallet
the estimate says is short stops the run before any payout (exit 2) unless the operator
chose `--allow-partial`: then the rows that do not fit are refused by the service
("Insufficient wallet balance") and end REJECTED, with nothing paid for them.

A journal that holds no payout request yet is said to be new: from it batchpay cannot
know what an earlier journal (another folder, another file) already paid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import TYPE_CHECKING

from batchpay.engine.sending import Sender, SendJob
from batchpay.errors import UsageError
from batchpay.money import minor_unit
from batchpay.provider.errors import ProviderError

if TYPE_CHECKING:
    from batchpay.provider.client import PayoutClient
    from batchpay.provider.models import Wallet


@dataclass
class CurrencyNeed:
    """What a batch will debit from one wallet, estimated before the first payout."""

    currency: str
    rows: int
    amount: Decimal
    fees: Decimal | None  # None: no quote to estimate them from (see `note`)
    balance: Decimal
    note: str = ""

    @property
    def debit(self) -> Decimal:
        return self.amount + (self.fees or Decimal(0))

    @property
    def shortfall(self) -> Decimal:
        return max(Decimal(0), self.debit - self.balance)

    def line(self) -> str:
        fees = f"{self.fees:,}" if self.fees is not None else f"unknown ({self.note})"
        text = (f"  {self.currency}: {self.rows} row(s), amount {self.amount:,}, fees about "
                f"{fees}, total debit about {self.debit:,}; wallet {self.balance:,}")
        return text + (f" (SHORT by {self.shortfall:,})" if self.shortfall else "")


async def estimate_needs(sender: Sender, jobs: Iterable[SendJob],
                         balances: dict[str, Decimal]) -> list[CurrencyNeed]:
    """One quote per source currency (its smallest row); a 401/403 stops the run (AuthStop)."""
    groups: dict[str, list[SendJob]] = {}
    for job in jobs:
        groups.setdefault(job.row.source_currency, []).append(job)
    needs = []
    for currency, group in sorted(groups.items()):
        # one quote: the smallest fixed amount, else the smallest invoice (found by quotes,
        # which also teaches the conversion that estimates every invoice row's source amount)
        fixed = [job for job in group if job.row.amount is not None]
        # (validation fills exactly one of amount and target_amount: `or 0` never applies)
        probe = (min(fixed, key=lambda job: job.row.amount or Decimal(0)) if fixed
                 else min(group, key=lambda job: job.row.target_amount or Decimal(0)))
        share: Decimal | None = None
        note = ""
        try:
            quote = await sender.quote(probe)
        except ProviderError as exc:
            note = f"quote refused: {exc.message}"
        else:
            share = quote.fee / quote.source_amount
        sources = [sender.estimate_source(job) for job in group]
        amount = sum((a for a in sources if a is not None), Decimal(0))
        fees: Decimal | None = None
        if share is not None:
            step = minor_unit(currency)
            fees = sum(((a * share).quantize(step, rounding=ROUND_UP)
                        for a in sources if a is not None), Decimal(0))
        if None in sources:
            note = note or "invoice rows not quoted yet"
            fees = None
        needs.append(CurrencyNeed(currency, len(group), amount, fees,
                                  balances.get(currency, Decimal(0)), note))
    return needs


@dataclass
class Confirmation:
    """What the operator answered in advance (`--yes`, `--allow-partial`) and how to ask."""

    yes: bool
    interactive: bool
    allow_partial: bool
    note: Callable[[str], None]
    ask: Callable[[str], bool]


def confirm_real_payouts(confirmation: Confirmation, *, base_url: str, rows: int,
                         needs: list[CurrencyNeed], new_journal: str | None,
                         in_doubt: int = 0) -> None:
    """Show what will be paid; refuse a short wallet; ask (or take --yes). Raises UsageError
    when the run must not start: nothing has been sent then."""
    lines = [f"About to pay {rows} row(s) through {base_url} (LIVE, real money):",
             *(need.line() for need in needs)]
    if in_doubt:
        lines.append(f"  and look up {in_doubt} row(s) in doubt from an earlier run first")
    lines.append("  (fees estimated from one quote per currency; the results workbook has "
                 "the exact debits)")
    if new_journal is not None:
        lines.append(f"NEW JOURNAL: {new_journal} holds no earlier payout, so batchpay cannot "
                     "know what was paid before from another folder or journal. If these rows "
                     "may have been paid, stop and point --journal (or BATCHPAY_JOURNAL) at "
                     "that journal.")
    short = [need for need in needs if need.shortfall]
    for line in lines:
        confirmation.note(line)
    if short and not confirmation.allow_partial:
        names = "; ".join(f"the {n.currency} wallet holds {n.balance:,} but the batch needs "
                          f"about {n.debit:,} (short by {n.shortfall:,} {n.currency})"
                          for n in short)
        raise UsageError(f"Not enough money: {names}. Nothing was sent.",
                         hint="Top up the wallet, or pay fewer rows; --allow-partial pays the "
                         "rows that fit and the others end REJECTED.")
    if short:
        confirmation.note("--allow-partial: rows beyond the balance will be refused by the "
                          "service and end REJECTED.")
    if confirmation.yes:
        return
    if not confirmation.interactive:
        raise UsageError(f"About to pay {rows} row(s) through {base_url}, and there is no "
                         "terminal to confirm real payouts: nothing was sent.",
                         hint="Run it in a terminal, or add --yes to confirm in advance.")
    if not confirmation.ask("Pay now?"):
        raise UsageError("Cancelled: nothing was sent.")


def balances_of(wallets: Iterable[Wallet]) -> dict[str, Decimal]:
    return {w.currency: w.balance for w in wallets}


async def wallet_record(client: PayoutClient, currencies: set[str], before: dict[str, Decimal]
                        ) -> dict[str, dict[str, str]]:
    """The wallets of a batch's currencies before (read when the run began, on a real
    service) and after paying, for the Run sheet."""
    if not currencies:
        return {}
    try:
        after = balances_of(await client.wallets())
    except ProviderError:
        return {}  # a figure for the record, not worth failing a paid run for
    record = {"wallet_after": {c: str(after[c]) for c in currencies if c in after}}
    if before:
        record["wallet_before"] = {c: str(before[c]) for c in currencies if c in before}
    return record


@dataclass(frozen=True)
class WalletNeed:
    """A dry run's debit in one currency against its wallet: `short` is the fact (a dry
    run that is short exits 2 and writes no plan), `note` is what the operator reads."""

    currency: str
    need: Decimal
    balance: Decimal

    @property
    def short(self) -> Decimal:
        """How much the wallet lacks (0: it covers the batch)."""
        return max(self.need - self.balance, Decimal(0))

    @property
    def note(self) -> str:
        if self.short:
            return (f"SHORTFALL {self.currency}: the batch needs {self.need:,} and the wallet "
                    f"holds {self.balance:,} (short by {self.short:,})")
        return f"{self.currency}: the batch needs {self.need:,}; the wallet holds {self.balance:,}"


def wallet_needs(need: dict[str, Decimal], balances: dict[str, Decimal]) -> list[WalletNeed]:
    """A dry run's debits per currency against the wallets, in currency order."""
    return [WalletNeed(currency, total, balances.get(currency, Decimal(0)))
            for currency, total in sorted(need.items())]
