"""Decimal <-> JSON numbers, and the typed records parsed from the service's answers."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchpay.provider import jsonnum
from batchpay.provider.models import Payout, PayoutPage, Quote, ShapeError, normalize_state

finite_decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None)
money = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("999999999999.99"), places=2)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | money,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_434_78_is_written_as_that_number() -> None:
    assert jsonnum.dumps({"amount": Decimal("434.78")}) == b'{"amount":434.78}'
    assert jsonnum.dumps([Decimal("100000.00"), Decimal("-0.5")]) == b"[100000.00,-0.5]"


def test_434_78_is_read_as_that_decimal() -> None:
    value = jsonnum.loads(b'{"amount": 434.78}')["amount"]
    assert isinstance(value, Decimal) and value.as_tuple() == Decimal("434.78").as_tuple()


def test_exponents_are_written_as_plain_numbers() -> None:
    assert jsonnum.dumps(Decimal("1E+2")) == b"100"
    assert jsonnum.dumps(Decimal("1E-7")) == b"0.0000001"


@pytest.mark.parametrize("bad", [Decimal("NaN"), Decimal("Infinity"), 0.1, {1: "x"}, object()])
def test_what_json_cannot_carry_exactly_is_refused(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        jsonnum.dumps({"value": bad})


def test_text_keeps_its_script_and_escapes() -> None:
    out = jsonnum.dumps({"name": '上海 "某某" \\ 公司\n'})
    assert out.decode("utf-8") == '{"name":"上海 \\"某某\\" \\\\ 公司\\n"}'
    assert json.loads(out) == {"name": '上海 "某某" \\ 公司\n'}


@given(money)
def test_money_keeps_exactly_its_digits_both_ways(amount: Decimal) -> None:
    written = jsonnum.dumps({"amount": amount})
    assert written == b'{"amount":' + str(amount).encode() + b"}"
    back = jsonnum.loads(written)["amount"]
    assert isinstance(back, Decimal) and back.as_tuple() == amount.as_tuple()


@given(finite_decimals)
def test_any_finite_decimal_round_trips_to_the_same_value(value: Decimal) -> None:
    back = jsonnum.loads(jsonnum.dumps(value))
    assert back == value
    if value.as_tuple().exponent < 0:  # type: ignore[operator]
        assert back.as_tuple() == value.as_tuple()


@given(json_values)
def test_documents_read_back_equal_with_the_standard_parser(document: Any) -> None:
    written = jsonnum.dumps(document)
    assert json.loads(written, parse_float=Decimal) == document
    assert jsonnum.loads(written) == document


# --- records ------------------------------------------------------------------------------

QUOTE: dict[str, Any] = {
    "id": "q-1", "paymentChannel": "BANK_TRANSFER",
    "source": {"currency": "NGN", "country": "NG", "amount": 100000},
    "target": {"currency": "CNY", "country": "CN", "amount": Decimal("434.78")},
    "rate": 230, "fee": {"amount": 1500}, "summary": {"total": 101500},
    "rules": [], "expiresInSeconds": 600,
}


def test_integer_money_becomes_decimal() -> None:
    quote = Quote.from_json(QUOTE)
    for amount in (quote.rate, quote.fee, quote.source_amount, quote.total):
        assert type(amount) is Decimal
    assert (quote.source_currency, quote.target_country) == ("NGN", "CN")


@pytest.mark.parametrize("broken", [
    {**QUOTE, "target": {"currency": "CNY", "country": "CN"}},
    {**QUOTE, "rate": "abc"},
    {**QUOTE, "rate": True},
    {**QUOTE, "summary": None},
    {k: v for k, v in QUOTE.items() if k != "id"},
])
def test_a_quote_without_what_the_client_needs_is_a_shape_error(broken: dict[str, Any]) -> None:
    with pytest.raises(ShapeError):
        Quote.from_json(broken)


@pytest.mark.parametrize(("given_state", "expected"), [
    ("INITIATED", "PENDING"), ("initiated", "PENDING"), ("pending", "PENDING"),
    (" Processing ", "PROCESSING"), ("COMPLETED", "COMPLETED"), ("refunded", "REFUNDED"),
])
def test_states_are_normalized(given_state: str, expected: str) -> None:
    assert normalize_state(given_state) == expected
    payout = Payout.from_json({"id": "p", "state": given_state, "quoteId": "q-9"})
    assert payout.state == expected and payout.quote_id == "q-9"
    assert payout.final == (expected in {"COMPLETED", "FAILED", "REFUNDED"})


def test_a_payout_page_without_paging_fields_is_one_page() -> None:
    page = PayoutPage.from_envelope({"data": [{"id": "p", "state": "PENDING"}]}, page=0, size=100)
    assert (page.page, page.size, page.total_pages, page.last) == (0, 100, 1, True)
    with pytest.raises(ShapeError):
        PayoutPage.from_envelope({"data": {"id": "p"}}, page=0, size=100)
