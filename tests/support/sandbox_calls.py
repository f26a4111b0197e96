"""Plain HTTP calls to a running sandbox, shared by the sandbox tests (no batchpay client)."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx

from batchpay.sandbox.server import RunningSandbox
from tests.support.e2e import TLS

VALID_USCC = "91350100M000100Y43"  # a published example; its check character is right
VALID_RESIDENT_ID = "11010519491231002X"  # the example of GB 11643-1999


def api(running: RunningSandbox, key: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=running.url, headers={"X-API-KEY": key or running.api_key}, timeout=10, verify=TLS)


def quote_request(amount: Any = 100000, currency: str = "NGN", country: str = "NG") -> dict[str, Any]:
    return {
        "paymentChannel": "BANK_TRANSFER",
        "source": {"amount": amount, "country": country, "currency": currency},
        "target": {"country": "CN", "currency": "CNY"},
    }


def new_quote(client: httpx.Client, amount: Any = 100000, currency: str = "NGN", country: str = "NG") -> dict[str, Any]:
    answer = client.post("/v1/quote", json=quote_request(amount, currency, country))
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def payout_request(quote_id: str, **recipient_changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "quoteId": quote_id,
        "reason": "Supplier invoice 2024-117",
        "recipient": {
            "name": "深圳市华强电子有限公司",
            "type": "BUSINESS",
            "companyName": "深圳市华强电子有限公司",
            "companyIdNumber": VALID_USCC,
            "paymentChannel": "BANK_TRANSFER",
            "currency": "CNY",
            "country": "CN",
            "account": {"accountNumber": "6222021234567890123", "bankName": "中国工商银行", "bankCity": "深圳"},
        },
    }
    body = copy.deepcopy(body)
    body["recipient"].update(recipient_changes)
    return body


def pay(client: httpx.Client, remark: str | None = None, amount: Any = 100000) -> dict[str, Any]:
    body = payout_request(new_quote(client, amount)["id"])
    if remark is not None:
        body["remark"] = remark
    answer = client.post("/v2/payout", json=body)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def held_payouts(running: RunningSandbox) -> list[dict[str, Any]]:
    """What the sandbox really holds, whatever any client believes."""
    answer = httpx.get(f"{running.url}/_sandbox/payouts", verify=TLS)
    assert answer.status_code == 200
    payouts: list[dict[str, Any]] = answer.json()["data"]
    return payouts


def raw_json(answer: httpx.Response) -> Any:
    """The body parsed with the standard parser: numbers show as int/float, text as str."""
    return json.loads(answer.content)
