"""Row validation: one actionable message per row and column, warnings, the payout body."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchpay.errors import InputError, UsageError
from batchpay.money import EXPONENTS
from batchpay.sheet.columns import COLUMN_NAMES
from batchpay.sheet.read import Sheet, SheetRow
from batchpay.sheet.validate import Validation, validate_sheet

GOOD_BUSINESS = {
    "payout_ref": "INV-1", "recipient_type": "business", "recipient_name": "深圳市华强电子有限公司",
    "company_name": "深圳市华强电子有限公司", "company_id": "91350100M000100Y43",
    "account_number": "6222 0212-3456 7890 123", "bank_name": "中国工商银行",
    "bank_city": "深圳", "amount": "250000.50", "source_currency": "ngn", "reason": "Goods",
}
GOOD_PERSON = {
    "payout_ref": "PAY/2024/7", "recipient_type": "INDIVIDUAL", "recipient_name": "张三",
    "ic_number": "11010519491231002X", "account_number": "6222021234567890",
    "bank_name": "中国银行", "amount": Decimal("1000"), "source_currency": "USD", "reason": "Salary",
}


def sheet_of(*rows: dict[str, Any], columns: list[str] | None = None,
             errors: dict[int, dict[str, str]] | None = None) -> Sheet:
    names = columns or list(COLUMN_NAMES) + ["notes"]
    read = [SheetRow(i + 2, [row.get(n) for n in names], dict((errors or {}).get(i, {})))
            for i, row in enumerate(rows)]
    return Sheet(Path("p.xlsx"), "Payouts", names, names, read, "0" * 64)


def only(validation: Validation, index: int = 0) -> list[str]:
    return validation.rows[index].errors


def test_good_rows_are_valid_with_normalized_values() -> None:
    result = validate_sheet(sheet_of(GOOD_BUSINESS, GOOD_PERSON))
    assert result.counts == {"VALID": 2}
    business, person = (r.payout for r in result.rows)
    assert business is not None and person is not None
    assert business.recipient_type == "BUSINESS"
    assert business.account_number == "6222021234567890123"
    assert business.amount == Decimal("250000.50") and business.source_currency == "NGN"
    assert (business.currency, business.country, business.payment_channel) == (
        "CNY", "CN", "BANK_TRANSFER")
    assert person.amount == Decimal("1000.00")
    assert str(person.amount) == "1000.00"


def test_a_plain_payee_email_is_valid_and_kept() -> None:
    result = validate_sheet(sheet_of({**GOOD_BUSINESS, "payee_email": "li.wei+ap@mail.qq.com"}))
    assert result.counts == {"VALID": 1}
    assert result.rows[0].payout is not None
    assert result.rows[0].payout.payee_email == "li.wei+ap@mail.qq.com"


def test_payout_body_follows_the_api_fields_and_omits_empty_ones() -> None:
    # payee_email is batchpay's own (where the remittance advice goes): never sent
    result = validate_sheet(sheet_of({**GOOD_BUSINESS, "payee_email": "ap@huaqiang.cn"},
                                     GOOD_PERSON))
    business, person = (r.payout for r in result.rows)
    assert business is not None and person is not None
    assert business.payout_body("q-1") == {
        "quoteId": "q-1", "reason": "Goods",
        "recipient": {
            "type": "BUSINESS", "name": "深圳市华强电子有限公司",
            "companyName": "深圳市华强电子有限公司", "companyIdNumber": "91350100M000100Y43",
            "currency": "CNY", "country": "CN", "paymentChannel": "BANK_TRANSFER",
            "account": {"accountNumber": "6222021234567890123", "bankName": "中国工商银行",
                        "bankCity": "深圳"},
        },
    }
    body = person.payout_body("q-2")
    assert "companyName" not in body["recipient"] and "remark" not in body
    assert body["recipient"]["icNumber"] == "11010519491231002X"
    assert None not in body["recipient"].values()


@pytest.mark.parametrize(("change", "expected"), [
    ({"company_id": "91350100M000100Y42"},
     "company_id: check character is wrong — expected 3, the code ends in 2"),
    ({"company_id": "91350100M00010"}, "company_id: must be 18 characters"),
    ({"company_id": None}, "company_id: required when recipient_type is BUSINESS"),
    ({"company_name": None}, "company_name: required when recipient_type is BUSINESS"),
    ({"ic_number": "110105194912310021"}, "ic_number: check digit is wrong — expected X"),
    ({"ic_number": "N/A"}, "ic_number: must be 18 characters"),
    ({"account_number": "1234567"}, "account_number: has 7 digits; an account number has 8 to 30"),
    ({"account_number": "6.22202E+18"}, "account_number: 6.22202E+18 is a number the "
                                        "spreadsheet shortened"),
    ({"amount": "100.005"}, "amount: 100.005 has 3 decimals but NGN has 2; batchpay never rounds"),
    ({"amount": "0"}, "amount: must be more than 0"),
    ({"amount": "-10"}, "amount: must be more than 0"),
    ({"amount": "NA"}, "amount: must be a number"),
    ({"source_currency": "NAIRA"}, "source_currency: 'NAIRA' is not an ISO 4217 currency code"),
    ({"source_currency": None}, "source_currency: required (or run the command with "
                                "--source-currency)"),
    ({"recipient_type": "Company"}, "recipient_type: must be BUSINESS or INDIVIDUAL"),
    ({"payout_ref": "INV 1"}, "payout_ref: must be 1–64 letters, digits or . _ - /"),
    ({"recipient_name": "名" * 141}, "recipient_name: is 141 characters long; at most 140"),
    ({"reason": None}, "reason: required"),
    ({"sort_code": "10-21"}, "sort_code: must be digits only"),
    ({"currency": "XYZ"}, "currency: 'XYZ' is not an ISO 4217 currency code"),
    ({"payee_email": "finance.huaqiang.cn"}, "payee_email: 'finance.huaqiang.cn' is not an "
                                             "e-mail address (no @)"),
    ({"payee_email": "Li Wei <li@huaqiang.cn>"}, "payee_email: 'Li Wei <li@huaqiang.cn>' must "
                                                 "be one plain address"),
    ({"payee_email": "a@huaqiang.cn; b@huaqiang.cn"}, "payee_email: 'a@huaqiang.cn; "
                                                      "b@huaqiang.cn' must be one plain address"),
    ({"payee_email": "li@huaqiang"}, "payee_email: 'li@huaqiang' is not an e-mail address a "
                                     "mail server takes"),
])
def test_each_rule_gives_one_actionable_message(change: dict[str, Any], expected: str) -> None:
    result = validate_sheet(sheet_of({**GOOD_BUSINESS, **change}))
    row = result.rows[0]
    assert row.status == "INVALID" and row.payout is None
    assert len(row.errors) == 1, row.errors
    assert row.errors[0].startswith(expected)


def test_several_problems_one_message_per_column_in_column_order() -> None:
    bad = {**GOOD_BUSINESS, "company_id": None, "company_name": None, "amount": "-5",
           "recipient_name": None}
    errors = only(validate_sheet(sheet_of(bad)))
    assert [e.split(":")[0] for e in errors] == ["recipient_name", "company_name", "company_id",
                                                  "amount"]


def test_duplicate_payout_refs_invalidate_every_row_naming_the_others() -> None:
    rows = [GOOD_BUSINESS, {**GOOD_PERSON, "payout_ref": "INV-1"}, GOOD_PERSON,
            {**GOOD_BUSINESS, "account_number": "12345678"}]
    result = validate_sheet(sheet_of(*rows))
    assert [r.status for r in result.rows] == ["INVALID", "INVALID", "VALID", "INVALID"]
    assert only(result, 0) == ["payout_ref: INV-1 is also used in row 3, 5; every payout needs "
                               "its own payout_ref"]
    assert only(result, 1)[0].startswith("payout_ref: INV-1 is also used in row 2, 5;")


def test_same_account_same_amount_is_a_warning_only() -> None:
    twin = {**GOOD_PERSON, "payout_ref": "PAY-8", "account_number": "6222-0212-3456-7890",
            "amount": "1000.00"}
    other_amount = {**GOOD_PERSON, "payout_ref": "PAY-9", "amount": "999"}
    result = validate_sheet(sheet_of(GOOD_PERSON, twin, other_amount))
    assert [r.status for r in result.rows] == ["VALID"] * 3
    assert result.rows[0].warnings == ["account_number: same account and amount as row 3; "
                                       "check this is not a double payment"]
    assert result.rows[1].warnings[0].startswith("account_number: same account and amount as row 2")
    assert result.rows[2].warnings == []


def test_read_errors_are_kept_and_not_repeated() -> None:
    read_error = {"account_number": "cell G2 is a number with 19 digits, ..."}
    result = validate_sheet(sheet_of({**GOOD_BUSINESS, "account_number": 6.2e18},
                                     errors={0: read_error}))
    assert only(result) == ["account_number: cell G2 is a number with 19 digits, ..."]


def test_source_currency_option_fills_blanks_and_refuses_contradictions() -> None:
    blank = {**GOOD_PERSON, "source_currency": None}
    other = {**GOOD_BUSINESS, "source_currency": "USD"}
    result = validate_sheet(sheet_of(blank, other), source_currency="ngn")
    assert result.rows[0].payout is not None
    assert result.rows[0].payout.source_currency == "NGN"
    assert only(result, 1) == ["source_currency: USD in the sheet, but --source-currency NGN was "
                               "given; correct the cell or leave it empty"]
    with pytest.raises(UsageError):
        validate_sheet(sheet_of(blank), source_currency="NAIRA")


def test_missing_required_column_is_refused_with_a_suggestion() -> None:
    columns = [n for n in COLUMN_NAMES if n != "account_number"] + ["account_no"]
    with pytest.raises(InputError) as refused:
        validate_sheet(sheet_of(GOOD_PERSON, columns=columns))
    assert "account_number" in refused.value.message
    assert "rename account_no to account_number" in (refused.value.hint or "")
    no_currency = [n for n in COLUMN_NAMES if n != "source_currency"]
    row = {k: v for k, v in GOOD_PERSON.items() if k != "source_currency"}
    with pytest.raises(InputError):
        validate_sheet(sheet_of(row, columns=no_currency))
    assert validate_sheet(sheet_of(row, columns=no_currency), source_currency="USD").counts == {
        "VALID": 1}


def test_unknown_columns_are_carried_not_checked() -> None:
    result = validate_sheet(sheet_of({**GOOD_PERSON, "notes": "=HYPERLINK(\"x\")"}))
    assert result.rows[0].status == "VALID"
    assert result.rows[0].values[-1] == "=HYPERLINK(\"x\")"


amount_cases = st.tuples(
    st.sampled_from(sorted(EXPONENTS)),
    st.integers(min_value=1, max_value=10**12),
    st.integers(min_value=0, max_value=6),
)


@settings(max_examples=60, deadline=None)
@given(amount_cases, st.booleans())
def test_amounts_are_accepted_exactly_up_to_the_currency_decimals(
        case: tuple[str, int, int], as_number: bool) -> None:
    currency, units, scale = case
    amount = Decimal(units).scaleb(-scale)  # e.g. 123456 with scale 3 → 123.456
    decimals = max(0, -amount.normalize().as_tuple().exponent)  # type: ignore[operator]
    value: Any = amount if as_number else format(amount, "f")
    result = validate_sheet(sheet_of({**GOOD_PERSON, "amount": value,
                                      "source_currency": currency.lower()}))
    row = result.rows[0]
    if decimals <= EXPONENTS[currency]:
        assert row.status == "VALID", row.errors
        assert row.payout is not None
        assert row.payout.amount == amount  # the same number, never rounded
        assert row.payout.amount.as_tuple().exponent == -EXPONENTS[currency]
    else:
        assert row.errors == [
            f"amount: {format(amount, 'f')} has {decimals} decimals but {currency} has "
            f"{EXPONENTS[currency]}; batchpay never rounds, so correct the amount"]
