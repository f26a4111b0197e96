"""What a reconciliation finds, as values: a movement on either side (`Line`), the pairs,
the gaps and their explanations, the whole result (`Reconciliation`).

Apart from the matching (engine.reconcile) and the workbook (engine.reconcile_book) so that
the matching can write its workbook and the workbook read these values without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from batchpay.clock import show
from batchpay.days import Period
from batchpay.engine.books import FEE, PAYOUT, REFUND

OTHER = "other"
KINDS = (PAYOUT, FEE, REFUND)
STATEMENT_COLUMNS = ("date", "type", "amount", "currency", "reference", "payout_id",
                     "description")


@dataclass
class Line:
    """One movement of the wallet, as one side knows it."""

    side: str  # "wallet" | "journal"
    kind: str  # payout | fee | refund | other
    at: str  # UTC text: when it moved
    anchor: str  # UTC text that decides its period (a refund goes with its payout)
    currency: str
    amount: Decimal  # signed: negative leaves the wallet
    payout_id: str = ""
    quote_id: str = ""
    reference: str = ""
    payout_ref: str = ""
    description: str = ""
    state: str = ""

    @property
    def keys(self) -> list[tuple[str, str]]:
        return [(k, self.kind) for k in (self.payout_id, self.quote_id, self.reference) if k]


@dataclass
class Pair:
    wallet: Line
    journal: Line

    @property
    def agrees(self) -> bool:
        return (self.wallet.amount == self.journal.amount
                and self.wallet.currency == self.journal.currency)


@dataclass
class GapLine:
    what: str
    amount: Decimal  # what it adds to movement minus net debit


@dataclass
class Gap:
    """A currency's `movement minus net debit` (statement Totals) and what makes it up."""

    currency: str
    movement: Decimal
    net_debit: Decimal
    lines: list[GapLine] = field(default_factory=list)

    @property
    def gap(self) -> Decimal:
        return self.movement - self.net_debit

    @property
    def unexplained(self) -> Decimal:
        return self.gap - sum((x.amount for x in self.lines), Decimal(0))


@dataclass
class Reconciliation:
    period: Period
    source: str  # where the wallet's side came from
    matched: list[Pair] = field(default_factory=list)
    differ: list[Pair] = field(default_factory=list)  # paired, amounts disagree
    outside: list[Line] = field(default_factory=list)  # in the wallet, not in the journal
    missing: list[Line] = field(default_factory=list)  # in the journal, not in the wallet
    gaps: list[Gap] = field(default_factory=list)
    complete: bool = True  # every page of the list was read
    requests: int = 0
    chain_head: str = ""

    @property
    def exit_code(self) -> int:
        return 0 if self.complete and not (self.differ or self.outside or self.missing) else 1

    def shown(self, at: str) -> str:
        """A wallet or journal time in the period's zone."""
        return show(at, self.period.zone_name, seconds=True)

    def summary_lines(self) -> list[str]:
        said = [f"Reconciliation {self.period.label}, wallet from {self.source}: "
                f"{len(self.matched)} matched, {len(self.outside)} in the wallet only "
                f"(moved outside batchpay), {len(self.missing)} in the journal only, "
                f"{len(self.differ)} with amounts that differ."]
        said += [f"  Outside batchpay: {x.kind} {x.amount:,} {x.currency} on {self.shown(x.at)} "
                 f"reference {x.reference or '(none)'} payout {x.payout_id or '(none)'}"
                 + (f": {x.description}" if x.description else "") for x in self.outside]
        said += [f"  Not in the wallet: {x.kind} {x.amount:,} {x.currency} of {x.payout_ref} "
                 f"reference {x.reference or '(none)'}" for x in self.missing]
        for gap in self.gaps:
            said.append(f"  {gap.currency}: movement minus net debit {gap.gap:,}, "
                        f"unexplained {gap.unexplained:,}")
        if not self.complete:
            said.append("The service's list was cut short by the page cap (sync_max_pages): "
                        "movements beyond it could not be matched.")
        return said
