"""What `batchpay validate` shows on stderr: the counts and the first errors as a table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from batchpay.progress import print_counts

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
