"""What an auditor relies on: `runs`, `report`, `verify` and the Run sheet of a workbook.

`report` renders from the journal the same cells the run wrote; `verify` walks the hash
chain and names the first broken link; the chain head printed in a filed workbook also
reveals events cut from the end; the Run sheet says who ran what, when, where, and how it
ended, with the API key as a fingerprint only.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import platform
import sqlite3
from collections import Counter
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay import __version__
from batchpay.files import fingerprint
from batchpay.sandbox.server import RunningSandbox
from tests.support.e2e import batchpay, results
from tests.support.sheets import HEADERS, row, rows, write_sheet

API_KEY = "sk-audit-7Qm2xV9pL4"


@pytest.fixture
def service(sandbox_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    running: RunningSandbox = sandbox_factory(settle_seconds=0.2, api_key=API_KEY,
                                              state_path=tmp_path / "sandbox.sqlite3")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATCHPAY_BASE_URL", running.url)
    monkeypatch.setenv("BATCHPAY_API_KEY", API_KEY)
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(tmp_path / "journal" / "journal.sqlite3"))
    return running


def journal_file(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "journal.sqlite3"


def mixed_sheet(path: Path) -> Path:
    """Paid rows, a refused quote, an invalid row and a column of the operator's own."""
    sheet_rows = [*rows(3), row(4, amount=100), row(5, account_number="12AB")]
    for n, r in enumerate(sheet_rows):
        r["cost_center"] = f"CC-{n}"
    return write_sheet(path, sheet_rows, headers=[*HEADERS, "cost_center"])


def run_json(*args: str) -> dict[str, Any]:
    result = batchpay("run", *args, "--json", "--skip-invalid", "--wait", "10")
    assert result.exit_code in (0, 1), result
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def cells(path: Path, sheet: str) -> list[tuple[Any, ...]]:
    wb = openpyxl.load_workbook(path)
    try:
        return [tuple(c.value for c in r) for r in wb[sheet].iter_rows()]
    finally:
        wb.close()


def run_sheet(path: Path) -> dict[str, str]:
    return {str(k): str(v) for k, v in cells(path, "Run")[1:]}


# --------------------------------------------------------------------------- runs

def test_runs_lists_every_run_with_its_counts(service: Any, tmp_path: Path) -> None:
    first = run_json(str(mixed_sheet(tmp_path / "nov.xlsx")), "--out", str(tmp_path / "a.xlsx"))
    second = run_json(str(write_sheet(tmp_path / "dec.xlsx", rows(2, start=10))), "--dry-run",
                      "--out", str(tmp_path / "b.xlsx"))
    listed = batchpay("runs", "--json")
    assert listed.exit_code == 0, listed
    got = json.loads(listed.stdout)
    assert [r["run_id"] for r in got] == [first["run_id"], second["run_id"]]
    assert [r["sheet"] for r in got] == ["nov.xlsx", "dec.xlsx"]
    assert [r["kind"] for r in got] == ["run", "dry-run"]
    assert got[0]["counts"] == first["counts"] == {"COMPLETED": 3, "QUOTE_FAILED": 1,
                                                     "INVALID": 1}
    assert got[1]["counts"] == second["counts"]
    for r in got:
        started = datetime.fromisoformat(r["started_at"].replace("Z", "+00:00"))
        finished = datetime.fromisoformat(r["finished_at"].replace("Z", "+00:00"))
        assert started <= finished
    table = batchpay("runs")
    assert table.exit_code == 0, table
    for r in got:  # the table shows the ids whole: they are what --run takes
        assert r["run_id"] in table.stdout, table
        assert r["sheet"] in table.stdout
        assert r["started_at"][:16].replace("T", " ") in table.stdout
    assert "COMPLETED 3" in table.stdout


def test_runs_without_a_journal_says_how_to_get_one(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(tmp_path / "none.sqlite3"))
    result = batchpay("runs")
    assert result.exit_code == 2, result
    assert "No journal" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "none.sqlite3").exists()


