"""A CSV's text encoding: read by its byte order mark, else UTF-8, else GB18030, or as
--encoding says; a reading that is not faithful (Big5 read as GB18030) is refused, never
paid with garbled names."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from batchpay.errors import InputError
from batchpay.sheet.read import read_sheet
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sheets import HEADERS, resident_id, rows

TRADITIONAL = ["陳大文", "張偉", "黃志強"]  # 陳大文 in Big5 read as GB18030: 朝\ue610ゅ


def write_csv(path: Path, names: list[str], encoding: str, delimiter: str = ",",
              bank: str | None = None, city: str = "深圳") -> Path:
    sheet_rows = rows(len(names))
    for values, name in zip(sheet_rows, names, strict=True):
        values.update(recipient_type="INDIVIDUAL", recipient_name=name, company_name=None,
                      company_id=None, bank_city=city,
                      bank_name=bank or ("中國銀行" if encoding == "big5" else "中国银行"))
    for n, values in enumerate(sheet_rows, start=1):
        values["ic_number"] = resident_id(n)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=HEADERS, delimiter=delimiter, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(sheet_rows)
    path.write_bytes(text.getvalue().encode(encoding))
    return path


@pytest.mark.parametrize("names", [TRADITIONAL, ["張偉", "黃志強"], ["陳大文"]])
def test_big5_is_refused_unless_named(tmp_path: Path, names: list[str]) -> None:
    path = write_csv(tmp_path / "big5.csv", names, "big5")
    with pytest.raises(InputError) as caught:
        read_sheet(path)
    assert "does not read as GB18030 text" in caught.value.message
    assert "--encoding big5" in (caught.value.hint or "")
    sheet = read_sheet(path, encoding="big5")
    assert sheet.column_values("recipient_name") == names


def test_the_cli_refuses_it_in_one_line_and_names_the_option(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "big5.csv", TRADITIONAL, "big5")
    result = batchpay("validate", str(path), "--no-bank-check")
    assert result.exit_code == 2, result
    assert "Traceback" not in result.stderr and "--encoding big5" in result.stderr
    named = batchpay("validate", str(path), "--no-bank-check", "--encoding", "big5", "--json")
    assert named.exit_code == 0, named


@pytest.mark.slow
def test_a_big5_file_pays_the_names_it_holds(cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    path = write_csv(tmp_path / "big5.csv", TRADITIONAL, "big5")
    refused = batchpay("run", str(path), "--wait", "1", "--out", str(tmp_path / "r1.xlsx"))
    assert refused.exit_code == 2 and sandbox_payouts(service.url) == []
    paid = batchpay("run", str(path), "--encoding", "big5", "--wait", "2",
                    "--out", str(tmp_path / "r2.xlsx"))
    assert paid.exit_code == 0, paid
    assert sorted(p["recipientName"] for p in sandbox_payouts(service.url)) \
        == sorted(TRADITIONAL)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_excel_unicode_text_is_read_by_its_byte_order_mark(tmp_path: Path, encoding: str) -> None:
    """Excel's "Unicode Text": UTF-16 with a byte order mark, separated by tabs."""
    path = tmp_path / "unicode.txt"
    text = write_csv(tmp_path / "x.csv", ["张伟", "王芳"], "utf-8", "\t").read_text("utf-8")
    path.write_bytes((("\ufeff" if encoding == "utf-16-be" else "") + text).encode(encoding))
    assert read_sheet(path).column_values("recipient_name") == ["张伟", "王芳"]
    assert read_sheet(path, encoding="utf-16" if "16" in encoding else "utf-8-sig") \
        .column_values("recipient_name") == ["张伟", "王芳"]


def test_gbk_from_a_chinese_windows_is_still_read(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "gbk.csv", ["张伟", "欧阳娜娜"], "gbk")
    assert read_sheet(path).column_values("recipient_name") == ["张伟", "欧阳娜娜"]


def test_private_use_characters_are_refused_in_any_encoding(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "pua.csv", ["张\ue610伟"], "utf-8")
    with pytest.raises(InputError) as caught:
        read_sheet(path)
    assert "line 2 holds U+E610, a private-use character" in caught.value.message
    assert "--encoding" in (caught.value.hint or "")


