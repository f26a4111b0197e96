"""`--json` for schedulers: stdout is exactly one JSON document; everything else goes to stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import Outcome, batchpay, sandbox_payouts
from tests.support.sheets import row, rows, write_sheet

ROW_KEYS = {"row", "payout_ref", "status", "error", "reference_number"}
DOCUMENT_KEYS = {"run_id", "counts", "rows", "outputs"}


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.2)


def only_json(result: Outcome) -> Any:
    """stdout parses as ONE document and holds nothing else (json.loads refuses trailing text)."""
    assert result.stdout.strip(), result
    document = json.loads(result.stdout)
    assert result.stdout.lstrip()[0] in "[{", result
    return document


def check_document(document: Any, expect_rows: int) -> None:
    # validate, run and rerun also say what the payee register found
    assert DOCUMENT_KEYS <= set(document) <= DOCUMENT_KEYS | {"payee_changes"}
    assert isinstance(document.get("payee_changes", []), list)
    assert isinstance(document["counts"], dict)
    assert all(isinstance(n, int) for n in document["counts"].values())
    assert sum(document["counts"].values()) == expect_rows
    assert len(document["rows"]) == expect_rows
    for r in document["rows"]:
        assert set(r) == ROW_KEYS, r
        assert isinstance(r["row"], int) and isinstance(r["status"], str)
    assert all(isinstance(p, str) for p in document["outputs"])


def test_validate_json(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, account_number="12AB")])
    report = tmp_path / "check.xlsx"
    result = batchpay("validate", str(sheet), "--json", "--report", str(report))
    assert result.exit_code == 1, result
    document = only_json(result)
    check_document(document, 3)
    assert document["run_id"] is None
    assert document["counts"] == {"VALID": 2, "INVALID": 1}
    assert [r["payout_ref"] for r in document["rows"]] == ["T-00001", "T-00002", "T-00003"]
    assert document["rows"][2]["error"].startswith("account_number")
    assert document["rows"][0]["error"] is None  # as in run and sync: null, not ""
    assert document["outputs"] == [str(report)]
    assert "VALID" in result.stderr  # the table went to stderr


def test_run_json_and_dry_run_json(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3) + [row(4, bank_name="中国工商")])
    out = tmp_path / "out.xlsx"
    dry = batchpay("run", str(sheet), "--dry-run", "--json", "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 0, dry
    check_document(only_json(dry), 4)
    assert only_json(dry)["counts"] == {"NOT_SENT": 4}

    result = batchpay("run", str(sheet), "--json", "--out", str(out), "--wait", "10")
    assert result.exit_code == 0, result
    document = only_json(result)
    check_document(document, 4)
    assert document["counts"] == {"COMPLETED": 4}
    assert document["outputs"] == [str(out)]
    paid = {p["referenceNumber"] for p in sandbox_payouts(service.url)}
    assert {r["reference_number"] for r in document["rows"]} == paid
    assert [r["payout_ref"] for r in document["rows"]] == [f"T-0000{n}" for n in range(1, 5)]
    assert all(r["error"] is None for r in document["rows"])
    # banners, notes and progress stay on stderr
    assert "SANDBOX" in result.stderr and "Results:" not in result.stdout
    assert "1 row(s) name a bank" in result.stderr


def test_run_json_when_rows_are_invalid(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, company_id="X")])
    result = batchpay("run", str(sheet), "--json", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 1, result
    document = only_json(result)
    check_document(document, 3)
    assert document["counts"] == {"NOT_SENT": 2, "INVALID": 1}
    assert sandbox_payouts(service.url) == []


def test_sync_json(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    first = batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"), "--wait", "0")
    assert first.exit_code in (0, 1), first
    out = tmp_path / "synced.xlsx"
    result = batchpay("sync", "--json", "--out", str(out))
    assert result.exit_code in (0, 1), result
    document = only_json(result)
    check_document(document, 3)
    assert document["run_id"] and document["outputs"] == [str(out)]
    assert [r["payout_ref"] for r in document["rows"]] == ["T-00001", "T-00002", "T-00003"]
    assert "Tracked" in result.stderr


def test_runs_json_is_a_list(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    ran = batchpay("run", str(sheet), "--json", "--out", str(tmp_path / "r.xlsx"), "--wait", "5")
    run_id = json.loads(ran.stdout)["run_id"]
    result = batchpay("runs", "--json")
    assert result.exit_code == 0, result
    document = only_json(result)
    assert isinstance(document, list) and len(document) == 1
    assert document[0]["run_id"] == run_id
    assert document[0]["counts"] == {"COMPLETED": 2}


def test_json_with_an_error_leaves_stdout_empty(service: Any, tmp_path: Path) -> None:
    for args in (["validate", "missing.xlsx", "--json"], ["run", "missing.xlsx", "--json"],
                 ["sync", "--json", "--journal", str(tmp_path / "none.sqlite3")]):
        result = batchpay(*args)
        assert result.exit_code == 2, result
        assert result.stdout == "", result
        assert result.stderr.startswith("Error: ")


def test_banks_json_is_the_list(service: Any) -> None:
    result = batchpay("banks", "--country", "CN", "--currency", "CNY", "--json")
    assert result.exit_code == 0, result
    document = only_json(result)
    assert isinstance(document, list) and {"bankName", "sortCode"} <= set(document[0])
