"""The books on the Statement page: the period's exports for a ledger and its reconciliation
with the service's list, made by the same library calls as `batchpay export` and `batchpay
reconcile` (the journal's chain checked first, the same refusals), into a folder of the
request's own that is removed once the file is sent.

OFX and Xero's CSV describe one bank account, so they write one file per wallet currency:
a period that moved one currency downloads that file; one that moved several downloads a
zip holding each currency's file, named as the command names them. The reconciliation is
shown on the page (matched, outside batchpay, not in the wallet) and its workbook is
written anew when its link is followed, from the service's list as it is then.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from batchpay.connect import open_service
from batchpay.console.statement import Span
from batchpay.days import Period
from batchpay.engine import (
    FORMATS,
    Reconciliation,
    default_export_path,
    default_reconcile_path,
    export_period,
    reconcile_period,
)
from batchpay.errors import UsageError
from batchpay.settings.model import Settings

# the page's link for each format: its accessible name, in the order the page shows them
EXPORT_LINKS = {"ofx": "OFX", "xero": "Xero CSV", "camt053": "camt.053",
                "kingdee": "Kingdee vouchers", "yonyou": "Yonyou vouchers",
                "journal": "Double-entry CSV"}
assert set(EXPORT_LINKS) == set(FORMATS)

@dataclass(frozen=True)
class Download:
    """A file written for one answer, and the folder to remove once it is sent."""

    path: Path
    folder: Path


@dataclass(frozen=True)
class ReconcileView:
    """What the page shows of a reconciliation: the counts, and the movements outside
    batchpay and not in the wallet, as the command prints them."""

    matched: int
    outside: int
    missing: int
    differ: int
    complete: bool
    lines: list[str]

    @property
    def all_matched(self) -> bool:
        return self.complete and not (self.outside or self.missing or self.differ)


def period_of(span: Span) -> Period:
    """The page's From and To as the commands' period (both are needed)."""
    if span.start is None or span.end is None:
        raise UsageError("Give both From and To (the first and last day of the period).")
    return Period(span.start, span.end, span.zone_name)


def export_file(settings: Settings, span: Span, fmt: str) -> Download:
    """The period in `fmt`, as `batchpay export` writes it for the same period."""
    if fmt not in EXPORT_LINKS:
        raise UsageError(f"No export format {fmt!r}: {', '.join(EXPORT_LINKS)}.")
    period = period_of(span)
    _need_journal(settings)
    with _folder() as folder:
        target = folder / default_export_path(fmt, period)
        done = export_period(settings, period, fmt, target)
        if not done.outputs:
            raise UsageError("No money moved in the period: there is no file to download.")
        if len(done.outputs) == 1:
            return Download(done.outputs[0], folder)
        bundle = target.with_suffix(".zip")
        with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as out:
            for path in done.outputs:
                out.write(path, path.name)
        return Download(bundle, folder)
    raise AssertionError("unreachable")  # pragma: no cover - the block returns or raises


def reconcile(settings: Settings, span: Span) -> tuple[ReconcileView, Download]:
    """Match the wallet's movements (the service's list, read as the command reads it) to
    the journal's, and write the reconciliation workbook."""
    period = period_of(span)
    _need_journal(settings)
    with _folder() as folder:
        out = folder / default_reconcile_path(period)
        done = reconcile_period(settings, period, out, None, lambda: open_service(settings))
        return view(done), Download(out, folder)
    raise AssertionError("unreachable")  # pragma: no cover - the block returns or raises


def view(done: Reconciliation) -> ReconcileView:
    return ReconcileView(matched=len(done.matched), outside=len(done.outside),
                         missing=len(done.missing), differ=len(done.differ),
                         complete=done.complete, lines=done.summary_lines()[1:])


def _need_journal(settings: Settings) -> None:
    if not settings.journal_exists():
        raise UsageError("There is no journal yet: nothing was paid, so there are no books "
                         "to download.")


@contextmanager
def _folder() -> Iterator[Path]:
    """A folder for one answer's files, removed at once when making them fails (else by the
    answer, once sent)."""
    folder = Path(tempfile.mkdtemp(prefix="batchpay-books-"))
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def removed(download: Download) -> Callable[[], None]:
    """What removes a download's folder once its answer is sent."""
    return lambda: shutil.rmtree(download.folder, ignore_errors=True)
