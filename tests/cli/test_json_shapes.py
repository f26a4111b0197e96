"""The `--json` documents are built by the library: `json_document` beside `json_row`
(sheet/outcomes.py) and `run_list` (engine/render.py) for `runs`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batchpay.engine.render import run_list
from batchpay.journal.store import Journal
from batchpay.sheet.outcomes import json_document, json_row
from tests.support.e2e import batchpay
from tests.support.sheets import rows, write_sheet


def test_the_document_holds_the_rows_and_never_a_payees_bank_details() -> None:
    rows_ = [json_row(row=2, payout_ref="T-1", status="COMPLETED", error="",
                      reference_number="R-1")]
    change = {"payout_ref": "T-1", "reason": "changed",
              "details": {"account_number": "6222000000000000001"}}
    document = json.loads(json_document("run-1", {"COMPLETED": 1}, rows_,
                                        [Path("out.xlsx")], [change]))
    assert document == {"run_id": "run-1", "counts": {"COMPLETED": 1},
                        "rows": [{"row": 2, "payout_ref": "T-1", "status": "COMPLETED",
                                  "error": None, "reference_number": "R-1"}],
                        "outputs": ["out.xlsx"],
                        "payee_changes": [{"payout_ref": "T-1", "reason": "changed"}]}
    assert "6222000000000000001" not in json_document(None, {}, [], [], [change])
    assert "payee_changes" not in json.loads(json_document(None, {}, [], []))  # sync's


def test_run_list_is_what_runs_json_prints(cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.2)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--wait", "10").exit_code == 0
    assert batchpay("run", str(sheet), "--dry-run").exit_code == 0  # already paid: fine
    with Journal.existing(tmp_path / "journal" / "journal.sqlite3") as journal:
        listed = run_list(journal)
    assert [(r["kind"], r["outcome"], r["exit_code"], r["counts"]) for r in listed] == [
        ("run", "ok", 0, {"COMPLETED": 2}), ("dry-run", "ok", 0, {"COMPLETED": 2})]
    assert list(listed[0]) == ["run_id", "kind", "started_at", "finished_at", "sheet",
                               "outcome", "exit_code", "counts", "sent"]
    printed = batchpay("runs", "--json")
    assert printed.exit_code == 0 and json.loads(printed.stdout) == listed
