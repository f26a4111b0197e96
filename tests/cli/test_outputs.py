"""Nothing is overwritten: an existing output file is refused before anything is sent unless
--overwrite, the input sheet never, sync writes a new workbook, and every workbook is
replaced in one step. Ctrl-C writes the results of what happened so far."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.results import write_results
from batchpay.statuses import SENT as SENT_STATUSES
from tests.support.e2e import batchpay, by_ref, results, sandbox_payouts
from tests.support.processes import journaled_attempts, runner_env, sandbox_process, start_runner
from tests.support.sheets import rows, write_sheet
from tests.support.timing import settled


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def test_run_refuses_an_existing_out_before_paying_and_overwrite_replaces_it(
        service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    out = tmp_path / "results.xlsx"
    out.write_bytes(b"the auditor's copy")
    refused = batchpay("run", str(sheet), "--out", str(out))
    assert refused.exit_code == 2, refused
    assert "results.xlsx already exists" in refused.stderr and "--overwrite" in refused.stderr
    assert out.read_bytes() == b"the auditor's copy"
    assert sandbox_payouts(service.url) == []
    replaced = batchpay("run", str(sheet), "--out", str(out), "--overwrite", "--wait", "5")
    assert replaced.exit_code == 0, replaced
    assert set(by_ref(out)) == {"T-00001", "T-00002"}


@pytest.mark.parametrize("extra", [[], ["--overwrite"]])
def test_the_input_sheet_is_never_written_over(service: Any, tmp_path: Path,
                                               extra: list[str]) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    before = sheet.read_bytes()
    refused = batchpay("run", str(sheet), "--out", str(sheet), *extra)
    assert refused.exit_code == 2, refused
    assert "is the sheet being read" in refused.stderr
    assert sheet.read_bytes() == before
    assert sandbox_payouts(service.url) == []


def test_sync_writes_a_new_workbook_and_never_the_run_results(service: Any,
                                                             tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    first = tmp_path / "nov-results.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "0").exit_code in (0, 1)
    annotated = first.read_bytes()
    settled(service.url)  # the payouts final at the sandbox: the sync finds them COMPLETED
    synced = batchpay("sync", "--json")
    assert synced.exit_code == 0, synced
    written = [Path(p) for p in json.loads(synced.stdout)["outputs"]]
    run_id = json.loads(synced.stdout)["run_id"]
    assert written == [tmp_path / f"nov-synced-{run_id}.xlsx"]
    assert {r["status"] for r in results(written[0])} == {"COMPLETED"}
    assert first.read_bytes() == annotated
    again = json.loads(batchpay("sync", "--json").stdout)["outputs"]
    assert again == [str(tmp_path / f"nov-synced-{run_id}-2.xlsx")]  # the first kept too
    assert written[0].exists()
    refused = batchpay("sync", "--out", str(first))
    assert refused.exit_code == 2 and "--overwrite" in refused.stderr, refused
    assert first.read_bytes() == annotated
    assert batchpay("sync", "--out", str(first), "--overwrite").exit_code == 0


def test_report_and_validate_refuse_an_existing_file(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    assert batchpay("run", str(sheet), "--wait", "2").exit_code == 0
    taken = tmp_path / "taken.xlsx"
    taken.write_bytes(b"keep me")
    for command in (["report", "--out", str(taken)],
                    ["validate", str(sheet), "--no-bank-check", "--report", str(taken)]):
        refused = batchpay(*command)
        assert refused.exit_code == 2 and "--overwrite" in refused.stderr, (command, refused)
        assert taken.read_bytes() == b"keep me"


def test_a_workbook_that_fails_half_way_leaves_the_old_file_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results.xlsx"
    out.write_bytes(b"the old results")
    import batchpay.sheet.results as writer

    def broken(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write_summary_sheet", broken)
    with pytest.raises(OSError):
        write_results(out, input_columns=["payout_ref"],
                      rows=[ResultRow(row=2, inputs=["A-1"], status="COMPLETED")])
    assert out.read_bytes() == b"the old results"
    assert [p.name for p in tmp_path.iterdir()] == ["results.xlsx"]  # no partial file left


@pytest.mark.slow
def test_ctrl_c_writes_the_results_so_far_and_runs_shows_them(tmp_path: Path) -> None:
    count = 40
    sheet_rows = rows(count)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    journal = tmp_path / "journal.sqlite3"
    with sandbox_process("--latency-ms", "50", "--settle-seconds", "0.1") as url:
        env = runner_env(url, journal)
        proc = start_runner("run", str(sheet), "--concurrency", "2", "--wait", "5",
                            env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while journaled_attempts(journal) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 2, (stdout, stderr)
        assert "Interrupted:" in stderr and "results so far:" in stderr, stderr
        listed = json.loads(start_runner("runs", "--json", env=env, cwd=tmp_path)
                            .communicate(timeout=60)[0])
        assert [r["outcome"] for r in listed] == ["interrupted"]
        counts = listed[0]["counts"]
        assert sum(counts.values()) == count
        written = tmp_path / f"nov-results-{listed[0]['run_id']}.xlsx"
        cells = results(written)
        assert Counter(r["status"] for r in cells) == Counter(counts)
        sent = {str(r["account_number"]) for r in cells if r["status"] in SENT_STATUSES}
        paid = {p["accountNumber"] for p in sandbox_payouts(url)}
        assert paid and paid <= sent  # every payout the service has is in the workbook
        assert len(paid) < count  # it was stopped part-way
        # going on pays the rest, each row once
        final = start_runner("run", str(sheet), "--wait", "10", "--out",
                             str(tmp_path / "final.xlsx"), env=env, cwd=tmp_path)
        final.communicate(timeout=120)
        assert final.returncode == 0
        assert Counter(p["accountNumber"] for p in sandbox_payouts(url)) == Counter(
            r["account_number"] for r in sheet_rows)
