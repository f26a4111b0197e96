"""What the operator sees on stderr: banners, a progress bar, notes, the summary tables, and
`validate`'s counts and first errors.

stdout is kept for `--json`. Colour follows NO_COLOR and the terminal; `--quiet` keeps
only errors.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from batchpay.statuses import Status, coloured

STATUS_STYLE = coloured({"done": "green", "not paid": "red", "look again": "yellow",
                         "under way": "cyan"})


def styled(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def stderr_console(quiet: bool = False) -> Console:
    # markup off: text from a sheet or the service (an account "6222[/x]") is shown as is;
    # what batchpay styles, it styles with Text objects
    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), quiet=quiet,
                   markup=False,
                   highlight=False)


def stdout_console() -> Console:
    # piped or redirected there is no width to fit: never fold an id or a name
    return Console(soft_wrap=True, width=None if sys.stdout.isatty() else 1000, markup=False,
                   no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def print_table(columns: Iterable[str], rows: Iterable[Iterable[str]],
                console: Console | None = None, title: str | None = None,
                keep_whole: Iterable[str] = ()) -> None:
    """A table (on stdout unless a console is given); `keep_whole` columns never wrap."""
    table = Table(title=title, title_justify="left")
    whole = set(keep_whole)
    for column in columns:
        table.add_column(column, no_wrap=column in whole, overflow="fold")
    for row in rows:
        table.add_row(*row)
    (console or stdout_console()).print(table)


def print_payee_changes(console: Console, changes: Sequence[Mapping[str, Any]],
                        limit: int = 20) -> None:
    """The payee register's findings as a table: all but payees paid for the first time, which
    are counted (the Payee changes sheet lists them too)."""
    items = [c for c in changes if not (c["reason"] == "new" and c["decision"] != Status.HELD)]
    new = sum(1 for c in changes if c["reason"] == "new") - sum(
        1 for c in items if c["reason"] == "new")
    if new:
        console.print(f"{new} row(s) pay a payee never paid before.")
    if not items:
        return
    print_table(("row", "payee", "finding", "changed", "decision"),
                ([str(c["row"]), c["payee"], c["reason"],
                  "; ".join(f"{n} {b} → {a}" for n, b, a in c.get("fields") or [])
                  or c.get("confirmed_by", ""), c["decision"]] for c in items[:limit]),
                console, title="Payees", keep_whole=("row", "payee"))
    if len(items) > limit:
        console.print(f"... and {len(items) - limit} more: see the Payee changes sheet.")


class RateColumn(ProgressColumn):
    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} rows/s")


class RichReporter:
    """Progress on stderr: rows done, rate and ETA."""

    def __init__(self, quiet: bool = False) -> None:
        self.console = stderr_console(quiet)
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: Any = None

    def banner(self, text: str) -> None:
        self.console.print(Text(text, style="bold yellow"))

    def note(self, text: str) -> None:
        # never folded by us: a path or a message must stay whole to be copied
        self.console.print(text, soft_wrap=True)

    def start(self, label: str, total: int) -> None:
        if self.quiet or total == 0:
            return
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(), TimeRemainingColumn(), console=self.console, transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(label, total=total)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def done(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def confirm(self, text: str) -> bool:
        from rich.prompt import Confirm

        return Confirm.ask(text, console=self.console, default=False)


def print_counts(console: Console, counts: dict[str, int], title: str | None = None) -> None:
    if title:
        console.print(Text.assemble((title, "bold"), f": {sum(counts.values())} row(s)"))
    table = Table()
    table.add_column("status")
    table.add_column("rows", justify="right")
    for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(styled(status), str(n))
    console.print(table)


def print_money(console: Console, summary: Any, *, dry_run: bool = False) -> None:
    """Per source currency: what was sent and debited (a dry run: what was quoted). Every
    money column is over the same rows; the rows left out are counted apart ("left out":
    held, invalid, and the others not sent or not quoted). Figures are never cut short."""
    lines = []
    for currency, totals in sorted(summary.currencies.items()):
        money = totals.quoted if dry_run else totals.sent
        held = totals.by_status[Status.HELD].rows if Status.HELD in totals.by_status else 0
        others = totals.not_sent.rows - held - (money.rows if dry_run else 0)
        if not currency or not (totals.sent.rows or totals.not_sent.rows):
            continue
        left = ", ".join(f"{n} {what}" for n, what in (
            (others, "not quoted" if dry_run else "not sent"), (held, "held"),
            (totals.invalid.rows, "invalid")) if n) or "0"
        target = ", ".join(f"{v:,} {k}" for k, v in sorted(money.target.items()))
        lines.append([currency, str(money.rows), f"{money.amount:,}", f"{money.fee:,}",
                      f"{money.total_debit:,}", target, left])
    if not lines:
        return
    table = Table()
    for i, name in enumerate(("currency", "quoted" if dry_run else "sent", "amount", "fees",
                              "debit incl. fees", "recipients get", "left out")):
        table.add_column(name, justify="left" if i == 0 else "right",
                         min_width=max(len(line[i]) for line in lines))
    for line in lines:
        table.add_row(*line)
    console.print(table)
    for currency, totals in sorted(summary.currencies.items()):
        money = totals.quoted if dry_run else totals.sent
        for target, asked in sorted(money.asked.items()):
            console.print(
                f"Invoices from {currency}: {money.invoices}, asked {asked:,} {target}, "
                f"{'quoted' if dry_run else 'delivered'} "
                f"{money.delivered.get(target, 0):,} (+{money.overpaid.get(target, 0):,}), "
                f"debit {money.invoice_debit:,} {currency}")
    for problem in summary.problems:
        console.print(Text(f"Control totals do not reconcile: {problem}", style="red"))


def print_problems(console: Console, rows: Iterable[tuple[Any, str, str]], limit: int = 20,
                   title: str = "Rows to look at") -> None:
    items = list(rows)
    if not items:
        return
    table = Table(title=title, title_justify="left")
    table.add_column("row", justify="right")
    table.add_column("status")
    table.add_column("message", overflow="fold")
    for row, status, message in items[:limit]:
        table.add_row(str(row), styled(status), message)
    console.print(table)
    if len(items) > limit:
        console.print(f"... and {len(items) - limit} more: see the results workbook.")


def is_interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


# --- validate ------------------------------------------------------------------------

FIRST_ERRORS = 20


def print_validation(console: Console, outcome: Any, limit: int = FIRST_ERRORS) -> None:
    """Counts per status, then up to `limit` errors (row, column, message), then warnings."""
    validation, sheet = outcome.validation, outcome.sheet
    console.print(f"{sheet.path.name}, sheet {sheet.sheet_name}: {len(validation.rows)} rows")
    print_counts(console, validation.counts)
    problems = [(check.row, *_split(message)) for check in validation.rows
                for message in check.errors]
    if problems:
        _print_table(console, "Errors (nothing was sent)", problems, limit, "red")
    notes = [(check.row, *_split(message)) for check in validation.rows
             for message in check.warnings]
    if notes:
        _print_table(console, "Warnings (the rows stay VALID)", notes, limit, "yellow")
    if outcome.report is not None:
        console.print(f"Report: {outcome.report}")
    elif problems:
        console.print("Write every row's messages beside your data with --report PATH.xlsx.")


def _split(message: str) -> tuple[str, str]:
    column, _, text = message.partition(": ")
    return (column, text) if text else ("", message)


def _print_table(console: Console, title: str, items: list[tuple[int, str, str]], limit: int,
                 style: str) -> None:
    table = Table(title=title, title_justify="left", title_style=style)
    table.add_column("row", justify="right")
    table.add_column("column")
    table.add_column("message", overflow="fold")
    for row, column, message in items[:limit]:
        table.add_row(str(row), column, message)
    console.print(table)
    if len(items) > limit:
        console.print(f"... and {len(items) - limit} more.")


def print_statement(statement: Any, console: Console | None = None) -> None:
    """`batchpay statement`: per source currency, the totals an auditor reconciles."""
    console = console or stderr_console()
    console.print(f"Statement {statement.period}: {len(statement.lines)} payout_ref(s), "
                  f"{len(statement.refunds)} refund(s)")
    table = Table()
    for name in ("currency", "payouts", "debited", "refunded", "net debit", "fees",
                 "delivered", "in doubt", "wallet before", "wallet after"):
        table.add_column(name, justify="left" if name == "currency" else "right")
    for currency, t in statement.totals.items():
        table.add_row(currency, str(t.payouts), f"{t.debited:,}", f"{t.refunded:,}",
                      f"{t.net_debit:,}", f"{t.fees:,}",
                      ", ".join(f"{v:,} {k}" for k, v in sorted(t.delivered.items())),
                      str(t.in_doubt),
                      "" if t.wallet_before is None else f"{t.wallet_before:,}",
                      "" if t.wallet_after is None else f"{t.wallet_after:,}")
    if table.row_count:
        console.print(table)
    console.print(f"Journal chain head {statement.chain_head} ({statement.events} events)")
