"""`batchpay sync`: bring a run's rows up to date from the service's payout list.

Rows that are PENDING, PROCESSING, in doubt (UNKNOWN) or FAILED (which may still become
REFUNDED) are found in the list, pages of 100, in one scan: by payout id, or by quote id
for rows whose answer was lost. A row in doubt that the scan proves never received
(engine.doubt: a *complete* scan, begun a read timeout, setting `read_timeout`, after its
quote expired) becomes NOT_SENT; a scan cut short by the page cap (setting
`sync_max_pages`) proves nothing and leaves it UNKNOWN. A service without the list (404)
is read one payout at a time by id: rows in doubt, known by their quote only, stay UNKNOWN.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchpay.engine.budget import shared_budget
from batchpay.engine.doubt import Lookup, never_received
from batchpay.engine.render import find_run, render_run, result_rows
from batchpay.engine.tracking import refresh
from batchpay.files import free_name
from batchpay.journal.integrity import require_intact
from batchpay.journal.records import RunRecord
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.service import Opener
from batchpay.settings.model import Settings
from batchpay.sheet.outcomes import ResultsSummary, json_row
from batchpay.statuses import MAY_CHANGE, exit_code


@dataclass
class SyncOutcome:
    run_id: str
    tracked: int
    changed: int
    never_received: int
    requests: int
    complete: bool
    list_absent: bool  # the service has no payout list: payouts were read by id
    results_path: Path
    summary: ResultsSummary
    rows: list[dict[str, Any]]

    @property
    def exit_code(self) -> int:
        """0 when every row of the run is paid or on its way, else 1 (`statuses.exit_code`)."""
        return exit_code(self.summary.counts)


def sync_run(settings: Settings, run_id: str | None, out: Path | None,
             connect: Opener) -> SyncOutcome:
    """Refresh a run's rows that are not final from the service `connect` opens (once the
    journal is found and checked)."""
    journal = Journal.existing(settings.journal)
    try:
        journal.lock()  # a run paying meanwhile could commit what this sync proves absent
        require_intact(journal)
        run = find_run(journal, run_id)
        with connect() as service:
            journal.bind_service(service.identity)
            tracked, changed, never, requests, complete, absent = asyncio.run(
                _sync(settings, journal, run.id, service.base_url, service.api_key,
                      embedded=service.embedded))
        # noted before rendering: the workbook's "journal chain head" is then the true head
        journal.record_note("sync", {"run": run.id, "tracked": tracked, "changed": changed,
                                     "never_received": never, "requests": requests,
                                     "complete": complete}, run_id=run.id)
        run = find_run(journal, run.id)
        path = out or synced_path(run)
        results = list(result_rows(journal, run))
        summary = render_run(journal, run, path, results)
        rows = [json_row(row=r.row, payout_ref=rr.payout_ref, status=r.status, error=r.error,
                         reference_number=r.reference_number)
                for rr, r in zip(journal.run_rows(run.id), results, strict=True)]
        return SyncOutcome(run.id, tracked, changed, never, requests, complete, absent, path,
                           summary, rows)
    finally:
        journal.close()


def synced_path(run: RunRecord) -> Path:
    """A new workbook beside the run's results: `<sheet>-synced-<run id>.xlsx` (then -2, -3
    ...): the results the operator may have annotated are never written over."""
    results = run.info.get("results")
    folder = Path(results).parent if results else Path.cwd()
    return free_name(folder / f"{Path(run.sheet).stem}-synced-{run.id}.xlsx")


async def _sync(settings: Settings, journal: Journal, run_id: str, base_url: str,
                api_key: str | None, *, embedded: bool = False,
                ) -> tuple[int, int, int, int, bool, bool]:
    refs = [r.payout_ref for r in journal.run_rows(run_id) if r.linked]
    entries = [e for e in journal.entries(refs).values() if e.status in MAY_CHANGE]
    if not entries:
        return 0, 0, 0, 0, True, False
    before = {e.payout_ref: e.status for e in entries}
    shared = shared_budget(settings, api_key, embedded=embedded)  # the key's windows
    async with PayoutClient.from_settings(settings, base_url=base_url, api_key=api_key,
                                          shared=shared) as client:
        lookup = Lookup.beginning(client)
        lookup.found = await refresh(client, journal, entries,
                                     max_pages=settings.sync_max_pages, source="sync")
        requests = client.requests_sent
    never = never_received(journal, before, lookup)
    after = journal.entries(before)
    changed = sum(after[r].status != s for r, s in before.items())
    return (len(entries), changed, len(never), requests, lookup.found.complete,
            lookup.found.list_absent)
