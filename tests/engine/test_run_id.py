"""A caller that must know its run before the run starts (the console, which follows its
payment by it) gives the run's id; the run pays under that id, and the console's page
finds that run, not another run of the same bytes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from batchpay.connect import open_service
from batchpay.display import RichReporter
from batchpay.engine.runner import RunOptions, load_input, new_run_id, run_batch
from batchpay.journal.records import RunRecord
from batchpay.journal.store import Journal
from batchpay.settings.load import load_settings
from batchpay.settings.model import Settings
from tests.support.e2e import sandbox_payouts
from tests.support.sheets import rows, write_sheet


def test_a_run_given_its_id_pays_under_it(cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.2)
    settings = load_settings()
    run_id = new_run_id()
    options = RunOptions(sheet=write_sheet(tmp_path / "nov.xlsx", rows(2)), yes=True,
                         interactive=False, run_id=run_id)
    outcome = run_batch(settings, options, RichReporter(quiet=True),
                        lambda: load_input(options, settings), lambda: open_service(settings))
    assert outcome.run_id == run_id
    with Journal(settings.journal) as journal:
        assert [r.id for r in journal.runs()] == [run_id]
    assert len(sandbox_payouts(service.url)) == 2


def test_the_console_follows_the_run_it_started_not_a_later_one_of_the_same_bytes(
        tmp_path: Path) -> None:
    from batchpay.console.payment import run_of

    path = tmp_path / "journal.sqlite3"
    with Journal(path) as journal:
        for run_id in ("mine", "another console's"):
            journal.start_run(RunRecord(run_id, "run", "2026-11-26T00:00:00Z", "nov.xlsx",
                                        "a" * 64, ["payout_ref"]), [])
    batch = SimpleNamespace(meta={"pay": {"sha256": "a" * 64, "runs_before": [],
                                          "run_id": "mine"}})
    assert run_of(Settings(journal=path), batch) == "mine"  # type: ignore[arg-type]
    batch.meta["pay"]["run_id"] = "refused before it started"  # not in the journal
    assert run_of(Settings(journal=path), batch) == "another console's"  # type: ignore[arg-type]