# --------------------------------------------------------------------------- report

def test_report_renders_the_same_cells_the_run_wrote(service: Any, tmp_path: Path) -> None:
    written = tmp_path / "nov-results.xlsx"
    first = run_json(str(mixed_sheet(tmp_path / "nov.xlsx")), "--out", str(written))
    later = run_json(str(write_sheet(tmp_path / "dec.xlsx", rows(2, start=20))),
                     "--out", str(tmp_path / "dec-results.xlsx"))
    assert later["run_id"] != first["run_id"]
    again = tmp_path / "report.xlsx"
    result = batchpay("report", "--run", first["run_id"], "--out", str(again))
    assert result.exit_code == 0, result
    for sheet in ("Results", "Summary"):
        assert cells(again, sheet) == cells(written, sheet), sheet
    assert len(cells(again, "Results")) == 6  # every input row, the invalid one too
    assert run_sheet(again)["run id"] == first["run_id"]
    # without --run: the latest run
    latest = tmp_path / "latest.xlsx"
    assert batchpay("report", "--out", str(latest)).exit_code == 0
    assert cells(latest, "Results") == cells(tmp_path / "dec-results.xlsx", "Results")


def test_report_of_a_run_the_journal_does_not_hold(service: Any, tmp_path: Path) -> None:
    run_json(str(write_sheet(tmp_path / "nov.xlsx", rows(1))), "--out", str(tmp_path / "a.xlsx"))
    result = batchpay("report", "--run", "20990101-000000-ffff", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 2, result
    assert "20990101-000000-ffff" in result.stderr and "batchpay runs" in result.stderr
    assert not (tmp_path / "r.xlsx").exists()


# --------------------------------------------------------------------------- verify

def _sql(path: Path, statement: str, *args: Any) -> None:
    db = sqlite3.connect(path)
    try:
        db.execute(statement, args)
        db.commit()
    finally:
        db.close()


def test_verify_passes_untouched_and_names_an_edited_event(service: Any, tmp_path: Path) -> None:
    run_json(str(write_sheet(tmp_path / "nov.xlsx", rows(3))), "--out", str(tmp_path / "a.xlsx"))
    ok = batchpay("verify")
    assert ok.exit_code == 0, ok
    assert "OK" in ok.stdout
    path = journal_file(tmp_path)
    db = sqlite3.connect(path)
    count = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    seq, data = db.execute("SELECT seq, data FROM events WHERE kind = 'payout.accepted' "
                           "ORDER BY seq LIMIT 1").fetchone()
    db.close()
    assert f"{count} events" in ok.stdout
    # someone "corrects" a payout's status in the log
    _sql(path, "UPDATE events SET data = ? WHERE seq = ?",
         data.replace('"PENDING"', '"COMPLETED"').replace('"PROCESSING"', '"COMPLETED"'), seq)
    broken = batchpay("verify")
    assert broken.exit_code == 1, broken
    assert f"event {seq} " in broken.stderr and "changed" in broken.stderr, broken
    assert "Traceback" not in broken.stderr


def test_verify_names_a_deleted_event(service: Any, tmp_path: Path) -> None:
    run_json(str(write_sheet(tmp_path / "nov.xlsx", rows(2))), "--out", str(tmp_path / "a.xlsx"))
    _sql(journal_file(tmp_path), "DELETE FROM events WHERE seq = 3")
    broken = batchpay("verify")
    assert broken.exit_code == 1, broken
    assert "event 3 is missing" in broken.stderr, broken


def test_the_head_in_a_filed_workbook_reveals_a_truncated_chain(service: Any,
                                                                tmp_path: Path) -> None:
    filed = tmp_path / "nov-results.xlsx"
    run_json(str(write_sheet(tmp_path / "nov.xlsx", rows(3))), "--out", str(filed))
    head = run_sheet(filed)["journal chain head"]
    assert len(head) == 64
    assert batchpay("verify", "--head", head).exit_code == 0
    path = journal_file(tmp_path)
    with sqlite3.connect(path) as db:
        last = db.execute("SELECT kind FROM events ORDER BY seq DESC LIMIT 1").fetchall()
    assert last == [("run.finished",)]
    _sql(path, "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")
    # the runs table is checked against the chain: its row still says the run finished
    assert batchpay("verify").exit_code == 1
    # ... so the row is put back as it was before the run finished, as the chain now says
    with sqlite3.connect(path) as db:
        started = json.loads(db.execute("SELECT data FROM events WHERE kind = 'run.started'"
                                        " ORDER BY seq DESC LIMIT 1").fetchone()[0])
    _sql(path, "UPDATE runs SET finished_at = NULL, outcome = NULL, exit_code = NULL, "
         "info = ?", json.dumps(started["info"]))
    # the rest of the chain is still consistent: only the filed head shows what is gone
    assert batchpay("verify").exit_code == 0
    cut = batchpay("verify", "--head", head)
    assert cut.exit_code == 1, cut
    assert "truncated" in cut.stderr, cut


# --------------------------------------------------------------------------- the Run sheet

def test_run_sheet_says_who_what_when_where_and_the_outcome(service: Any,
                                                            tmp_path: Path) -> None:
    sheet = mixed_sheet(tmp_path / "nov.xlsx")
    out = tmp_path / "nov-results.xlsx"
    document = run_json(str(sheet), "--out", str(out), "--concurrency", "3")
    info = run_sheet(out)
    assert info["run id"] == document["run_id"]
    assert info["kind"] == "run"
    assert info["operator"] == getpass.getuser()
    assert info["host"] == platform.node()
    assert info["batchpay version"] == __version__
    assert info["input file"] == "nov.xlsx"
    assert info["input SHA-256"] == hashlib.sha256(sheet.read_bytes()).hexdigest()
    assert info["base URL"] == service.url
    assert info["API key fingerprint"] == fingerprint(API_KEY)
    started = datetime.fromisoformat(info["started (UTC)"].replace("Z", "+00:00"))
    finished = datetime.fromisoformat(info["finished (UTC)"].replace("Z", "+00:00"))
    assert started <= finished and started.utcoffset() is not None
    assert info["setting: concurrency"] == "3" and info["setting: skip_invalid"] == "yes"
    assert info["started (local)"].startswith(f"{started.astimezone():%Y-%m-%d %H:%M:%S} (UTC")
    assert info["outcome"] == "rows need attention"
    paid = [r for r in results(out) if r["status"] == "COMPLETED"]
    total = sum((Decimal(str(r["total_debit"])) for r in paid), Decimal(0))
    assert [k for k in info if k.startswith("total debit")] == ["total debit NGN"]
    assert Decimal(info["total debit NGN"].replace(",", "")) == total
    before = Decimal(info["wallet NGN before"].replace(",", ""))
    after = Decimal(info["wallet NGN after"].replace(",", ""))
    assert before - after == total  # the sandbox debits exactly the quoted totals
    assert Counter(r["status"] for r in results(out)) == Counter(document["counts"])
    assert len(info["journal chain head"]) == 64


def test_the_api_key_is_never_written_anywhere(service: Any, tmp_path: Path) -> None:
    out = tmp_path / "nov-results.xlsx"
    run_json(str(mixed_sheet(tmp_path / "nov.xlsx")), "--out", str(out))
    report = tmp_path / "report.xlsx"
    assert batchpay("report", "--out", str(report)).exit_code == 0
    listed = batchpay("runs", "--json")
    for workbook in (out, report):
        wb = openpyxl.load_workbook(workbook)
        text = " ".join(str(c.value) for ws in wb for r in ws.iter_rows() for c in r)
        wb.close()
        assert API_KEY not in text
        assert fingerprint(API_KEY) in text
    assert API_KEY not in listed.stdout + listed.stderr
    for file in journal_file(tmp_path).parent.iterdir():
        assert API_KEY.encode() not in file.read_bytes(), file