@pytest.mark.parametrize(("args", "fragment"), [
    (["--encoding", "klingon"], "--encoding klingon is not an encoding"),
    (["--encoding", "big5", "WORKBOOK"], "is a workbook"),
])
def test_encoding_mistakes_are_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    from tests.support.sheets import write_sheet

    workbook = write_sheet(tmp_path / "nov.xlsx", rows(1))
    target = str(workbook) if "WORKBOOK" in args else str(write_csv(tmp_path / "a.csv",
                                                                     ["张伟"], "utf-8"))
    options = [a for a in args if a != "WORKBOOK"]
    result = batchpay("validate", target, "--no-bank-check", *options)
    assert result.exit_code == 2, result
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_json_is_unaffected(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "u.csv", ["张伟"], "utf-8")
    result = batchpay("validate", str(path), "--no-bank-check", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["rows"][0]["status"] == "VALID"


# common Taiwanese and Hong Kong names: in Big5 their bytes read as GB18030 to plain Han
# characters (no private use, no kana), but rare ones, outside GB2312: 張偉 as 眎岸
BIG5_NAMES = ["張偉", "劉德華", "許家豪", "謝雅婷", "楊淑惠", "林俊傑", "黃淑貞"]
GARBLED = ["眎岸", "糂紈地", "砛產花", "谅懂碄", "法睶磃", "狶玊城", "独睶璼"]
# the same people as a mainland sheet writes them: GB2312 characters only
MAINLAND_NAMES = ["张伟", "刘德华", "许家豪", "谢雅婷", "杨淑惠", "林俊杰", "黄淑贞"]


def big5_file(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "taipei.csv", BIG5_NAMES, "big5", bank="Bank of Taiwan",
                     city="Taipei")


def test_big5_names_that_gb18030_reads_as_rare_characters_are_shown_both_ways(
        tmp_path: Path) -> None:
    path = big5_file(tmp_path)
    assert path.read_bytes().decode("gb18030").count("眎岸") == 1  # what was paid before
    with pytest.raises(InputError) as caught:
        read_sheet(path)
    message = caught.value.message
    assert "reads as Big5 and as GB18030 text" in message
    assert "張偉 (big5) or 眎岸 (gb18030), 劉德華 (big5) or 糂紈地 (gb18030), " \
           "許家豪 (big5) or 砛產花 (gb18030)" in message
    assert "--encoding big5" in (caught.value.hint or "")
    assert "--encoding gb18030" in (caught.value.hint or "")
    assert read_sheet(path, encoding="big5").column_values("recipient_name") == BIG5_NAMES
    # told so, the other reading is the operator's choice
    assert read_sheet(path, encoding="gb18030").column_values("recipient_name") == GARBLED


@pytest.mark.parametrize("bank", ["Bank of China", "中国银行"])
@pytest.mark.parametrize("encoding", ["gbk", "gb18030"])
def test_a_mainland_file_of_ordinary_names_reads_without_options(
        tmp_path: Path, encoding: str, bank: str) -> None:
    path = write_csv(tmp_path / "beijing.csv", MAINLAND_NAMES, encoding, bank=bank)
    sheet = read_sheet(path)
    assert sheet.column_values("recipient_name") == MAINLAND_NAMES
    assert sheet.column_values("bank_name") == [bank] * len(MAINLAND_NAMES)


def test_a_mainland_name_outside_gb2312_that_reads_as_big5_too_asks_which(
        tmp_path: Path) -> None:
    path = write_csv(tmp_path / "rare.csv", ["张伟", "朱镕基"], "gbk")
    with pytest.raises(InputError) as caught:
        read_sheet(path)
    assert "朱镕基 (gb18030)" in caught.value.message
    assert read_sheet(path, encoding="gbk").column_values("recipient_name") == ["张伟", "朱镕基"]


def test_the_cli_shows_both_readings_in_one_message(tmp_path: Path) -> None:
    result = batchpay("validate", str(big5_file(tmp_path)), "--no-bank-check")
    assert result.exit_code == 2, result
    assert "Traceback" not in result.stderr
    assert "張偉 (big5) or 眎岸 (gb18030)" in result.stderr and "--encoding big5" in result.stderr
    named = batchpay("validate", str(big5_file(tmp_path)), "--no-bank-check",
                     "--encoding", "big5", "--json")
    assert named.exit_code == 0, named
    assert [r["status"] for r in json.loads(named.stdout)["rows"]] == ["VALID"] * 7


def test_big5_names_are_paid_only_as_the_operator_names_the_encoding(
        cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    path = big5_file(tmp_path)
    refused = batchpay("run", str(path), "--wait", "0", "--out", str(tmp_path / "r1.xlsx"))
    assert refused.exit_code == 2, refused
    assert sandbox_payouts(service.url) == []  # not paid garbled
    plan = batchpay("run", str(path), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert plan.exit_code == 2 and "眎岸 (gb18030)" in plan.stderr
    paid = batchpay("run", str(path), "--encoding", "big5", "--wait", "0",
                    "--out", str(tmp_path / "r2.xlsx"))
    assert paid.exit_code == 0, paid
    assert sorted(p["recipientName"] for p in sandbox_payouts(service.url)) == sorted(BIG5_NAMES)
