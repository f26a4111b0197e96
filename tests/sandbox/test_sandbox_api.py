"""The sandbox's endpoints over real HTTP: bodies, numbers, refusals, single use, pages."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from batchpay.sandbox.checks import is_valid_resident_id, is_valid_uscc
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.server import RunningSandbox, start_in_thread
from tests.support.sandbox_calls import (
    VALID_RESIDENT_ID,
    api,
    held_payouts,
    new_quote,
    pay,
    payout_request,
    quote_request,
    raw_json,
)
from tests.support.timing import until

START_NGN = 10_000_000_000


@pytest.fixture(scope="module")
def shared() -> Iterator[RunningSandbox]:
    with start_in_thread(SandboxConfig(port=0)) as running:
        yield running


@pytest.fixture
def fresh(shared: RunningSandbox) -> RunningSandbox:
    """The module's one sandbox, reset: for the many small refusal cases."""
    assert httpx.post(f"{shared.url}/_sandbox/reset").status_code == 200
    return shared


def test_bank_list_ng_holds_the_commercial_banks_with_cbn_codes(sandbox: RunningSandbox) -> None:
    answer = api(sandbox).get("/v1/bank", params={"currency": "NGN", "country": "NG"})
    assert answer.status_code == 200
    assert answer.headers["X-Batchpay-Sandbox"] == "1"
    body = answer.json()
    assert (body["message"], body["status"]) == ("Banks retrieved successfully", "success")
    codes = {bank["bankName"]: bank["sortCode"] for bank in body["data"]}
    assert codes["Access Bank"] == "044" and codes["Zenith Bank"] == "057"
    assert codes["Guaranty Trust Bank"] == "058" and codes["Globus Bank"] == "00103"
    assert not any("Heritage" in name for name in codes)
    assert all(bank["branchCode"] is None and bank["country"] is None for bank in body["data"])
    assert all(code.isdigit() for code in codes.values())


def test_bank_list_cn_has_real_names_and_says_the_codes_are_sandbox_values(sandbox: RunningSandbox) -> None:
    body = api(sandbox).get("/v1/bank", params={"currency": "CNY", "country": "CN"}).json()
    names = [bank["bankName"] for bank in body["data"]]
    for name in ("中国工商银行", "中国建设银行", "中国银行", "中国农业银行", "招商银行", "上海浦东发展银行"):
        assert name in names
    assert "sandbox" in body["message"]
    assert all(bank["sortCode"].isdigit() for bank in body["data"])


@pytest.mark.parametrize(
    ("params", "status", "text"),
    [
        ({"currency": "NGN"}, 400, "Missing required parameter: country"),
        ({"country": "NG"}, 400, "Missing required parameter: currency"),
        ({}, 400, "Missing required parameters: country, currency"),
        ({"country": "GH", "currency": "GHS"}, 400, "Bank list not available for the specified country and currency"),
        ({"country": "NG", "currency": "CNY"}, 400, "Bank list not available for the specified country and currency"),
    ],
)
def test_bank_list_errors_are_bare_json_strings(
    fresh: RunningSandbox, params: dict[str, str], status: int, text: str
) -> None:
    answer = api(fresh).get("/v1/bank", params=params)
    assert answer.status_code == status
    assert answer.content == f'"{text}"'.encode()
    assert answer.headers["X-Batchpay-Sandbox"] == "1"


def test_a_missing_or_wrong_key_is_refused_in_both_shapes(sandbox: RunningSandbox) -> None:
    bank = {"currency": "NGN", "country": "NG"}
    assert httpx.get(f"{sandbox.url}/v1/bank", params=bank).content == b'"Invalid API key"'
    wrong = api(sandbox, key="wrong-key")
    assert wrong.get("/v1/bank", params=bank).status_code == 401
    answer = wrong.post("/v1/quote", json=quote_request())
    assert (answer.status_code, answer.json()) == (401, {"message": "Invalid API key", "status": "failed"})
    assert answer.headers["X-Batchpay-Sandbox"] == "1"
    # header names are case-insensitive
    odd_case = httpx.get(f"{sandbox.url}/v1/bank", params=bank, headers={"x-Api-kEY": sandbox.api_key})
    assert odd_case.status_code == 200


