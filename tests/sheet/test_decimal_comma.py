"""CSV amounts are never read by guessing the decimal separator: in a `;` or tab file a comma
or a point before three digits is refused, `--decimal-comma` reads European amounts, and
amounts from a CSV are numbers in the results workbook, as from xlsx."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import HEADERS, row


def write_csv(path: Path, rows: list[dict[str, Any]], delimiter: str = ";") -> Path:
    """A CSV as a European Excel saves it: the given amounts as typed, no quotes."""
    lines = [delimiter.join(HEADERS)]
    for values in rows:
        cells = ["" if values.get(h) is None else str(values[h]) for h in HEADERS]
        if delimiter == ",":
            cells = [f'"{c}"' if "," in c else c for c in cells]
        lines.append(delimiter.join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


@pytest.mark.parametrize("typed", ["12,500", "50.000", "1.250.000,00", "1250000,00"])
def test_an_ambiguous_amount_in_a_semicolon_csv_is_invalid_and_nothing_is_paid(
        service: Any, tmp_path: Path, typed: str) -> None:
    sheet = write_csv(tmp_path / "nov.csv", [row(1, amount=typed), row(2)])
    outcome = batchpay("run", str(sheet), "--wait", "1", "--out", str(tmp_path / "o.xlsx"))
    assert outcome.exit_code == 1, outcome
    cell = by_ref(tmp_path / "o.xlsx")["T-00001"]
    assert cell["status"] == "INVALID"
    assert "ambiguous" in cell["error"] and "--decimal-comma" in cell["error"], cell["error"]
    assert sandbox_payouts(service.url) == []


def test_decimal_comma_reads_european_amounts_exactly(service: Any, tmp_path: Path) -> None:
    sheet = write_csv(tmp_path / "nov.csv", [
        row(1, amount="1.250.000,00"),
        row(2, amount="12,5", source_currency="USD"),
        row(3, amount="250000"),
    ])
    outcome = batchpay("run", str(sheet), "--decimal-comma", "--wait", "5",
                       "--out", str(tmp_path / "o.xlsx"))
    assert outcome.exit_code == 0, outcome
    paid = {p["accountNumber"]: Decimal(str(p["sourceAmount"]))
            for p in sandbox_payouts(service.url)}
    assert paid == {row(1)["account_number"]: Decimal("1250000.00"),
                    row(2)["account_number"]: Decimal("12.50"),
                    row(3)["account_number"]: Decimal("250000")}


def test_with_decimal_comma_a_decimal_point_is_refused(service: Any, tmp_path: Path) -> None:
    sheet = write_csv(tmp_path / "nov.csv", [row(1, amount="12.5", source_currency="USD")])
    outcome = batchpay("validate", str(sheet), "--decimal-comma", "--no-bank-check", "--json")
    assert outcome.exit_code == 1, outcome
    assert "--decimal-comma reads a comma as the decimal separator" in outcome.stdout


def test_a_comma_csv_keeps_grouped_amounts_and_names_the_option_for_a_decimal_comma(
        service: Any, tmp_path: Path) -> None:
    sheet = write_csv(tmp_path / "nov.csv", [row(1, amount="1,250,000.50"),
                                             row(2, amount="1250000,00")], delimiter=",")
    outcome = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    assert outcome.exit_code == 1, outcome
    assert '"VALID"' in outcome.stdout  # row 1: thousands separators in a comma file
    assert "run with --decimal-comma" in outcome.stdout  # row 2


def test_a_tab_separated_file_is_read(service: Any, tmp_path: Path) -> None:
    sheet = write_csv(tmp_path / "nov.txt", [row(1, amount="100000.50"), row(2)], "\t")
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "o.xlsx"))
    assert outcome.exit_code == 0, outcome
    assert len(sandbox_payouts(service.url)) == 2


def test_amounts_from_a_csv_are_numbers_in_the_results(service: Any, tmp_path: Path) -> None:
    sheet = write_csv(tmp_path / "nov.csv", [row(1, amount="100000.50"),
                                             row(2, amount="1500", source_currency="USD")],
                      delimiter=",")
    out = tmp_path / "o.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(out))
    assert outcome.exit_code == 0, outcome
    sheet_cells = openpyxl.load_workbook(out)["Results"]
    header = [c.value for c in sheet_cells[1]]
    amounts = [r[header.index("amount")] for r in sheet_cells.iter_rows(min_row=2)]
    assert [c.value for c in amounts] == [100000.5, 1500]
    assert all(c.data_type == "n" for c in amounts)
    assert [c.number_format for c in amounts] == ["#,##0.00", "#,##0.00"]


def summary_lines(path: Path) -> list[tuple[Any, ...]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [tuple(r) for r in wb["Summary"].iter_rows(values_only=True) if any(r)]
    finally:
        wb.close()


def test_the_summary_counts_invalid_rows_under_their_currency_and_says_the_readme_formula(
        service: Any, tmp_path: Path) -> None:
    from batchpay.sheet.outcomes import CONTROL_TOTALS

    sheet = write_csv(tmp_path / "nov.csv", [
        row(1, amount="100000.50"), row(2, amount="2500.25", bank_name=None),
        row(3, amount="70,5", source_currency="USD"), row(4, amount="12.345")], delimiter=";")
    out = tmp_path / "o.xlsx"
    outcome = batchpay("run", str(sheet), "--skip-invalid", "--wait", "5", "--out", str(out))
    assert outcome.exit_code == 1, outcome
    lines = summary_lines(out)
    heading = next(i for i, r in enumerate(lines) if r[0] == "Control totals")
    assert lines[heading + 1] == (CONTROL_TOTALS,) + (None,) * (len(lines[heading + 1]) - 1)
    invalid = {(r[0], r[1]): r for r in lines if r[1] == "INVALID"}
    # row 2 and row 4 (3 decimals) under NGN with the amounts that could be read; row 3's
    # ambiguous amount cannot be read, so it counts with no amount under USD
    assert invalid[("NGN", "INVALID")][2:4] == (2, 2500.25 + 12.345)
    assert invalid[("USD", "INVALID")][2:4] == (1, 0)
    assert not any(r[0] == "(none)" for r in lines)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert CONTROL_TOTALS in " ".join(readme.replace("`", "").split())