def test_quote_fields_are_json_numbers_at_the_documented_rate(sandbox: RunningSandbox) -> None:
    answer = api(sandbox).post("/v1/quote", json=quote_request(100000, "NGN", "NG"))
    assert answer.status_code == 200
    data = raw_json(answer)["data"]
    assert len(data["id"]) == 36 and data["paymentChannel"] == "BANK_TRANSFER"
    assert data["source"] == {"currency": "NGN", "country": "NG", "amount": 100000}
    assert data["target"] == {"currency": "CNY", "country": "CN", "amount": 434.78}
    assert data["rate"] == 230 and data["expiresInSeconds"] == 600
    for number in (data["rate"], data["fee"]["amount"], data["summary"]["total"], data["target"]["amount"]):
        assert isinstance(number, int | float) and not isinstance(number, bool)
    exact = answer.json(parse_float=Decimal)["data"]
    assert exact["summary"]["total"] == 100000 + exact["fee"]["amount"]
    assert exact["fee"]["amount"] == Decimal("1000.00")  # 1 %
    rule = data["rules"][0]
    assert rule["category"] == "LIMIT" and rule["appliedCurrency"] == "CNY"
    assert rule["transaction"] == {"minimum": 10, "maximum": 500000}
    assert isinstance(data["settlementTime"], str)


def test_usd_quotes_multiply_and_the_fee_is_capped(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    small = new_quote(client, 100, "USD", "US")
    assert (small["rate"], small["target"]["amount"], small["fee"]["amount"]) == (7.1, 710.0, 1.0)
    large = client.post("/v1/quote", json=quote_request(60000, "USD", "US")).json(parse_float=Decimal)["data"]
    assert large["target"]["amount"] == Decimal("426000.00")
    assert large["fee"]["amount"] == Decimal("50.00")  # 1 % capped at 50 USD


def test_rates_follow_the_seed(sandbox_factory: Any) -> None:
    rates = []
    for seed in (7, 7, 8):
        running = sandbox_factory(seed=seed)
        rates.append(new_quote(api(running))["rate"])
    assert rates[0] == rates[1] != rates[2]
    assert 220 < rates[0] < 240 and rates[0] != 230


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        (quote_request(2000), "Minimum target amount for transaction is 10"),
        (quote_request(200_000_000), "Maximum target amount for transaction is 500000"),
        (quote_request(100000, "XYZ", "NG"), "Invalid country or currency ISO code"),
        (quote_request(100000, "NGN", "US"), "Invalid country or currency ISO code"),
        ({**quote_request(), "target": {"country": "US", "currency": "USD"}}, "Invalid country or currency ISO code"),
        (quote_request(None), "source.amount cannot be empty"),
        (quote_request("lots"), "source.amount must be a number"),
        (quote_request(-5), "source.amount must be greater than 0"),
        (quote_request(100.123), "source.amount has more than 2 decimals for NGN"),
        ({"paymentChannel": "BANK_TRANSFER", "target": {"country": "CN", "currency": "CNY"}}, "source cannot be empty"),
    ],
)
def test_quote_refusals(fresh: RunningSandbox, request_body: dict[str, Any], message: str) -> None:
    answer = api(fresh).post("/v1/quote", json=request_body)
    assert (answer.status_code, answer.json()) == (400, {"message": message, "status": "failed"})


def test_read_quote_counts_down(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    quote = new_quote(client)
    again = client.get(f"/v1/quote/{quote['id']}").json()["data"]
    assert again["id"] == quote["id"] and again["target"] == quote["target"]
    assert 590 < again["expiresInSeconds"] <= 600
    assert client.get("/v1/quote/no-such-quote").status_code == 404


def test_payout_record_and_wallet_debit(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    quote = new_quote(client)
    body = payout_request(quote["id"], icNumber=VALID_RESIDENT_ID)
    body["remark"] = "March"
    answer = client.post("/v2/payout", json=body)
    assert answer.status_code == 200
    record = raw_json(answer)["data"]
    assert record["state"] == "PENDING" and record["type"] == "SEND"
    assert len(record["referenceNumber"]) == 13
    assert record["referenceNumber"].isalnum() and record["referenceNumber"] == record["referenceNumber"].upper()
    assert record["quote"]["id"] == quote["id"] and record["recipient"] == body["recipient"]
    assert (record["reason"], record["remark"]) == (body["reason"], "March")
    assert record["created"].endswith("Z") and record["processed"].endswith("Z")
    wallet = client.get("/v1/wallet", params={"currency": "NGN"}).json(parse_float=Decimal)["data"]
    assert wallet[0]["balance"] == START_NGN - Decimal(str(quote["summary"]["total"]))
    assert client.get(f"/v1/transaction/{record['id']}").json()["data"]["id"] == record["id"]
    missing = client.get("/v1/transaction/nope")
    assert (missing.status_code, missing.json()) == (404, {"message": "Transaction not found", "status": "failed"})


def test_a_quote_pays_once_even_when_raced(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    body = payout_request(new_quote(client)["id"])
    statuses: list[int] = []

    def send() -> None:
        with api(sandbox) as own:
            statuses.append(own.post("/v2/payout", json=body).status_code)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [422] * 7
    again = client.post("/v2/payout", json=body)
    assert again.json() == {"message": "Invalid quote ID provided", "status": "failed"}
    assert len(held_payouts(sandbox)) == 1
    assert client.post("/v2/payout", json=payout_request("unknown")).status_code == 422


def test_an_expired_quote_is_refused(sandbox_factory: Any) -> None:
    running = sandbox_factory(quote_ttl=0.3)
    client = api(running)
    quote = new_quote(client)
    assert quote["expiresInSeconds"] == 0.3
    assert until(lambda: client.get(f"/v1/quote/{quote['id']}").json()["data"][
        "expiresInSeconds"] == 0)
    answer = client.post("/v2/payout", json=payout_request(quote["id"]))
    assert (answer.status_code, answer.json()["message"]) == (400, "Quotes only last for 10 minutes")
    assert held_payouts(running) == []


def _without(body: dict[str, Any], path: str) -> dict[str, Any]:
    *parents, last = path.split(".")
    node = body
    for name in parents:
        node = node[name]
    del node[last]
    return body


@pytest.mark.parametrize(
    "field",
    ["quoteId", "recipient.name", "recipient.type", "recipient.paymentChannel", "recipient.currency",
     "recipient.country", "recipient.account.accountNumber", "recipient.account.bankName",
     "recipient.companyName", "recipient.companyIdNumber", "recipient", "recipient.account"],
)
def test_required_payout_fields(fresh: RunningSandbox, field: str) -> None:
    client = api(fresh)
    body = _without(payout_request(new_quote(client)["id"]), field)
    answer = client.post("/v2/payout", json=body)
    assert (answer.status_code, answer.json()) == (400, {"message": f"{field} cannot be empty", "status": "failed"})
    assert held_payouts(fresh) == []


@pytest.mark.parametrize(
    ("changes", "message_start"),
    [
        ({"companyIdNumber": "91350100M000100Y44"}, "Invalid company ID number"),
        ({"companyIdNumber": "91350100M00010"}, "Invalid company ID number"),
        ({"icNumber": "110105194912310021"}, "Invalid IC number"),
        ({"icNumber": None}, "recipient.icNumber must be text"),
        ({"type": "PERSON"}, "recipient.type must be BUSINESS or INDIVIDUAL"),
        ({"currency": "USD"}, "recipient currency and country must match the quote's target"),
        ({"account": {"accountNumber": "1234567", "bankName": "中国银行"}}, "Invalid account number"),
        ({"account": {"accountNumber": "6222-0212-3456", "bankName": "中国银行"}}, "Invalid account number"),
        ({"account": {"accountNumber": "62220212345678", "bankName": "中国银行", "sortCode": "12A"}},
         "Invalid Bank Sortcode"),
    ],
)
def test_payout_checks(fresh: RunningSandbox, changes: dict[str, Any], message_start: str) -> None:
    client = api(fresh)
    answer = client.post("/v2/payout", json=payout_request(new_quote(client)["id"], **changes))
    assert answer.status_code == 400
    assert answer.json()["message"].startswith(message_start)
    assert held_payouts(fresh) == []


def test_an_individual_needs_no_company(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    body = _without(_without(payout_request(new_quote(client)["id"], type="INDIVIDUAL"),
                             "recipient.companyName"), "recipient.companyIdNumber")
    assert client.post("/v2/payout", json=body).status_code == 200


def test_check_characters() -> None:
    assert is_valid_uscc("91350100M000100Y43") and is_valid_uscc("914403001922038216")
    assert not is_valid_uscc("914403001922038217") and not is_valid_uscc("91440300192203821O")
    assert is_valid_resident_id("11010519491231002X") and is_valid_resident_id("11010519491231002x")
    assert not is_valid_resident_id("110105194912310020") and not is_valid_resident_id("1101051949123100")


def test_insufficient_wallet_and_setting_a_wallet(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    put = httpx.put(f"{sandbox.url}/_sandbox/wallet", json={"currency": "NGN", "balance": 1000})
    assert put.status_code == 200 and put.headers["X-Batchpay-Sandbox"] == "1"
    wallets = client.get("/v1/wallet", params={"currency": "NGN"}).json()["data"]
    assert [(w["currency"], w["balance"], w["country"]) for w in wallets] == [("NGN", 1000, "NG")]
    answer = client.post("/v2/payout", json=payout_request(new_quote(client)["id"]))
    assert (answer.status_code, answer.json()["message"]) == (400, "Insufficient wallet balance for transaction")
    assert held_payouts(sandbox) == []
    everything = {w["currency"]: w["balance"] for w in client.get("/v1/wallet").json()["data"]}
    assert everything == {"NGN": 1000, "USD": 100_000_000}
    assert client.get("/v1/wallet", params={"currency": "EUR"}).json()["data"][0]["balance"] == 0
    bad = httpx.put(f"{sandbox.url}/_sandbox/wallet", json={"currency": "NGN", "balance": -1})
    assert bad.status_code == 400


def test_list_pages_in_creation_order(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    made = [pay(client, amount=10000 + n)["id"] for n in range(5)]
    pending = {"state": "PENDING"}
    page = client.get("/v1/transaction", params={**pending, "page": 0, "size": 2}).json()
    assert (page["page"], page["size"], page["totalPages"]) == (0, 2, 3)
    listed = []
    for number in range(3):
        listed += [r["id"] for r in client.get("/v1/transaction", params={**pending, "page": number, "size": 2}).json()["data"]]
    assert listed == made
    assert client.get("/v1/transaction", params={**pending, "page": 0, "size": 500}).json()["size"] == 100
    assert client.get("/v1/transaction", params={**pending, "page": 0, "size": 100}).json()["totalPages"] == 1
    assert client.get("/v1/transaction", params={"state": "COMPLETED", "page": 0, "size": 100}).json()["data"] == []
    assert client.get("/v1/transaction", params={"state": "BOGUS", "page": 0, "size": 100}).status_code == 400
    assert client.get("/v1/transaction", params={**pending, "page": -1, "size": 100}).status_code == 400


def test_state_filter_when_everything_settled(sandbox_factory: Any) -> None:
    running = sandbox_factory(settle_seconds=0)
    client = api(running)
    done, failed = pay(client)["id"], pay(client, remark="FAIL")["id"]
    by_state = {
        state: [r["id"] for r in client.get("/v1/transaction", params={"state": state, "page": 0, "size": 100}).json()["data"]]
        for state in ("PENDING", "COMPLETED", "FAILED", "REFUNDED")
    }
    assert by_state == {"PENDING": [], "COMPLETED": [done], "FAILED": [], "REFUNDED": [failed]}


def test_inspection_list_stats_and_reset(sandbox: RunningSandbox) -> None:
    client = api(sandbox)
    record = pay(client, remark="note")
    client.get("/v1/transaction/" + record["id"])
    client.get("/v1/transaction/nope")
    client.get("/v1/bank", params={"country": "NG"})
    held = raw_json(httpx.get(f"{sandbox.url}/_sandbox/payouts"))["data"]
    assert held == [{
        "id": record["id"], "quoteId": record["quote"]["id"], "referenceNumber": record["referenceNumber"],
        "state": "PENDING", "accountNumber": "6222021234567890123", "recipientName": "深圳市华强电子有限公司",
        "sourceAmount": 100000, "sourceCurrency": "NGN", "targetAmount": 434.78, "remark": "note",
        "created": record["created"],
    }]
    stats = httpx.get(f"{sandbox.url}/_sandbox/stats").json()
    assert stats["requests"] == {
        "POST /v1/quote 200": 1, "POST /v2/payout 200": 1, "GET /v1/transaction/{id} 200": 1,
        "GET /v1/transaction/{id} 404": 1, "GET /v1/bank 400": 1,
    }
    assert 1 <= stats["max_requests_in_1s"] <= 5
    assert httpx.post(f"{sandbox.url}/_sandbox/reset").status_code == 200
    assert held_payouts(sandbox) == []
    assert httpx.get(f"{sandbox.url}/_sandbox/stats").json() == {"requests": {}, "max_requests_in_1s": 0}
    assert client.get("/v1/wallet", params={"currency": "NGN"}).json()["data"][0]["balance"] == START_NGN
    assert client.post("/v2/payout", json=payout_request(record["quote"]["id"])).status_code == 422
